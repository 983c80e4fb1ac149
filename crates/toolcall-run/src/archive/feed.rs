//! Following a shared archive: the calls and results other replicas record, as they commit,
//! for one replica's inspector to show the whole deployment.
//!
//! A [`Feed`] reads `calls` and `results` by row id, a cursor per table. Row ids do not
//! commit in order on PostgreSQL: a sequence hands out ids when rows are inserted, so a
//! transaction holding id 10 may commit after another's id 11 is visible, and a cursor that
//! only moved past 11 would never see 10. So each read starts [`WINDOW`] rows behind the
//! cursor and skips the ids it has already handed out (it remembers those within the
//! window). A row is missed only if more than [`WINDOW`] rows with higher ids committed
//! while it was still in flight: that many inserts in flight at once across the replicas.

use std::collections::BTreeSet;

use super::{Archive, ArchiveError, FeedCall, FeedResult};

/// Rows re-read behind each cursor (see the module doc).
pub const WINDOW: i64 = 64;
/// Rows read per table per [`Feed::poll`]; more wait for the next poll.
pub const BATCH: i64 = 500;
const _: () = assert!(BATCH > WINDOW);

/// One table's cursor: the highest row id handed out, and the ids handed out within
/// [`WINDOW`] below it.
#[derive(Debug, Default)]
struct Cursor {
    at: i64,
    seen: BTreeSet<i64>,
}

impl Cursor {
    fn starting_at(at: i64) -> Self {
        Cursor {
            at: at.max(0),
            seen: BTreeSet::new(),
        }
    }

    /// Where the next read starts (exclusive).
    fn from(&self) -> i64 {
        (self.at - WINDOW).max(0)
    }

    /// Whether row `id` is new; remembers it.
    fn take(&mut self, id: i64) -> bool {
        if id <= self.from() || !self.seen.insert(id) {
            return false;
        }
        self.at = self.at.max(id);
        true
    }

    fn prune(&mut self) {
        let keep_from = self.from();
        self.seen = self.seen.split_off(&(keep_from + 1));
    }
}

/// What one [`Feed::poll`] found: rows not handed out before, in row order per table.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FeedBatch {
    pub calls: Vec<FeedCall>,
    pub results: Vec<FeedResult>,
}

/// The calls and results of an archive that replicas other than `replica` record, read
/// as they commit (see the module doc).
#[derive(Debug)]
pub struct Feed {
    replica: String,
    calls: Cursor,
    results: Cursor,
}

impl Feed {
    /// A feed for the replica named `replica` (its [`super::replica_owner`]) that hands out
    /// rows from the `backlog` newest calls (and results) on.
    pub fn start(archive: &Archive, replica: &str, backlog: i64) -> Result<Self, ArchiveError> {
        let (calls, results) = archive.backend().last_rows()?;
        // The first read starts WINDOW behind the cursor: place it that far ahead of where
        // the backlog begins.
        let skip = backlog.max(0) - WINDOW;
        Ok(Feed {
            replica: replica.to_owned(),
            calls: Cursor::starting_at(calls - skip),
            results: Cursor::starting_at(results - skip),
        })
    }

    /// The rows committed since the last poll (and any committed late within the window).
    pub fn poll(&mut self, archive: &Archive) -> Result<FeedBatch, ArchiveError> {
        let backend = archive.backend();
        let calls = backend.calls_after(self.calls.from(), &self.replica, BATCH)?;
        let results = backend.results_after(self.results.from(), &self.replica, BATCH)?;
        let batch = FeedBatch {
            calls: calls
                .into_iter()
                .filter(|c| self.calls.take(c.row))
                .collect(),
            results: results
                .into_iter()
                .filter(|r| self.results.take(r.row))
                .collect(),
        };
        self.calls.prune();
        self.results.prune();
        Ok(batch)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_hands_each_row_out_once_even_when_rows_arrive_out_of_order() {
        let mut c = Cursor::starting_at(0);
        assert!(c.take(1) && c.take(3));
        assert!(!c.take(3), "handed out twice");
        // Row 2 commits after row 3: it is still inside the window.
        assert_eq!(c.from(), 0);
        assert!(c.take(2));
        for id in 4..=200 {
            assert!(c.take(id));
        }
        c.prune();
        assert_eq!(c.from(), 200 - WINDOW);
        assert!(c.seen.iter().all(|id| *id > c.from()));
        // A row older than the window is not read again.
        assert!(!c.take(10));
        assert!(!c.take(150));
    }
}
