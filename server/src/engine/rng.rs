//! A small deterministic generator (xorshift64*): the same workload, example or scenario on every
//! machine and every run, which a seeded general-purpose generator does not promise across
//! versions.

pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// True `p` times in 100.
    pub fn percent(&mut self, p: u64) -> bool {
        self.below(100) < p
    }
}
