//! Median-of-N wall-clock timing for the summary table.
//!
//! Criterion (in `benches/`) gives the statistically careful per-bench figures; the table needs
//! dozens of contenders side by side in one run, with a time budget per figure so the
//! quadratic baselines cannot stall it, hence this small harness.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// A timed figure: the median of `reps` runs, and what the last run returned.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub median: Duration,
    pub reps: usize,
    /// The measured function's result (calls found), to check contenders did the same work.
    pub result: usize,
}

impl Sample {
    /// Throughput in MB/s (10^6 bytes per second) for `bytes` of input.
    pub fn mb_per_s(&self, bytes: usize) -> f64 {
        bytes as f64 / self.median.as_secs_f64().max(1e-12) / 1e6
    }
}

/// Runs `f` once to warm up, then as many times as fit in `budget` (at least 3, at most 101,
/// just once more when one run exceeds the budget) and returns the median.
pub fn measure(budget: Duration, mut f: impl FnMut() -> usize) -> Sample {
    let start = Instant::now();
    let mut result = black_box(f());
    let first = start.elapsed();
    if first >= budget {
        return Sample {
            median: first,
            reps: 1,
            result,
        };
    }
    let reps = (budget.as_secs_f64() / first.as_secs_f64().max(1e-9)).clamp(3.0, 101.0) as usize;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let t = Instant::now();
        result = black_box(f());
        times.push(t.elapsed());
    }
    times.sort_unstable();
    Sample {
        median: times.get(times.len() / 2).copied().unwrap_or(first),
        reps,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // No assertion here depends on how fast the machine is: the budgets are chosen so that
    // the branch taken is the same on any machine (a run always takes at least zero time and
    // far less than an hour), and a run that sleeps 2 ms never takes less than 2 ms.
    #[test]
    fn median_tracks_the_work() {
        let s = measure(Duration::from_secs(3600), || {
            std::thread::sleep(Duration::from_millis(2));
            7
        });
        assert_eq!(s.result, 7);
        assert_eq!(s.reps, 101);
        assert!(s.median >= Duration::from_millis(2));
        assert!(s.mb_per_s(2_000) < 1.0 + 1e-9);
    }

    #[test]
    fn a_run_longer_than_the_budget_is_measured_once() {
        let s = measure(Duration::ZERO, || 3);
        assert_eq!((s.result, s.reps), (3, 1));
    }
}
