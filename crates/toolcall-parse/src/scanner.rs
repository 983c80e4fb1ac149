//! The one balanced-JSON scanner every format shares.
//!
//! A byte-level state machine that tracks strings (double- and, in value/key position,
//! single-quoted), escapes, `//` and `/* */` comments and bracket depth. It is resumable:
//! `advance` continues from where the previous call stopped, so a region that arrives over
//! many pushes is scanned once in total. Hand-written because no crate offers a resumable
//! "where does this (possibly slightly invalid) JSON value end" over model text: serde_json
//! and jiter need the whole value and reject the repairable forms (comments, single quotes).

/// What the scanner knows after consuming the bytes it was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scan {
    /// The value is not closed yet.
    NeedMore,
    /// The value ends at this offset (exclusive, relative to the region start).
    Done(usize),
    /// The region is not a balanced value (mismatched bracket or too deep).
    Fail(ScanError),
}

/// Why a scan failed. Its message is written only where it is shown: a flood of
/// brackets fails a scan at every opener, and most failures are never reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// More than this many brackets open.
    TooDeep(usize),
    /// A closer that does not match the innermost open bracket, at this region offset.
    Unexpected { byte: u8, at: usize },
}

impl ScanError {
    /// Appends the message to `out` (what `Display` writes, without the formatter: a
    /// flood of call-syntax openers writes one per opener).
    pub(crate) fn push_to(&self, out: &mut String) {
        match self {
            ScanError::TooDeep(max) => {
                out.push_str("nesting deeper than ");
                out.push_str(itoa::Buffer::new().format(*max));
            }
            ScanError::Unexpected { byte, at } => {
                out.push_str("unexpected '");
                out.push(char::from(*byte));
                out.push_str("' at offset ");
                out.push_str(itoa::Buffer::new().format(*at));
            }
        }
    }
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut s = String::with_capacity(40);
        self.push_to(&mut s);
        f.write_str(&s)
    }
}

/// A byte table of `members` (`true` at each of them): the parser's byte classes are looked
/// up a byte at a time on hot paths, where a table costs one load and the compares of a
/// `matches!` several.
pub(crate) const fn byte_set(members: &[u8]) -> [bool; 256] {
    let mut t = [false; 256];
    let mut i = 0;
    while i < members.len() {
        t[members[i] as usize] = true;
        i += 1;
    }
    t
}

/// Bytes [`Scanner::advance`] reads as ordinary outside strings and comments whatever the
/// state (not a quote, `/` or bracket; `'` and a parenthesis may not be), and that a
/// byte read as ordinary leaves in the state it found: a run of them is passed at once.
const RUN: [bool; 256] = {
    let mut t = [true; 256];
    let special = *b"\"'/{[(}])";
    let mut i = 0;
    while i < special.len() {
        t[special[i] as usize] = false;
        i += 1;
    }
    t
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Comment {
    None,
    Line,
    Block,
    BlockStar,
}

#[derive(Debug, Clone)]
pub(crate) struct Scanner {
    /// The brackets open: the byte closing each, and its offset (increasing) from the
    /// region `origin` bytes before this one's (a resumed scan's region starts inside the
    /// failed one's); entries below `floor` are the failed scan's, not this region's.
    stack: Vec<(u8, usize)>,
    /// Stack entries below this index belong to the scan this one resumed.
    floor: usize,
    /// This region's offset in the stack's coordinates.
    origin: usize,
    quote: u8,
    escape: bool,
    comment: Comment,
    slash: bool,
    last_sig: u8,
    pos: usize,
    max_depth: usize,
    parens: bool,
    /// The most brackets this scan had open at once.
    peak: usize,
}

impl Scanner {
    /// A scanner for a region starting with an opening bracket. With `parens`, `(`/`)` also
    /// nest (call syntax).
    pub(crate) fn new(max_depth: usize, parens: bool) -> Self {
        Scanner {
            stack: Vec::new(),
            floor: 0,
            origin: 0,
            quote: 0,
            escape: false,
            comment: Comment::None,
            slash: false,
            last_sig: 0,
            pos: 0,
            max_depth,
            parens,
            peak: 0,
        }
    }

    /// The scanner of a JSON object starting at region offset 0 whose bytes up to `pos`
    /// were a key-value prefix (no bracket) and one whole value, closed at `pos` (without
    /// `parens`): the state a scan from offset 0 has after that value, where another scan
    /// found the value's end (a streamed call list's entry, whose arguments were scanned
    /// by the arguments' own forwarder, is not scanned again).
    pub(crate) fn after_value_in_object(max_depth: usize, pos: usize) -> Self {
        Scanner {
            stack: vec![(b'}', 0)],
            last_sig: b'}',
            pos,
            peak: 1,
            ..Scanner::new(max_depth, false)
        }
    }

    /// This scanner made new again (as [`Scanner::new`] with its bound and `parens`) for
    /// another region, its stack's allocation kept: a walk scanning a region at every copy
    /// of a flood (`Engine::pass_failed_walk`) allocated and freed a stack each time.
    pub(crate) fn restart(&mut self) {
        let mut stack = std::mem::take(&mut self.stack);
        stack.clear();
        *self = Scanner {
            stack,
            ..Scanner::new(self.max_depth, self.parens)
        };
    }

    /// Scans `region[self.pos..]`; `region` must be the same growing region every call.
    pub(crate) fn advance(&mut self, region: &[u8]) -> Scan {
        loop {
            if self.quote != 0 && !self.escape {
                // Inside a string only its quote and `\` matter: jump to the next one
                // (long string arguments are most of a large call's bytes).
                let rest = region.get(self.pos..).unwrap_or(&[]);
                // The few bytes of a streamed push: a plain loop costs less than setting up
                // the vector search.
                let next = if rest.len() < 16 {
                    rest.iter().position(|&c| c == self.quote || c == b'\\')
                } else {
                    memchr::memchr2(self.quote, b'\\', rest)
                };
                match next {
                    Some(i) => self.pos += i,
                    None => {
                        self.pos += rest.len();
                        return Scan::NeedMore;
                    }
                }
            }
            let Some(&b) = region.get(self.pos) else {
                break;
            };
            self.pos += 1;
            if self.quote != 0 {
                if self.escape {
                    self.escape = false;
                } else if b == b'\\' {
                    self.escape = true;
                } else if b == self.quote {
                    self.quote = 0;
                    self.last_sig = b'"';
                }
                continue;
            }
            match self.comment {
                Comment::Line => {
                    if b == b'\n' {
                        self.comment = Comment::None;
                    }
                    continue;
                }
                Comment::Block => {
                    if b == b'*' {
                        self.comment = Comment::BlockStar;
                    }
                    continue;
                }
                Comment::BlockStar => {
                    self.comment = match b {
                        b'/' => Comment::None,
                        b'*' => Comment::BlockStar,
                        _ => Comment::Block,
                    };
                    continue;
                }
                Comment::None => {}
            }
            let slash_before = self.slash;
            if self.slash {
                self.slash = false;
                match b {
                    b'/' => {
                        self.comment = Comment::Line;
                        continue;
                    }
                    b'*' => {
                        self.comment = Comment::Block;
                        continue;
                    }
                    _ => {}
                }
            }
            match b {
                b'"' => self.quote = b'"',
                b'\'' if matches!(self.last_sig, b'{' | b'[' | b',' | b':' | b'(' | b'=') => {
                    self.quote = b'\''
                }
                b'/' => self.slash = true,
                // A failing byte leaves the state as it was before it (only `pos` has
                // moved past it): see `FailedScan`.
                b'{' | b'[' | b'(' if b != b'(' || self.parens => {
                    if self.depth() >= self.max_depth {
                        self.slash = slash_before;
                        return Scan::Fail(ScanError::TooDeep(self.max_depth));
                    }
                    self.push(closer_of(b));
                }
                b'}' | b']' | b')' => {
                    if b == b')' && !self.parens {
                        // A parenthesis is ordinary text inside JSON.
                    } else if self.depth() > 0
                        && self.stack.last().is_some_and(|&(closer, _)| closer == b)
                    {
                        self.stack.pop();
                        if self.depth() == 0 {
                            return Scan::Done(self.pos);
                        }
                    } else {
                        self.slash = slash_before;
                        return Scan::Fail(ScanError::Unexpected {
                            byte: b,
                            at: self.pos - 1,
                        });
                    }
                }
                _ => {
                    // An ordinary byte, and so is each byte of the run after it (a name, a
                    // number, the words between brackets of `f(f(f(…`): passed at once, the
                    // last of them that is no blank kept as `last_sig`. A flood of `name(`
                    // scanned each name byte-by-byte through the match above (~35
                    // instructions a byte).
                    let mut sig = b;
                    while let Some(&c) = region.get(self.pos)
                        && RUN[usize::from(c)]
                    {
                        if !c.is_ascii_whitespace() {
                            sig = c;
                        }
                        self.pos += 1;
                    }
                    // A `(` after the run, in call syntax, opened here as the match above
                    // opens it where it does not fail (after an ordinary byte: no slash
                    // pending), and the run after it passed in turn, and so on. A flood of
                    // words before `(` (`(the(weather(get_weather(…`), scanned from each
                    // registered name's `(`, took two trips through the match a word (~160
                    // instructions, 28 % of `({w}`). (Only in call syntax: the JSON scans
                    // of a 4-byte stream, whose runs are short, cost 1.9 % more with the
                    // check and the run's slice search below.)
                    if self.parens {
                        while region.get(self.pos) == Some(&b'(') && self.depth() < self.max_depth {
                            self.pos += 1;
                            self.push(b')');
                            sig = b'(';
                            let rest = region.get(self.pos..).unwrap_or(&[]);
                            let n = rest
                                .iter()
                                .position(|&c| !RUN[usize::from(c)])
                                .unwrap_or(rest.len());
                            let run = rest.get(..n).unwrap_or(&[]);
                            if let Some(&c) = run.iter().rev().find(|c| !c.is_ascii_whitespace()) {
                                sig = c;
                            }
                            self.pos += n;
                        }
                    }
                    if !sig.is_ascii_whitespace() {
                        self.last_sig = sig;
                    }
                    continue;
                }
            }
            if !b.is_ascii_whitespace() && b != b'/' {
                self.last_sig = b;
            }
        }
        Scan::NeedMore
    }

    /// Opens a bracket closed by `closer`, at the byte just consumed.
    fn push(&mut self, closer: u8) {
        self.stack
            .push((closer, self.origin + self.pos.saturating_sub(1)));
        self.peak = self.peak.max(self.depth());
    }

    /// The most brackets this scan had open at once.
    pub(crate) fn peak_depth(&self) -> usize {
        self.peak
    }

    /// After [`Scan::Fail`]: what a region opened at one of the brackets still open can
    /// resume from (see [`FailedScan`]); `start` is this region's absolute offset.
    #[cfg(test)]
    pub(crate) fn into_failed(self, start: usize) -> FailedScan {
        FailedScan {
            start,
            scanner: self,
            seen: Vec::new(),
            hit: NO_HIT,
            shift: (0, false),
        }
    }

    /// This failed scan kept in `failed` as its most recent ([`FailedScan`]). A streamed `name(`
    /// read over pushes fails in its reader, not in [`Scanner::scan_from`].
    pub(crate) fn fail_into(self, failed: &mut FailedScans, start: usize) {
        failed.keep(start, self, &[]);
    }

    /// A scanner for the region at absolute offset `start`, whose first byte is `open`:
    /// resumed from the kept scan in `failed` that left that bracket open (taken out of
    /// it: the same bytes would be scanned again to the same state), else new.
    pub(crate) fn resume_or_new(
        failed: &mut FailedScans,
        start: usize,
        open: u8,
        max_depth: usize,
        parens: bool,
    ) -> Scanner {
        match failed.resumable(start, open, max_depth, parens) {
            Some((i, k)) if i < failed.slots.len() => {
                let (mut f, _) = failed.slots.swap_remove(i);
                f.resume_in_place(k, start);
                failed.spare_seen(f.seen);
                f.scanner
            }
            _ => Scanner::new(max_depth, parens),
        }
    }

    /// [`Scanner::fail_into`] for a scan that failed after reading `seen` (its region's
    /// first [`Scanner::consumed`] bytes) as a new scan would (a resumed one reads as a
    /// new one would), kept for [`FailedScans::repeats`]; empty `seen`: not kept for it.
    pub(crate) fn fail_into_seen(self, failed: &mut FailedScans, start: usize, seen: &[u8]) {
        failed.keep(start, self, seen);
    }

    /// [`Scanner::resume_or_new`] from the scans kept in `failed`, then
    /// [`Scanner::advance`] over `region`, with the failed scan resumed where it lies: a
    /// scan that fails again is left in `failed` (as its most recent) and only its error
    /// and the bytes it consumed come back (a flood of `name(` resumes and fails at every
    /// opener, and moving the scanner out of the memo and back cost more than its scan);
    /// else the scanner and its verdict. A region no scan resumes at that starts with the
    /// bytes a kept new scan read ([`FailedScans::repeats`]) fails as that scan did,
    /// unread; a new scan that fails is kept with the bytes it read.
    pub(crate) fn scan_from(
        failed: &mut FailedScans,
        start: usize,
        open: u8,
        max_depth: usize,
        parens: bool,
        region: &[u8],
    ) -> Result<(Scanner, Scan), (ScanError, usize)> {
        if let Some((i, k)) = failed.resumable(start, open, max_depth, parens)
            && let Some((f, _)) = failed.slots.get_mut(i)
        {
            f.resume_in_place(k, start);
            return match f.scanner.advance(region) {
                Scan::Fail(e) => {
                    let consumed = f.scanner.consumed();
                    failed.touch(i);
                    Err((e, consumed))
                }
                scan => {
                    let (f, _) = failed.slots.swap_remove(i);
                    failed.spare_seen(f.seen);
                    Ok((f.scanner, scan))
                }
            };
        }
        // A region that starts with the bytes a kept scan read as a new one fails as it
        // did, unread (`FailedScans::repeats`): a flood such as `get_weather({"` opens
        // every other region inside the last one's strings, where no scan can resume, and
        // each such scan read `max_depth` brackets on before failing (~33 k instructions a
        // 14-byte unit at 128 KB, 651x prose).
        if let Some(n) = failed.repeats_at(start, max_depth, parens, region)
            && let Some(e) = region
                .get(n - 1)
                .map(|&b| failing_error(b, n - 1, max_depth))
        {
            return Err((e, n));
        }
        let mut sc = Scanner::new(max_depth, parens);
        sc.stack = std::mem::take(&mut failed.spare_stack);
        match sc.advance(region) {
            Scan::Fail(e) => {
                let consumed = sc.consumed();
                failed.keep(start, sc, region.get(..consumed).unwrap_or(&[]));
                Err((e, consumed))
            }
            scan => Ok((sc, scan)),
        }
    }

    /// Bytes of the region consumed so far (after `Fail`, up to and including the bad byte).
    pub(crate) fn consumed(&self) -> usize {
        self.pos
    }

    /// Current bracket depth.
    pub(crate) fn depth(&self) -> usize {
        self.stack.len().saturating_sub(self.floor)
    }

    /// True while inside a string or comment (used to split argument lists).
    pub(crate) fn in_literal(&self) -> bool {
        self.quote != 0 || self.comment != Comment::None
    }
}

/// The error of a new scan that failed at byte `b`, region offset `at`: a scan fails only
/// at a bracket, too deep at an opening one, unexpected at a closing one.
fn failing_error(b: u8, at: usize, max_depth: usize) -> ScanError {
    match b {
        b'{' | b'[' | b'(' => ScanError::TooDeep(max_depth),
        byte => ScanError::Unexpected { byte, at },
    }
}

fn closer_of(open: u8) -> u8 {
    match open {
        b'{' => b'}',
        b'[' => b']',
        _ => b')',
    }
}

/// A scan that failed (nesting too deep, or a closer that does not match), kept by the
/// engine for the next region: a flood such as `f(f(f(…` or `[[[…` opens a region at every
/// bracket, and each would otherwise rescan up to `max_depth` brackets past its own start
/// before failing in turn.
///
/// From a bracket it opened on, a failed scan saw the same bytes as a scan starting there,
/// in the same state (outside strings and comments, the bracket just opened), with only the
/// brackets below it extra on its stack: neither scan could close or fail before the failing
/// byte (the new scan's stack is a top part of the old one's). So a region starting at a
/// bracket still open at the failure resumes at the failing byte with that top part of the
/// stack, and each byte is scanned a bounded number of times in total.
#[derive(Debug, Clone)]
pub(crate) struct FailedScan {
    /// Absolute offset of the failed region's first byte.
    start: usize,
    /// Its state before the failing byte (`pos` is just past that byte).
    scanner: Scanner,
    /// The bytes a new scan read before it failed (empty: not kept).
    /// A fact about bytes alone: a new scan (same `max_depth` and `parens`) of a region
    /// that starts with them reads the same bytes in the same states and fails the same
    /// way, wherever the region lies. A flood such as `{"{"{"…` opens a region at every
    /// `{`, half of them inside the previous scan's strings (never resumable); each scan
    /// read `4 × max_depth` bytes before failing (~1,120 instructions a two-byte unit at
    /// 128 KB, 152.8x prose), and one compare of those bytes stands for it.
    seen: Vec<u8>,
    /// The absolute offset of the last region found to start with `seen`
    /// ([`FailedScan::starts_region`]; [`NO_HIT`]: none).
    hit: usize,
    /// A distance `d` and whether `seen[d..]` equals `seen[..len - d]` (worked out once for
    /// the distance between the regions of a flood).
    shift: (usize, bool),
}

/// [`FailedScan::hit`] when no region was found to start with `seen`.
const NO_HIT: usize = usize::MAX;

impl FailedScan {
    /// Whether `region`, the input's bytes from absolute offset `start`, starts with
    /// `seen`. Where the last region found to (at `hit`) lies `d` bytes before, less than
    /// `seen`'s length `n`, the overlap is known: `region[..n - d]` is `seen[d..]`, so it
    /// starts with `seen` when that equals `seen[..n - d]` (asked once for a `d`) and its
    /// last `d` bytes are `seen`'s. A flood of `"name(` (`<|content_tool_error|>"computer_use(`)
    /// opens every other region inside the last one's strings, each compared with the
    /// `2 × max_depth` units the kept new scan read (~1,400 instructions a copy, 23 % of
    /// that flood).
    fn starts_region(&mut self, start: usize, region: &[u8]) -> bool {
        let n = self.seen.len();
        let Some(head) = region.get(..n) else {
            return false;
        };
        let same = match start.checked_sub(self.hit).filter(|&d| d > 0 && d < n) {
            Some(d) => {
                if self.shift.0 != d {
                    self.shift = (d, self.seen.get(d..) == self.seen.get(..n - d));
                }
                self.shift.1 && head.get(n - d..) == self.seen.get(n - d..)
            }
            None => head == self.seen.as_slice(),
        };
        if same {
            self.hit = start;
        }
        same
    }

    /// The stack index of the bracket at absolute offset `start` when a region starting
    /// there may resume from this scan.
    fn resumable_at(
        &self,
        start: usize,
        open: u8,
        max_depth: usize,
        parens: bool,
    ) -> Option<usize> {
        let old = &self.scanner;
        // A region past the failing byte first (`pos` is past it, and it lies after every
        // open bracket): the most common answer of the slots a flood keeps.
        let rel = start.checked_sub(self.start)?;
        if old.pos <= rel || old.max_depth != max_depth || old.parens != parens {
            return None;
        }
        let own = old.stack.get(old.floor..)?;
        let want = old.origin + rel;
        // The brackets nearest the floor first: each region opened inside a failed scan
        // resumes at a bracket just above the floor the last one left (a flood opens its
        // regions in order), where the binary search of a `max_depth` stack cost ~50
        // instructions an opener (`get_weather({#}`).
        let near = own.iter().take(NEAR).position(|&(_, at)| at >= want);
        let k = match near {
            Some(k) => (own.get(k).map(|&(_, at)| at) == Some(want)).then_some(k)?,
            None => own.binary_search_by_key(&want, |&(_, at)| at).ok()?,
        };
        (own.get(k).map(|&(closer, _)| closer) == Some(closer_of(open))).then_some(old.floor + k)
    }

    /// The scanner of the region at `start`, the bracket at stack index `k`: the brackets
    /// below it dropped, at the failing byte (to read it again).
    /// The scanner of the region at `start`, the bracket at stack index `k`, where the scan
    /// lies: the brackets below it dropped (or left under a floor), at the failing byte (to
    /// read it again).
    fn resume_in_place(&mut self, k: usize, start: usize) {
        let rel = start - self.start;
        self.start = start;
        let sc = &mut self.scanner;
        // The brackets below `k` are left in place under a floor (a flood of brackets
        // resumes once per bracket: moving the stack down each time cost its depth), and
        // dropped once they are at least half of it, so the stack stays within twice the
        // depth bound.
        if k * 2 >= sc.stack.len() {
            sc.stack.drain(..k);
            sc.floor = 0;
        } else {
            sc.floor = k;
        }
        sc.origin += rel;
        sc.pos = sc.pos - 1 - rel;
    }
}

/// How many brackets above its floor [`FailedScan::resumable_at`] compares one by one
/// before its binary search.
const NEAR: usize = 4;

/// The largest stack [`FailedScans::spare_scanner`] keeps (a scan's stack grows to its
/// depth bound at most, and a deep one is not held for the rest of a parse).
const SPARE_STACK: usize = 256;

/// How many failed scans [`FailedScans`] keeps.
const FAILED_SLOTS: usize = 4;

/// The last few failed scans of one kind (the most recently kept or resumed last), which
/// regions opened inside them resume from, and the bytes each read when it was new
/// ([`FailedScan::seen`], for [`FailedScans::repeats`]).
///
/// One slot was not enough: in a flood such as `get_weather({"0get_weather({"1…` every
/// other opener lies inside the previous scan's string, so it cannot resume from it and
/// starts a new scan that reads `max_depth` brackets on (~2 KB), which replaced the kept
/// one; the next opener, which could have resumed from the scan before, then scanned
/// afresh too (549x prose at 128 KB). With a few kept, each opener resumes from a scan that
/// saw its bracket outside strings, and every byte is scanned a bounded number of times
/// whatever the bytes between the openers. Each kept scan is a fact about bytes alone (see
/// [`FailedScan`]), so which are kept changes only the cost.
#[derive(Debug, Default, Clone)]
pub(crate) struct FailedScans {
    /// The kept scans, in no order, each with when it was last kept or resumed (the
    /// oldest goes first: stamps, not moves, which cost ~85 instructions an opener).
    slots: Vec<(FailedScan, u64)>,
    /// The next stamp.
    clock: u64,
    /// A `seen` buffer of a scan no longer kept, reused for the next new one (a flood of
    /// `name(]` fails a new scan at every opener).
    spare: Vec<u8>,
    /// The stack of a finished scan ([`FailedScans::spare_scanner`]), empty, for the next
    /// new one: a flood of `get_weather(get_weather(x)x` scans a closed inner call at every
    /// copy, whose stack was allocated and freed each time (~200 instructions a copy, 10 %).
    spare_stack: Vec<(u8, usize)>,
    /// The bytes of the last closed bare JSON value abandoned as text with no note (empty:
    /// none), and the depth bound its scan ran under ([`FailedScans::keep_closed`]): beside
    /// the failed scans, not among them, so that a flood of such values, each new, evicts
    /// none of the scans its regions resume from.
    closed: Vec<u8>,
    closed_depth: usize,
}

impl FailedScans {
    /// Keeps `seen`, a closed bare JSON value a new scan under `max_depth` read and its
    /// region abandoned as text with no note for its bytes alone, for
    /// [`FailedScans::repeats`] (in place of the last one kept so).
    pub(crate) fn keep_closed(&mut self, max_depth: usize, seen: &[u8]) {
        self.closed.clear();
        self.closed.extend_from_slice(seen);
        self.closed_depth = max_depth;
    }

    /// The kept scan (slot index) a region at absolute offset `start`, whose first byte is
    /// `open`, resumes from, and the stack index of its bracket there: the most recent
    /// that left that bracket open.
    fn resumable(
        &self,
        start: usize,
        open: u8,
        max_depth: usize,
        parens: bool,
    ) -> Option<(usize, usize)> {
        for (i, (f, _)) in self.slots.iter().enumerate() {
            if let Some(k) = f.resumable_at(start, open, max_depth, parens) {
                return Some((i, k));
            }
        }
        None
    }

    /// Whether no scan is kept (no region resumes from one, none repeats one).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.slots.is_empty() && self.closed.is_empty()
    }

    /// Whether a region at absolute offset `start` would resume from a kept scan.
    pub(crate) fn covers(&self, start: usize, open: u8, max_depth: usize, parens: bool) -> bool {
        self.resumable(start, open, max_depth, parens).is_some()
    }

    /// [`FailedScan::repeats`] for any kept scan's bytes.
    pub(crate) fn repeats(&self, max_depth: usize, parens: bool, region: &[u8]) -> Option<usize> {
        if let Some(n) = self.repeats_closed(max_depth, parens, region) {
            return Some(n);
        }
        self.slots.iter().find_map(|(f, _)| {
            let n = f.seen.len();
            (f.scanner.max_depth == max_depth
                && f.scanner.parens == parens
                && n > 0
                && region.get(..n) == Some(f.seen.as_slice()))
            .then_some(n)
        })
    }

    /// The length of the kept closed value when `region` starts with it (bracket scans only).
    fn repeats_closed(&self, max_depth: usize, parens: bool, region: &[u8]) -> Option<usize> {
        let n = self.closed.len();
        (n > 0
            && !parens
            && self.closed_depth == max_depth
            && region.get(..n) == Some(self.closed.as_slice()))
        .then_some(n)
    }

    /// [`FailedScans::repeats`] for the region at absolute offset `start` (each kept scan's
    /// bytes compared by [`FailedScan::starts_region`]).
    fn repeats_at(
        &mut self,
        start: usize,
        max_depth: usize,
        parens: bool,
        region: &[u8],
    ) -> Option<usize> {
        if let Some(n) = self.repeats_closed(max_depth, parens, region) {
            return Some(n);
        }
        self.slots.iter_mut().find_map(|(f, _)| {
            (f.scanner.max_depth == max_depth
                && f.scanner.parens == parens
                && !f.seen.is_empty()
                && f.starts_region(start, region))
            .then_some(f.seen.len())
        })
    }

    /// Keeps `scanner`, failed in the region at `start` after reading `seen` (empty: not
    /// known to be a new scan's), as the most recent, dropping the oldest past
    /// [`FAILED_SLOTS`].
    fn keep(&mut self, start: usize, scanner: Scanner, seen: &[u8]) {
        self.clock += 1;
        let stamp = self.clock;
        let full = self.slots.len() >= FAILED_SLOTS;
        let oldest = self
            .slots
            .iter_mut()
            .min_by_key(|(_, used)| *used)
            .filter(|_| full);
        match oldest {
            Some((f, used)) => {
                f.start = start;
                f.scanner = scanner;
                f.seen.clear();
                f.seen.extend_from_slice(seen);
                f.hit = NO_HIT;
                f.shift = (0, false);
                *used = stamp;
            }
            None => {
                let mut buf = std::mem::take(&mut self.spare);
                buf.clear();
                buf.extend_from_slice(seen);
                let f = FailedScan {
                    start,
                    scanner,
                    seen: buf,
                    hit: NO_HIT,
                    shift: (0, false),
                };
                self.slots.push((f, stamp));
            }
        }
    }

    /// Marks slot `i` the most recently used.
    fn touch(&mut self, i: usize) {
        self.clock += 1;
        if let Some((_, used)) = self.slots.get_mut(i) {
            *used = self.clock;
        }
    }

    /// Keeps the stack of `scanner`, a scan done with, for the next new scan
    /// ([`Scanner::scan_from`]).
    pub(crate) fn spare_scanner(&mut self, scanner: Scanner) {
        let mut stack = scanner.stack;
        if stack.capacity() > self.spare_stack.capacity() && stack.capacity() <= SPARE_STACK {
            stack.clear();
            self.spare_stack = stack;
        }
    }

    /// Keeps a buffer of a scan no longer kept for the next.
    fn spare_seen(&mut self, seen: Vec<u8>) {
        if seen.capacity() > self.spare.capacity() {
            self.spare = seen;
        }
    }
}

use crate::families::json::{CallsDoc, Decoded};

/// A blank between JSON tokens (`serde_json` takes these four; `is_ascii_whitespace`
/// also takes a form feed).
#[inline]
pub(crate) fn is_json_blank(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

/// How many JSON blanks `bytes` starts with.
#[inline]
pub(crate) fn json_blanks(bytes: &[u8]) -> usize {
    bytes.iter().take_while(|&&b| is_json_blank(b)).count()
}

/// Deepest nesting `serde_json` decodes (its recursion limit refuses a 128th level).
pub(crate) const SERDE_MAX_DEPTH: usize = 127;

/// The JSON value at the start of `region`, decoded in one `serde_json` pass, and the
/// offset where it ends: for valid JSON what a [`Scanner`] run to `Done(n)` and
/// `parse_lenient(&region[..n])` give (the end of a value that opens with a bracket is its
/// closing bracket however either reads it; a value serde decodes has no comment or single
/// quote and nests at most [`SERDE_MAX_DEPTH`] levels, within the scanner's bound), without
/// walking the bytes twice. `None` (not JSON, cut, nested past the scanner's bound) leaves
/// the region to the scanner. A one-shot reader calls it once per region, before its first
/// scan: a region that fails here costs at most one more pass over what the scanner reads.
pub(crate) fn decode_prefix(region: &str, max_depth: usize) -> Option<(usize, serde_json::Value)> {
    if !may_decode(region, max_depth) {
        return None;
    }
    let mut values = serde_json::Deserializer::from_str(region).into_iter::<serde_json::Value>();
    match values.next() {
        Some(Ok(v)) => Some((values.byte_offset(), v)),
        _ => None,
    }
}

/// Whether [`decode_prefix`] tries `serde_json` on `region` at all.
fn may_decode(region: &str, max_depth: usize) -> bool {
    let bytes = region.as_bytes();
    let Some(&open @ (b'{' | b'[')) = bytes.first() else {
        return false;
    };
    if max_depth < SERDE_MAX_DEPTH {
        return false;
    }
    // What may follow the bracket (after blanks) in JSON: a key or `}`, a value or `]`.
    // Anything else fails the decode at once; checked here, a region of broken markup (a
    // flood of `[TOOL_CALLS]`) costs no decode error (an allocation and its position).
    let next = bytes.iter().skip(1).find(|&&b| !is_json_blank(b));
    match (open, next) {
        (_, None) => true,
        (b'{', Some(b)) => matches!(b, b'"' | b'}'),
        (_, Some(b)) => matches!(
            b,
            b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n' | b']'
        ),
    }
}

/// [`decode_prefix`] for a value that is likely a call object or a list of them (the JSON
/// after a call marker): such a value comes back as a [`CallsDoc`], whose call objects
/// are read without building their maps, anything else as the `Value` `decode_prefix`
/// gives; `None` exactly where `decode_prefix` gives `None`. The typed decode reads the
/// same tokens as `Value`'s through the same `serde_json` deserializer and refuses a
/// shape of its own (another key, a key twice, a list entry that is not an object) with
/// a data error, never a syntax or end-of-input one, so a syntax or end-of-input error
/// is `decode_prefix`'s too and a data error is answered by `decode_prefix` itself.
pub(crate) fn decode_calls_prefix(region: &str, max_depth: usize) -> Option<(usize, Decoded)> {
    if !may_decode(region, max_depth) {
        return None;
    }
    if !first_key_is_a_call_key(region) {
        // An envelope, data: the typed decode would stop at its first key.
        return decode_prefix(region, max_depth).map(|(n, v)| (n, Decoded::Value(v)));
    }
    let mut docs = serde_json::Deserializer::from_str(region).into_iter::<CallsDoc>();
    match docs.next()? {
        Ok(doc) => Some((docs.byte_offset(), Decoded::Calls(doc))),
        Err(e) if e.classify() == serde_json::error::Category::Data => {
            decode_prefix(region, max_depth).map(|(n, v)| (n, Decoded::Value(v)))
        }
        Err(_) => None,
    }
}

/// Whether the first object of `region` (`{` or `[{`) opens with a key a call object has
/// (unescaped): only then is the typed decode of [`decode_calls_prefix`] tried.
fn first_key_is_a_call_key(region: &str) -> bool {
    let blank = |b: &u8| is_json_blank(*b);
    let mut rest = region.as_bytes();
    if let Some((b'[', tail)) = rest.split_first() {
        rest = tail;
        while let Some((b, tail)) = rest.split_first()
            && blank(b)
        {
            rest = tail;
        }
    }
    let Some((b'{', mut rest)) = rest.split_first() else {
        return false;
    };
    while let Some((b, tail)) = rest.split_first()
        && blank(b)
    {
        rest = tail;
    }
    let Some((b'"', rest)) = rest.split_first() else {
        return false;
    };
    // One compare by the first byte (the keys start with different letters).
    let key: &[u8] = match rest.first() {
        Some(b'n') => b"name\"",
        Some(b'a') => b"arguments\"",
        Some(b'p') => b"parameters\"",
        Some(b'i') => b"id\"",
        Some(b'c') => b"call_id\"",
        Some(b't') => b"type\"",
        _ => return false,
    };
    rest.starts_with(key)
}

/// Offsets of the top-level `sep` bytes in `s` (outside strings, comments and brackets).
pub(crate) fn split_top_level(s: &str, sep: u8, max_depth: usize) -> Result<Vec<&str>, String> {
    let bytes = s.as_bytes();
    // Wrap in a virtual bracket so the scanner's depth is 1 at top level.
    let mut scanner = Scanner::new(max_depth.saturating_add(1), true);
    scanner.stack.push((0, 0));
    let mut parts = Vec::new();
    let mut from = 0;
    let mut i = 0;
    // The scanner runs over the bytes between candidate separators in one call each (the
    // state matters only at a `sep` byte), then over the `sep` byte alone, whose state
    // before and after decides whether it splits: a per-byte call cost ~70 instructions a
    // byte in pythonic replies.
    loop {
        let next = memchr::memchr(sep, &bytes[i..]).map(|k| i + k);
        let stop = next.unwrap_or(bytes.len());
        // `Done` (the virtual bracket closed by a stray closer) stops a call early: the
        // next call goes on from there, as the per-byte loop did.
        while scanner.pos < stop {
            if let Scan::Fail(e) = scanner.advance(&bytes[..stop]) {
                return Err(e.to_string());
            }
        }
        let Some(at) = next else {
            break;
        };
        let before_literal = scanner.in_literal();
        let before_depth = scanner.depth();
        if let Scan::Fail(e) = scanner.advance(&bytes[..=at]) {
            return Err(e.to_string());
        }
        if !before_literal && before_depth == 1 && !scanner.in_literal() {
            parts.push(s.get(from..at).unwrap_or(""));
            from = at + 1;
        }
        i = at + 1;
    }
    if scanner.depth() != 1 || scanner.in_literal() {
        return Err("unbalanced brackets or unterminated string".into());
    }
    parts.push(s.get(from..).unwrap_or(""));
    Ok(parts)
}

/// The first non-whitespace byte after the opening bracket at `bytes[0]`, with its index;
/// `Err` carries the verdict when there is none (too much whitespace, or not yet seen).
fn first_inside(bytes: &[u8], is_final: bool) -> Result<(usize, u8), Option<bool>> {
    let mut i = 1;
    while let Some(b) = bytes.get(i) {
        if !b.is_ascii_whitespace() {
            return Ok((i, *b));
        }
        i += 1;
        if i > 512 {
            return Err(Some(false));
        }
    }
    Err(if is_final { Some(false) } else { None })
}

/// The bytes of a key written without quotes that [`object_start_plausible`] reads: ASCII
/// letters, digits and `_`. A table: the range tests of `is_ascii_alphanumeric` cost a flood
/// of implausible objects (`{\nword` a copy, words of 1-11 letters) ~11 instructions a
/// letter, a sixth of its cost.
static KEY_BYTES: [bool; 256] =
    byte_set(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_");

/// Whether a region starting with `{` (at `bytes[0]`) can be an object: the first thing
/// inside must be a key, `}` or a comment. `None` means more bytes are needed.
pub(crate) fn object_start_plausible(bytes: &[u8], is_final: bool) -> Option<bool> {
    let (i, b) = match first_inside(bytes, is_final) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    match b {
        b'"' | b'\'' | b'}' | b'/' => Some(true),
        b if b.is_ascii_alphabetic() || b == b'_' => {
            // The key's bytes, at most 64 (a 65th says no).
            let word = bytes
                .get(i..)
                .unwrap_or_default()
                .iter()
                .take(65)
                .take_while(|&&c| KEY_BYTES[usize::from(c)])
                .count();
            if word > 64 {
                return Some(false);
            }
            let mut j = i + word;
            while let Some(c) = bytes.get(j) {
                if !(*c == b' ' || *c == b'\t') {
                    break;
                }
                j += 1;
                if j - i > 128 {
                    return Some(false);
                }
            }
            match bytes.get(j) {
                Some(b':') => Some(true),
                Some(_) => Some(false),
                None if is_final => Some(false),
                None => None,
            }
        }
        _ => Some(false),
    }
}

/// Whether a region starting with `[` can be a list of calls: JSON values or `f(` calls.
pub(crate) fn array_start_plausible(bytes: &[u8], is_final: bool) -> Option<bool> {
    let (i, b) = match first_inside(bytes, is_final) {
        Ok(found) => found,
        Err(verdict) => return verdict,
    };
    match b {
        b'{' | b'[' | b'"' | b'\'' => Some(true),
        b if b.is_ascii_alphabetic() || b == b'_' => {
            let mut j = i;
            while let Some(c) = bytes.get(j) {
                if !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-' | b':')) {
                    break;
                }
                j += 1;
                if j - i > 256 {
                    return Some(false);
                }
            }
            match bytes.get(j) {
                Some(b'(') => Some(true),
                Some(_) => Some(false),
                None if is_final => Some(false),
                None => None,
            }
        }
        _ => Some(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // A kept failed scan stands for a new scan of any region that starts with the bytes it
    // read: `repeats` gives what a new scan of that region consumes, at every offset of
    // floods whose units only nest, after a kept scan from any other offset.
    #[test]
    fn a_kept_failed_scan_repeats_as_a_new_scan() {
        let units = [
            "{\"", "{\"a\"", "{\"k\":", "{'a'", "[x", "[1,", "{\"a\":[", "[\"{\"", "{/*", "[\"\\\"",
        ];
        let fresh = |r: &[u8], d: usize| {
            let mut sc = Scanner::new(d, false);
            match sc.advance(r) {
                Scan::Fail(_) => Some((sc.consumed(), sc)),
                _ => None,
            }
        };
        let mut hits = 0;
        for unit in units {
            let flood = unit.repeat(400);
            let b = flood.as_bytes();
            for d in [1, 2, 5, 64] {
                for k in 0..3 * unit.len() {
                    let Some((n, sc)) = fresh(&b[k..], d) else {
                        continue;
                    };
                    let mut kept = FailedScans::default();
                    sc.fail_into_seen(&mut kept, k, &b[k..k + n]);
                    for k2 in 0..4 * unit.len() {
                        let r = &b[k2..];
                        if let Some(m) = kept.repeats(d, false, r) {
                            hits += 1;
                            assert_eq!(fresh(r, d).map(|f| f.0), Some(m), "{unit:?} {d} {k} {k2}");
                        }
                        assert_eq!(kept.repeats(d + 1, false, r), None);
                        assert_eq!(kept.repeats(d, true, r), None);
                    }
                }
            }
        }
        assert!(hits > 100, "{hits}");
    }

    // Whether a region starts with a kept scan's bytes, worked out from the overlap with the
    // last region that did (`FailedScan::starts_region`), is what comparing the bytes
    // gives: at every offset, at each unit's, at every other unit's, and at offsets drawn
    // in turn, of floods whose copies differ here and there (a byte changed before, inside
    // or after the kept bytes' overlap), whatever the kept bytes' period.
    #[test]
    fn regions_start_with_kept_bytes_as_a_compare_gives() {
        let mut rng = crate::test_rng::Xorshift::new(0x6A09_E667_F3BC_C908);
        let mut hits = 0;
        for unit in ["\"f(", "ab(", "<|x|>\"c(", "(", "{\"a(b"] {
            for changes in [0, 1, 3, 12] {
                let mut b = unit.repeat(200).into_bytes();
                for _ in 0..changes {
                    let i = rng.below(b.len());
                    b[i] = b'z';
                }
                for (from, len) in [
                    (0, 3 * unit.len()),
                    (1, 40),
                    (unit.len(), 2 * unit.len() + 1),
                ] {
                    let seen = b[from..from + len].to_vec();
                    let mut f = Scanner::new(4, true).into_failed(0);
                    f.seen = seen.clone();
                    let steps: [&dyn Fn(usize) -> usize; 4] =
                        [&|_| 1, &|_| unit.len(), &|_| 2 * unit.len(), &|r| {
                            1 + r % (2 * unit.len() + 1)
                        }];
                    for step in steps {
                        let mut at = 0;
                        while at < b.len() {
                            let region = &b[at..];
                            let want = region.starts_with(&seen);
                            hits += usize::from(want);
                            assert_eq!(
                                f.starts_region(at, region),
                                want,
                                "{unit:?} {changes} {at}"
                            );
                            at += step(rng.below(1 << 16));
                        }
                    }
                }
            }
        }
        assert!(hits > 1000, "{hits}");
    }

    // One serde pass stands for scan-then-decode only where both agree: wherever it
    // decodes, the scanner ends the value at the same byte and `parse_lenient` gives the
    // same value without repairs.
    #[test]
    fn decode_prefix_agrees_with_scan_then_decode() {
        let values = [
            r#"{"a":1}"#,
            r#"[{"name":"f","arguments":{"x":"}]\"{["}}]"#,
            r#"{"s":"it's // not /* a comment */","n":[1,2.5e3,-0,true,null]}"#,
            r#"{"a":1,}"#,
            r#"{'a':1}"#,
            r#"{"a":1 // note
}"#,
            r#"{"a":"x"#,
            r#"[1,2"#,
            r#"{"a":[1}"#,
            r#"{"a":"\u00e9\n"}"#,
            "{\"a\":\"\u{1}\"}",
            r#"[]"#,
            r#"{ }"#,
        ];
        let tails = ["", " trailing", "]", "}", ";{\"b\":2}", "\n<|eom_id|>", "x"];
        let mut decoded = 0;
        for v in values {
            for t in tails {
                let region = format!("{v}{t}");
                let Some((n, value)) = decode_prefix(&region, 128) else {
                    continue;
                };
                decoded += 1;
                let mut sc = Scanner::new(128, false);
                assert_eq!(sc.advance(region.as_bytes()), Scan::Done(n), "{region}");
                let (again, repairs) = crate::repair::parse_lenient(&region[..n]).unwrap();
                assert_eq!(again, value, "{region}");
                assert!(repairs.is_empty(), "{region}");
            }
        }
        assert!(decoded >= 30, "{decoded}");
    }

    // serde decodes 127 levels and refuses 128; the scanner at its lowest bound for the
    // fast path (127) takes the 127.
    #[test]
    fn decode_prefix_stays_within_the_scanner_depth() {
        let nested = |d: usize| format!("{}{}", "[".repeat(d), "]".repeat(d));
        assert!(decode_prefix(&nested(127), 128).is_some());
        assert!(decode_prefix(&nested(128), 128).is_none());
        assert!(decode_prefix(&nested(1), 126).is_none());
        let mut sc = Scanner::new(127, false);
        assert_eq!(sc.advance(nested(127).as_bytes()), Scan::Done(254));
    }

    fn scan_all(s: &str) -> Scan {
        Scanner::new(128, false).advance(s.as_bytes())
    }

    // covers F-JSON-4
    #[test]
    fn braces_inside_strings_do_not_count() {
        let s = r#"{"a":"}{","b":{"c":[1,"]"]}} tail"#;
        assert_eq!(scan_all(s), Scan::Done(s.len() - 5));
    }

    // covers R-1
    #[test]
    fn resumes_across_chunks() {
        let s = r#"{"a":"x\"}", 'b': 1 /* } */ // }
        }"#;
        for split in 0..s.len() {
            let mut sc = Scanner::new(128, false);
            let first = sc.advance(&s.as_bytes()[..split]);
            assert!(matches!(first, Scan::NeedMore), "split {split}");
            assert_eq!(sc.advance(s.as_bytes()), Scan::Done(s.len()));
        }
    }

    // covers R-1 (the in-string skip ends at the same byte for every split of the input)
    #[test]
    fn string_skip_agrees_with_every_split() {
        let text = r#"{"a": "x\\\"}{[\\", 'b': 'it\'s }', "c": "é\u00e9 \\"} tail"#;
        let whole = scan_all(text);
        assert_eq!(whole, Scan::Done(text.find(" tail").unwrap()));
        for cut in 0..=text.len() {
            let mut sc = Scanner::new(8, false);
            let first = sc.advance(&text.as_bytes()[..cut]);
            let r = if matches!(first, Scan::NeedMore) {
                sc.advance(text.as_bytes())
            } else {
                first
            };
            assert_eq!(r, whole, "cut at {cut}");
        }
    }

    // `scan_from` after a kept new scan failed (its bytes kept) agrees with a fresh scan of
    // any region, and of any prefix of it (a stream's bytes at hand: a region shorter than
    // the kept bytes, or one that differs in them, where a `)` closes what the kept scan
    // failed on, is scanned), at every `(` of floods that fail in strings, on a closer or
    // after a closed inner call.
    #[test]
    fn scans_from_a_kept_new_scan_agree_with_fresh_ones_on_every_prefix() {
        let units = [
            "get_weather({\"",
            "f(]",
            "f(x)",
            "get_weather(get_weather(x)",
            "f('a",
            "f(\"(\"",
            "f(/*",
            "f([",
        ];
        let mut hits = 0;
        for unit in units {
            let flood = format!("{}f(x)", unit.repeat(150));
            let b = flood.as_bytes();
            let opens: Vec<usize> = (0..b.len()).filter(|&i| b[i] == b'(').collect();
            for d in [1, 2, 5, 64] {
                for &k in opens.iter().take(3) {
                    let mut kept = FailedScans::default();
                    let Err((_, n)) = Scanner::scan_from(&mut kept, k, b'(', d, true, &b[k..])
                    else {
                        continue;
                    };
                    for &k2 in opens.iter().take(8).chain(opens.iter().rev().take(3)) {
                        let rest = b.len() - k2;
                        // A region the kept scan resumes at holds the byte it failed on
                        // (the buffer only grows): only the whole rest is asked there.
                        let resumes = kept.covers(k2, b'(', d, true);
                        for len in [1, 2, unit.len(), n - 1, n, n + 1, rest] {
                            if resumes && len != rest {
                                continue;
                            }
                            let r = &b[k2..k2 + len.min(rest)];
                            if kept.repeats(d, true, r).is_some() {
                                hits += 1;
                            }
                            let mut f = kept.clone();
                            let got = match Scanner::scan_from(&mut f, k2, b'(', d, true, r) {
                                Ok((sc, scan)) => (scan, sc.consumed()),
                                Err((e, consumed)) => (Scan::Fail(e), consumed),
                            };
                            assert_eq!(got, fresh(r, 0, d, true), "{unit:?} {d} {k} {k2} {len}");
                        }
                    }
                }
            }
        }
        assert!(hits > 100, "{hits}");
    }

    // A failed scan is resumable at each bracket it left open, whether that lies among the
    // few above its floor compared one by one or further up (binary search), and at no other
    // offset; after a resume (a raised floor) the same holds from the new floor.
    #[test]
    fn resumable_at_every_open_bracket_near_the_floor_or_not() {
        let flood = "f(x ".repeat(40);
        let b = flood.as_bytes();
        let opens: Vec<usize> = (0..b.len()).filter(|&i| b[i] == b'(').collect();
        let d = 20;
        let mut kept = FailedScans::default();
        assert!(Scanner::scan_from(&mut kept, opens[0], b'(', d, true, &b[opens[0]..]).is_err());
        for (j, &k) in opens.iter().enumerate() {
            assert_eq!(kept.covers(k, b'(', d, true), j < d, "{j}");
            assert!(!kept.covers(k + 1, b'(', d, true));
        }
        // Resumed at the 3rd bracket (floor raised to 2): the 3rd .. 20th are still open.
        assert!(Scanner::scan_from(&mut kept, opens[2], b'(', d, true, &b[opens[2]..]).is_err());
        for (j, &k) in opens.iter().enumerate().skip(2) {
            assert_eq!(kept.covers(k, b'(', d, true), j < d + 2, "{j}");
        }
    }

    #[test]
    fn a_byte_set_holds_its_members_only() {
        let t = byte_set(b"{\"\n");
        assert_eq!(t.iter().filter(|&&m| m).count(), 3);
        assert!(t[usize::from(b'{')] && t[usize::from(b'"')] && t[usize::from(b'\n')]);
        assert!(!t[usize::from(b'}')] && !t[0] && !t[255]);
    }

    /// `object_start_plausible` as it read an unquoted key before its byte table.
    fn object_start_by_ranges(bytes: &[u8], is_final: bool) -> Option<bool> {
        let (i, b) = match first_inside(bytes, is_final) {
            Ok(found) => found,
            Err(verdict) => return verdict,
        };
        match b {
            b'"' | b'\'' | b'}' | b'/' => Some(true),
            b if b.is_ascii_alphabetic() || b == b'_' => {
                let mut j = i;
                while let Some(c) = bytes.get(j) {
                    if !(c.is_ascii_alphanumeric() || *c == b'_') {
                        break;
                    }
                    j += 1;
                    if j - i > 64 {
                        return Some(false);
                    }
                }
                while let Some(c) = bytes.get(j) {
                    if !(*c == b' ' || *c == b'\t') {
                        break;
                    }
                    j += 1;
                    if j - i > 128 {
                        return Some(false);
                    }
                }
                match bytes.get(j) {
                    Some(b':') => Some(true),
                    Some(_) => Some(false),
                    None if is_final => Some(false),
                    None => None,
                }
            }
            _ => Some(false),
        }
    }

    #[test]
    fn an_unquoted_key_reads_as_by_ranges() {
        for c in 0..=255u8 {
            assert_eq!(
                KEY_BYTES[usize::from(c)],
                c.is_ascii_alphanumeric() || c == b'_',
                "{c}"
            );
        }
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for n in [0, 1, 5, 62, 63, 64, 65, 66, 70, 130] {
            for tail in ["", ":", " :", "\t :", "{", "-", "é:", " ", "x"] {
                for lead in ["{", "{ ", "{\n", "{_", "{9"] {
                    let mut t = lead.as_bytes().to_vec();
                    t.extend((0..n).map(|k| b"aZ_0q9"[k % 6]));
                    t.extend_from_slice(tail.as_bytes());
                    texts.push(t);
                }
            }
        }
        texts.push(
            b"{a"
                .iter()
                .chain(&[b' '; 140])
                .chain(b":")
                .copied()
                .collect(),
        );
        for t in &texts {
            for cut in 0..=t.len() {
                for is_final in [false, true] {
                    let b = &t[..cut];
                    if b.is_empty() {
                        continue;
                    }
                    assert_eq!(
                        object_start_plausible(b, is_final),
                        object_start_by_ranges(b, is_final),
                        "{:?} {is_final}",
                        String::from_utf8_lossy(b)
                    );
                }
            }
        }
    }

    /// `region` scanned whole, and grown by one byte each `advance` until a verdict: each
    /// verdict with the scanner that gave it.
    fn whole_and_grown(
        region: &[u8],
        depth: usize,
        parens: bool,
    ) -> ((Scan, Scanner), (Scan, Scanner)) {
        let mut whole = Scanner::new(depth, parens);
        let w = whole.advance(region);
        let mut grown = Scanner::new(depth, parens);
        let mut g = Scan::NeedMore;
        for end in 1..=region.len() {
            g = grown.advance(&region[..end]);
            if g != Scan::NeedMore {
                break;
            }
        }
        ((w, whole), (g, grown))
    }

    // Call syntax's runs of words and `(` (passed in one loop after an ordinary byte) scan
    // as they do a byte at a time (a region grown by one byte each `advance`, where no run
    // reaches a `(`): the same verdict after the same bytes, and the same quote rule after
    // the run (`(a( ')' ))`: the `'` after `(` and a blank opens a string, the one after a
    // name would not).
    #[test]
    fn runs_of_words_and_parens_scan_as_byte_by_byte() {
        let texts = [
            "(a( ')' ))".to_owned(),
            "(a ( 'x' ) b)".to_owned(),
            "(a (b 'x' ) b)".to_owned(),
            "(x(y)z(w 'q')) tail".to_owned(),
            "(the(weather(a(get_weather(".repeat(40),
            "(x".repeat(300),
            "((((((a b((".repeat(30),
            format!("{}'a')", "(f(g ".repeat(20)),
            format!("{}\"s(\"{}", "(k(".repeat(10), ")".repeat(30)),
            "(a/(b/*(c*/(d//(e\n(f".repeat(12),
        ];
        for text in texts {
            let bytes = text.as_bytes();
            for depth in [3, 8, 128] {
                let ((w, whole), (g, grown)) = whole_and_grown(bytes, depth, true);
                assert_eq!(w, g, "{text:?} {depth}");
                assert_eq!(whole.consumed(), grown.consumed(), "{text:?} {depth}");
                assert_eq!(whole.depth(), grown.depth(), "{text:?} {depth}");
                assert_eq!(whole.peak_depth(), grown.peak_depth(), "{text:?} {depth}");
                assert_eq!(whole.last_sig, grown.last_sig, "{text:?} {depth}");
            }
        }
        let mut sc = Scanner::new(8, true);
        assert_eq!(sc.advance(b"(a( ')' ))"), Scan::Done(10));
    }

    #[test]
    fn depth_is_bounded_and_mismatch_fails() {
        let deep = "[".repeat(200);
        assert!(matches!(scan_all(&deep), Scan::Fail(_)));
        assert!(matches!(scan_all("{]"), Scan::Fail(_)));
    }

    /// Scans `bytes[from..]` afresh: the verdict and the bytes consumed.
    fn fresh(bytes: &[u8], from: usize, depth: usize, parens: bool) -> (Scan, usize) {
        let mut sc = Scanner::new(depth, parens);
        let r = sc.advance(&bytes[from..]);
        (r, sc.consumed())
    }

    // `scan_from`, resuming a failed scan where it lies, reaches a fresh scan's verdict at
    // the same byte along a chain of regions opened inside each failed one.
    #[test]
    fn scans_resumed_in_place_agree_with_fresh_ones() {
        let texts = [
            "f(".repeat(150),
            "get_weather(".repeat(40),
            format!("{}x)]", "f(".repeat(70)),
            "[(f(g[h{(".repeat(20),
            // Two openers in turn, each opening inside the other's string: each kind's
            // new scan is kept (`FailedScans`) and resumed from at its next copies.
            "get_weather(computer_use({\"".repeat(30),
            "f(g({\"".repeat(60),
            "f(g(h({'".repeat(60),
            // Numbered units (no two copies alike): each opener resumes from a kept scan
            // that saw its bracket outside strings (`FailedScans`), not the last one.
            (0..80).map(|i| format!("get_weather({{\"{i}")).collect(),
            (0..80).map(|i| format!("f(g({{\"{i}")).collect(),
            (0..80).map(|i| format!("f({i}[\"")).collect(),
        ];
        for text in &texts {
            let bytes = text.as_bytes();
            for depth in [1, 2, 5, 64] {
                let mut failed = FailedScans::default();
                for (at, &b) in bytes.iter().enumerate() {
                    if !matches!(b, b'[' | b'{' | b'(') {
                        continue;
                    }
                    let got =
                        match Scanner::scan_from(&mut failed, at, b, depth, true, &bytes[at..]) {
                            Ok((sc, scan)) => (scan, sc.consumed()),
                            Err((e, consumed)) => (Scan::Fail(e), consumed),
                        };
                    assert_eq!(
                        got,
                        fresh(bytes, at, depth, true),
                        "{text:?} from {at}, depth {depth}"
                    );
                }
            }
        }
    }

    // A run of ordinary bytes passed at once leaves the scan where reading them one by one
    // does: the same verdict, bytes consumed and state, whether the region comes whole or
    // a byte a push (where no run reaches past the one new byte).
    #[test]
    fn runs_of_ordinary_bytes_scan_as_byte_by_byte() {
        let texts = [
            "(get_weather(get_weather(get_weather(",
            "(a b 'c' it's x='y' z /* q */ w // e\n ) tail",
            "[1, 2.5e3, true, null, \"s\\\"t\", 'u', {\"k\": [x y]}] after",
            "{\"a\": 1 ) ] }",
            "(f(x)=1, g[ 'a' ], h{ }, / * / 'b')",
            "[ \t\n 'a', b'c', 'é' ]",
            "(((x) (y)) z) w",
            "[x /y/ 'z' ] ",
        ];
        for text in texts {
            let bytes = text.as_bytes();
            for (depth, parens) in [(64, true), (64, false), (2, true), (3, false)] {
                for (from, &b) in bytes.iter().enumerate() {
                    if !matches!(b, b'[' | b'{' | b'(') {
                        continue;
                    }
                    let region = &bytes[from..];
                    let ((w, whole), (s, step)) = whole_and_grown(region, depth, parens);
                    let what = format!("{text:?} from {from}, depth {depth}, parens {parens}");
                    assert_eq!(w, s, "{what}");
                    assert_eq!(whole.consumed(), step.consumed(), "{what}");
                    assert_eq!(
                        (
                            whole.last_sig,
                            whole.quote,
                            whole.comment,
                            whole.slash,
                            &whole.stack
                        ),
                        (
                            step.last_sig,
                            step.quote,
                            step.comment,
                            step.slash,
                            &step.stack
                        ),
                        "{what}"
                    );
                }
            }
        }
    }

    // A region opened at a bracket a failed scan left open resumes from it and reaches the
    // same verdict, at the same byte, as a scan from scratch; chained (each resumed scan
    // failing in turn) as a flood of openers is read.
    #[test]
    fn resumed_scans_agree_with_fresh_ones() {
        let texts = [
            "[[[[[[[[[[[[",
            "f(f(f(f(f(f(f(f(f(f(",
            "f(g(\"(\", [1, {\"a\": (2)}], h(h(h(h(h(h(h(h(",
            "[{[{[{[{[{]",
            "(((/* ( */((('(' ((((",
            "{\"a\": [1, 2, [3, [4, [5, [6, [7, [8]]]]]]]}",
            "((/((((((((((((",
            "[1, [2, [3, [4, [5, (6, [7, [8, [9, [10, [11, [12",
            "([{)]}",
        ];
        for text in texts {
            let bytes = text.as_bytes();
            for parens in [false, true] {
                for depth in 1..8 {
                    // Every region start a flood would open: each bracket, left to right,
                    // resumed from the last failure when it lies in it.
                    let mut failed = FailedScans::default();
                    for (at, &b) in bytes.iter().enumerate() {
                        if !(matches!(b, b'[' | b'{') || (b == b'(' && parens)) {
                            continue;
                        }
                        let mut sc = Scanner::resume_or_new(&mut failed, at, b, depth, parens);
                        let r = sc.advance(&bytes[at..]);
                        assert_eq!(
                            (r.clone(), sc.consumed()),
                            fresh(bytes, at, depth, parens),
                            "{text:?} from {at}, depth {depth}, parens {parens}"
                        );
                        if matches!(r, Scan::Fail(_)) {
                            sc.fail_into(&mut failed, at);
                        }
                    }
                }
            }
        }
    }

    // A long flood resumes once per bracket, the stack keeping the brackets below each
    // region under a floor until they are half of it: verdicts as a fresh scan's, and the
    // stack within twice the depth bound however long the flood.
    #[test]
    fn long_floods_resume_like_fresh_scans_within_a_bounded_stack() {
        let texts = [
            "[".repeat(300),
            "f(".repeat(150),
            "[{".repeat(120),
            format!("{}]", "[".repeat(200)),
            "[ [\"[\", ".repeat(60),
        ];
        for text in &texts {
            let bytes = text.as_bytes();
            for parens in [false, true] {
                for depth in [1, 2, 7, 16, 33] {
                    let mut failed = FailedScans::default();
                    for (at, &b) in bytes.iter().enumerate() {
                        if !(matches!(b, b'[' | b'{') || (b == b'(' && parens)) {
                            continue;
                        }
                        let mut sc = Scanner::resume_or_new(&mut failed, at, b, depth, parens);
                        let r = sc.advance(&bytes[at..]);
                        assert_eq!(
                            (r.clone(), sc.consumed()),
                            fresh(bytes, at, depth, parens),
                            "{text:?} from {at}, depth {depth}, parens {parens}"
                        );
                        assert!(sc.stack.len() <= 2 * depth + 2, "{}", sc.stack.len());
                        if matches!(r, Scan::Fail(_)) {
                            sc.fail_into(&mut failed, at);
                        }
                    }
                }
            }
        }
    }

    // The look past the bracket refuses only what serde refuses: every byte after `[` or
    // `{` (after blanks), then the rest of a value or not.
    #[test]
    fn decode_prefix_refuses_only_what_serde_refuses() {
        let serde = |region: &str| {
            serde_json::Deserializer::from_str(region)
                .into_iter::<serde_json::Value>()
                .next()
                .is_some_and(|r| r.is_ok())
        };
        let mut checked = 0;
        for open in ['[', '{'] {
            for b in 0u8..128 {
                for gap in ["", " ", "\n\t\r "] {
                    for tail in ["", "]", "}", "1]", "\"a\":1}", "\"a\"]", "rue]", "ull}"] {
                        let region = format!("{open}{gap}{}{tail}", char::from(b));
                        assert_eq!(
                            decode_prefix(&region, 128).is_some(),
                            serde(&region),
                            "{region:?}"
                        );
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 6000);
    }

    #[test]
    fn resume_needs_a_bracket_left_open_there() {
        let text = b"[[[[1], [[[[";
        let mut sc = Scanner::new(3, false);
        assert!(matches!(sc.advance(text), Scan::Fail(_)));
        let failed = sc.into_failed(10);
        // It failed at the fourth `[` (offset 13): 11 and 12 are brackets it left open, 14
        // and 17 lie past the failure.
        assert_eq!(failed.resumable_at(11, b'[', 3, false), Some(1));
        assert_eq!(failed.resumable_at(14, b'[', 3, false), None);
        assert_eq!(failed.resumable_at(17, b'[', 3, false), None);
        // Another bracket kind, depth or parenthesis mode: a fresh scan.
        assert_eq!(failed.resumable_at(11, b'{', 3, false), None);
        assert_eq!(failed.resumable_at(11, b'[', 4, false), None);
        assert_eq!(failed.resumable_at(11, b'[', 3, true), None);
    }

    #[test]
    fn apostrophes_in_prose_are_not_strings() {
        assert_eq!(scan_all("{don't}"), Scan::Done(7));
    }

    #[test]
    fn split_respects_nesting() {
        let parts = split_top_level(r#"a=1, b="x,y", c=[1,2], d=f(3,4)"#, b',', 16).unwrap();
        assert_eq!(parts.len(), 4);
    }

    /// The scanner fed one byte at a time, as `split_top_level` read before it ran over
    /// the bytes between separators in one call.
    fn split_per_byte(s: &str, sep: u8, max_depth: usize) -> Result<Vec<&str>, String> {
        let bytes = s.as_bytes();
        let mut scanner = Scanner::new(max_depth.saturating_add(1), true);
        scanner.stack.push((0, 0));
        let (mut parts, mut from) = (Vec::new(), 0);
        for i in 0..bytes.len() {
            let (before_literal, before_depth) = (scanner.in_literal(), scanner.depth());
            if let Scan::Fail(e) = scanner.advance(&bytes[..=i]) {
                return Err(e.to_string());
            }
            if bytes[i] == sep && !before_literal && before_depth == 1 && !scanner.in_literal() {
                parts.push(&s[from..i]);
                from = i + 1;
            }
        }
        if scanner.depth() != 1 || scanner.in_literal() {
            return Err("unbalanced brackets or unterminated string".into());
        }
        parts.push(&s[from..]);
        Ok(parts)
    }

    // Separators inside strings (either quote, escaped quotes), comments, brackets and
    // parentheses, a stray closer, a string or bracket left open, nesting past the bound,
    // a separator right after a `/`: the same parts or the same error as byte by byte.
    #[test]
    fn split_in_runs_equals_split_per_byte() {
        let cases = [
            r#"a=1, b="x,y", c=[1,2], d=f(3,4)"#,
            r#"x="a\",b", y='c,d', z=[',', "\\"],"#,
            "a=1 /* , */, b=2 // ,\n, c=3",
            "a=1, b=(2, 3)), c=4",
            "a=[1, 2, b=3",
            r#"a="open, b=1"#,
            "a=[[[[1,2]]]], b=2",
            "a=1/,b=2,,",
            "é=1,ü='x,y',",
            "",
            ",",
        ];
        for c in cases {
            for depth in [2, 16] {
                assert_eq!(
                    split_top_level(c, b',', depth),
                    split_per_byte(c, b',', depth),
                    "{c:?} at depth {depth}"
                );
            }
        }
    }
}
