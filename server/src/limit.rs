//! Keyed limits. Rates: how many requests of one kind a key (a client, a lab, a token id) may
//! make, at once and over time, in GCRA buckets from `governor` keyed by a BLAKE2 digest so a key
//! of any length costs the same small entry. Shares: how many places (a live stream, a
//! connection) a key may hold at once.

use std::collections::HashMap;
use std::hash::Hash;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use blake2::{Blake2s256, Digest};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota};

/// A rate: `burst` at once, then `per_second` (fractions allowed: 0.2 is one each 5 s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub burst: u32,
    pub per_second: f64,
}

/// Buckets of one rate, one per key.
pub struct Limit {
    rate: Rate,
    buckets: DefaultKeyedRateLimiter<[u8; 32]>,
    clock: DefaultClock,
}

/// Keys kept before idle ones are swept: a flood of new keys cannot grow the map for long.
const SWEEP_ABOVE: usize = 10_000;

impl Limit {
    pub fn new(rate: Rate) -> Self {
        let burst = NonZeroU32::new(rate.burst.max(1)).unwrap_or(NonZeroU32::MIN);
        let period = Duration::from_secs_f64(1.0 / rate.per_second.max(1e-6));
        let quota = Quota::with_period(period)
            .unwrap_or_else(|| Quota::per_second(NonZeroU32::MIN))
            .allow_burst(burst);
        Self {
            rate,
            buckets: DefaultKeyedRateLimiter::keyed(quota),
            clock: DefaultClock::default(),
        }
    }

    pub fn rate(&self) -> Rate {
        self.rate
    }

    /// Takes one request from the bucket of `key` (its parts, in order); `Err(wait)` when the
    /// bucket is empty, with how long until the next request is allowed.
    pub fn take(&self, key: &[&[u8]]) -> Result<(), Duration> {
        let mut digest = Blake2s256::new();
        for part in key {
            digest.update((part.len() as u64).to_le_bytes());
            digest.update(part);
        }
        if self.buckets.len() > SWEEP_ABOVE {
            self.buckets.retain_recent();
        }
        self.buckets
            .check_key(&digest.finalize().into())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }
}

/// Places held at once, by key: live streams by client, connections by address. A place is
/// given back when its [`Share`] drops, and a key holding none takes no room.
pub struct Shares<K: Eq + Hash + Clone>(Mutex<HashMap<K, usize>>);

impl<K: Eq + Hash + Clone> Default for Shares<K> {
    fn default() -> Self {
        Self(Mutex::default())
    }
}

/// One place of a key among its [`Shares`].
pub struct Share<K: Eq + Hash + Clone> {
    shares: Arc<Shares<K>>,
    key: K,
}

impl<K: Eq + Hash + Clone> Shares<K> {
    /// The places held, all keys together.
    pub fn held(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .sum()
    }

    /// A place for `key`, if it holds fewer than `most`.
    pub fn take(self: &Arc<Self>, key: K, most: usize) -> Option<Share<K>> {
        let mut held = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let places = held.entry(key.clone()).or_default();
        if *places >= most {
            return None;
        }
        *places += 1;
        Some(Share {
            shares: self.clone(),
            key,
        })
    }
}

impl<K: Eq + Hash + Clone> Drop for Share<K> {
    fn drop(&mut self) {
        let mut held = self.shares.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(places) = held.get_mut(&self.key) {
            *places -= 1;
            if *places == 0 {
                held.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_allows_its_burst_then_refuses_until_it_refills() {
        let limit = Limit::new(Rate {
            burst: 3,
            per_second: 1.0,
        });
        for _ in 0..3 {
            assert!(limit.take(&[b"ann"]).is_ok());
        }
        let wait = limit.take(&[b"ann"]).unwrap_err();
        assert!(
            wait > Duration::from_millis(900) && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(
            limit.take(&[b"bob"]).is_ok(),
            "another key has its own bucket"
        );
        assert!(
            limit.take(&[b"an", b"n"]).is_ok(),
            "keys are told apart by their parts, not their concatenation"
        );
    }
}
