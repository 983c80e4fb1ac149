//! Test support: the xorshift64 generator the parser's randomized equivalence tests draw
//! their inputs from. Seeded and dependency-free, so a failing input is the same on every
//! run and machine; each test keeps its own seed.

/// Marsaglia's xorshift64 (shifts 13, 7, 17).
pub(crate) struct Xorshift(u64);

impl Xorshift {
    /// A generator from `seed` (not zero: zero stays zero).
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next draw in `0..n` (`n` > 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }
}
