//! Benchmarks of toolcall's parser against its baselines.
//!
//! This crate owns the benchmark corpus ([`corpus`], generated from a fixed seed), the
//! adapters that drive each contender the same way ([`ours`] for toolcall's one-shot, streamed
//! and re-parse-on-every-push modes, [`peers`] for the SGLang gateway's `tool-parser` behind
//! the `peers` feature), a small timing harness ([`timing`]) and a counting allocator
//! ([`alloc`]) for peak-memory figures. The criterion benches live in `benches/`; the
//! `bench_table` binary prints the summary tables of `BENCHMARKS.md`.

pub mod alloc;
pub mod corpus;
pub mod ours;
#[cfg(feature = "peers")]
pub mod peers;
pub mod timing;
