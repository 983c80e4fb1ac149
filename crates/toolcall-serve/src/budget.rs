//! A memory budget that requests hold shares of: what bounds the gateway's heap beyond the
//! body limit (issue 20, fault 2).
//!
//! Two budgets use it: compiled tools alive at once (`tools_memory_mib`, see
//! [`crate::tools_cache`]) and request bodies in flight (`bodies_memory_mib`, see
//! [`crate::body`]). A budget is a semaphore of KiB; a [`Share`] holds permits for an
//! estimated heap and gives them back when dropped. A share larger than the budget allows
//! one request is refused for good ([`Refused::TooLarge`]); one that does not fit beside
//! the shares held now is refused for the moment ([`Refused::Busy`], a `503` with
//! `Retry-After`), at once or after a bounded wait. Both refusals name the setting.

use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::ApiError;

/// What a budget bounds: it decides the setting named and the answer to a refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budgeted {
    /// Compiled tools (`tools_memory_mib`): too large is the request's fault, a `400`.
    Tools,
    /// Request bodies in flight (`bodies_memory_mib`): too large is a `413`.
    Bodies,
}

impl Budgeted {
    /// The config field (and, with dashes, the `toolcall serve` flag) that sets the budget.
    pub fn setting(self) -> &'static str {
        match self {
            Budgeted::Tools => "tools_memory_mib",
            Budgeted::Bodies => "bodies_memory_mib",
        }
    }

    fn what(self) -> &'static str {
        match self {
            Budgeted::Tools => "the request's tools would take, compiled,",
            Budgeted::Bodies => "the request body would take, decoded and forwarded,",
        }
    }

    fn held(self) -> &'static str {
        match self {
            Budgeted::Tools => "compiling or using other requests' tools",
            Budgeted::Bodies => "holding other requests' bodies",
        }
    }
}

/// Why a share was not given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// Larger than one request may hold.
    #[error(
        "{} about {estimate_mib} MiB of memory; this gateway allows one request at most \
         {limit_mib} MiB ({} in its config)", .what.what(), .what.setting()
    )]
    TooLarge {
        what: Budgeted,
        estimate_mib: u64,
        limit_mib: u64,
    },
    /// Not now: other requests hold the budget.
    #[error(
        "the gateway is {} up to its memory budget ({} in its config); retry shortly",
        .what.held(), .what.setting()
    )]
    Busy { what: Budgeted },
}

/// Seconds a client is told to wait after a `503 overloaded` (`Retry-After`).
pub const RETRY_AFTER_SECS: u64 = 1;

impl From<Refused> for ApiError {
    fn from(e: Refused) -> Self {
        match e {
            Refused::TooLarge { what, .. } => ApiError {
                status: match what {
                    Budgeted::Tools => StatusCode::BAD_REQUEST,
                    Budgeted::Bodies => StatusCode::PAYLOAD_TOO_LARGE,
                },
                kind: "invalid_request_error",
                code: match what {
                    Budgeted::Tools => None,
                    Budgeted::Bodies => Some("request_too_large"),
                },
                message: e.to_string(),
                retry_after: None,
            },
            Refused::Busy { .. } => ApiError {
                status: StatusCode::SERVICE_UNAVAILABLE,
                kind: "server_error",
                code: Some("overloaded"),
                message: e.to_string(),
                retry_after: Some(RETRY_AFTER_SECS),
            },
        }
    }
}

/// Bytes to whole KiB, rounded up (a budget's unit).
pub fn kib(bytes: u64) -> u64 {
    bytes.div_ceil(1024)
}

/// A budget of estimated heap; see the module doc.
#[derive(Debug)]
pub struct MemoryBudget {
    what: Budgeted,
    permits: Arc<Semaphore>,
    total_kib: u64,
    /// The most one share may hold.
    largest_kib: u64,
}

impl MemoryBudget {
    /// A budget of `total_bytes` for `what`, of which one share may hold `largest_bytes`.
    pub fn new(what: Budgeted, total_bytes: u64, largest_bytes: u64) -> Self {
        let total_kib = kib(total_bytes).clamp(1, Semaphore::MAX_PERMITS as u64);
        MemoryBudget {
            what,
            permits: Arc::new(Semaphore::new(total_kib as usize)),
            total_kib,
            largest_kib: kib(largest_bytes).clamp(1, total_kib),
        }
    }

    /// The whole budget, in KiB.
    pub fn total_kib(&self) -> u64 {
        self.total_kib
    }

    /// KiB no share holds now.
    pub fn available_kib(&self) -> u64 {
        self.permits.available_permits() as u64
    }

    /// A share holding nothing yet.
    pub fn empty_share(&self) -> Share {
        Share {
            permits: self.permits.clone(),
            held: None,
        }
    }

    /// `TooLarge` unless a share of `bytes` may be held at all; the KiB it takes.
    pub fn check(&self, bytes: u64) -> Result<u32, Refused> {
        let need = kib(bytes);
        let too_large = || Refused::TooLarge {
            what: self.what,
            estimate_mib: bytes.div_ceil(1024 * 1024),
            limit_mib: self.largest_kib / 1024,
        };
        if need > self.largest_kib {
            return Err(too_large());
        }
        u32::try_from(need).map_err(|_| too_large())
    }

    /// A share of `bytes` if it fits now, without waiting.
    pub fn try_take(&self, bytes: u64) -> Result<Share, Refused> {
        let mut share = self.empty_share();
        self.try_grow(&mut share, bytes)?;
        Ok(share)
    }

    /// Grows `share` to hold `bytes` in all if it fits now, without waiting.
    pub fn try_grow(&self, share: &mut Share, bytes: u64) -> Result<(), Refused> {
        let more = self.more(share, bytes)?;
        if more == 0 {
            return Ok(());
        }
        let permit = self
            .permits
            .clone()
            .try_acquire_many_owned(more)
            .map_err(|_| Refused::Busy { what: self.what })?;
        share.add(permit);
        Ok(())
    }

    /// Grows `share` to hold `bytes` in all, waiting at most `wait` for others to give
    /// theirs back.
    ///
    /// A share never waits while it holds: what it holds is given back first, then the
    /// whole is waited for at once. Shares holding part of what they need, each waiting
    /// for the rest, would otherwise wait for each other (the semaphore is fair, and hands
    /// what is given back to the first waiter until it has all it asked for).
    pub async fn grow(&self, share: &mut Share, bytes: u64, wait: Duration) -> Result<(), Refused> {
        let more = self.more(share, bytes)?;
        if more == 0 {
            return Ok(());
        }
        if let Ok(permit) = self.permits.clone().try_acquire_many_owned(more) {
            share.add(permit);
            return Ok(());
        }
        let whole = more.saturating_add(share.kib());
        share.held = None;
        let acquire = self.permits.clone().acquire_many_owned(whole);
        match tokio::time::timeout(wait, acquire).await {
            Ok(Ok(permit)) => {
                share.add(permit);
                Ok(())
            }
            // Timed out (the semaphore is never closed).
            _ => Err(Refused::Busy { what: self.what }),
        }
    }

    /// The KiB `share` lacks to hold `bytes`.
    fn more(&self, share: &Share, bytes: u64) -> Result<u32, Refused> {
        let need = self.check(bytes)?;
        Ok(need.saturating_sub(share.kib()))
    }
}

/// A share of a [`MemoryBudget`], given back when dropped.
#[derive(Debug)]
pub struct Share {
    permits: Arc<Semaphore>,
    held: Option<OwnedSemaphorePermit>,
}

impl Share {
    /// KiB held.
    pub fn kib(&self) -> u32 {
        self.held
            .as_ref()
            .map_or(0, |p| u32::try_from(p.num_permits()).unwrap_or(u32::MAX))
    }

    fn add(&mut self, permit: OwnedSemaphorePermit) {
        debug_assert!(Arc::ptr_eq(&self.permits, permit.semaphore()));
        match &mut self.held {
            Some(held) => held.merge(permit),
            None => self.held = Some(permit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1024 * 1024;

    #[test]
    fn shares_grow_and_give_back_within_the_budget() {
        let budget = MemoryBudget::new(Budgeted::Bodies, 4 * MIB, 4 * MIB);
        let mut a = budget.try_take(MIB).unwrap();
        budget.try_grow(&mut a, 3 * MIB).unwrap();
        assert_eq!(budget.available_kib(), 1024);
        // Growing to less than held takes nothing.
        budget.try_grow(&mut a, MIB).unwrap();
        assert_eq!(a.kib(), 3 * 1024);
        assert_eq!(
            budget.try_take(2 * MIB).err(),
            Some(Refused::Busy {
                what: Budgeted::Bodies
            })
        );
        drop(a);
        assert_eq!(budget.available_kib(), 4 * 1024);
        assert!(budget.try_take(2 * MIB).is_ok());
    }

    #[test]
    fn a_share_over_the_largest_is_refused_for_good_and_names_the_setting() {
        let budget = MemoryBudget::new(Budgeted::Tools, 4 * MIB, 2 * MIB);
        let e = budget.try_take(3 * MIB).unwrap_err();
        assert!(matches!(e, Refused::TooLarge { limit_mib: 2, .. }), "{e:?}");
        assert!(e.to_string().contains("tools_memory_mib"), "{e}");
        assert_eq!(ApiError::from(e).status, StatusCode::BAD_REQUEST);
        let bodies = MemoryBudget::new(Budgeted::Bodies, 4 * MIB, 4 * MIB);
        let e = ApiError::from(bodies.try_take(5 * MIB).unwrap_err());
        assert_eq!(e.status, StatusCode::PAYLOAD_TOO_LARGE);
        assert!(e.message.contains("bodies_memory_mib"), "{}", e.message);
        assert_eq!(e.retry_after, None);
    }

    #[test]
    fn busy_is_a_503_to_retry_after_a_second_naming_the_setting() {
        for what in [Budgeted::Tools, Budgeted::Bodies] {
            let e = ApiError::from(Refused::Busy { what });
            assert_eq!(e.status, StatusCode::SERVICE_UNAVAILABLE);
            assert_eq!(e.code, Some("overloaded"));
            assert_eq!(e.retry_after, Some(1));
            assert!(e.message.contains(what.setting()), "{}", e.message);
        }
    }

    #[tokio::test]
    async fn a_waiting_share_gets_what_is_given_back_or_is_busy_after_its_wait() {
        let budget = Arc::new(MemoryBudget::new(Budgeted::Bodies, 2 * MIB, 2 * MIB));
        let held = budget.try_take(2 * MIB).unwrap();
        let mut waiting = budget.empty_share();
        assert_eq!(
            budget
                .grow(&mut waiting, MIB, Duration::from_millis(1))
                .await,
            Err(Refused::Busy {
                what: Budgeted::Bodies
            })
        );
        let b = budget.clone();
        let grown = tokio::spawn(async move {
            let mut share = b.empty_share();
            b.grow(&mut share, MIB, Duration::from_secs(3600))
                .await
                .map(|()| share.kib())
        });
        drop(held);
        assert_eq!(grown.await.unwrap(), Ok(1024));
    }

    #[tokio::test]
    async fn shares_that_hold_part_never_wait_for_each_other() {
        // Two shares of 1 MiB in 2 MiB, each then asking for 2 MiB: held and waiting they
        // would wait for each other; one gives its part back and waits for the whole.
        let budget = Arc::new(MemoryBudget::new(Budgeted::Bodies, 2 * MIB, 2 * MIB));
        let mut a = budget.try_take(MIB).unwrap();
        let b = budget.try_take(MIB).unwrap();
        let waiting = {
            let budget = budget.clone();
            tokio::spawn(async move {
                let mut b = b;
                budget
                    .grow(&mut b, 2 * MIB, Duration::from_secs(30))
                    .await
                    .map(|()| b.kib())
            })
        };
        // Whichever waits gives its part back first: both get the whole in turn (holding
        // and waiting, both would time out).
        budget
            .grow(&mut a, 2 * MIB, Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(a.kib(), 2048);
        drop(a);
        assert_eq!(waiting.await.unwrap(), Ok(2048));
    }
}
