//! Uploads per second from one client address (`ntdbg collect --rate-limit`): a crash loop
//! on one machine, or a flood, is answered `429 Too Many Requests` with `Retry-After` instead of
//! filling the store. GCRA per address through `governor`.

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Checks between two prunings of addresses that have been quiet long enough to forget.
const PRUNE_EVERY: u64 = 4096;

/// A limit on uploads per second per client address (none when built with 0).
pub struct RateLimit {
    limiter: Option<DefaultKeyedRateLimiter<IpAddr>>,
    checks: AtomicU64,
}

impl std::fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RateLimit")
            .field("limited", &self.limiter.is_some())
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// `per_second` uploads a second from one address, in bursts of up to `burst` (0: no
    /// limit).
    pub fn new(per_second: u32, burst: u32) -> RateLimit {
        let limiter = NonZeroU32::new(per_second).map(|rate| {
            let burst = NonZeroU32::new(burst.max(per_second)).unwrap_or(rate);
            RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst))
        });
        RateLimit {
            limiter,
            checks: AtomicU64::new(0),
        }
    }

    /// Whether an upload from `ip` may go on now; otherwise how long to wait.
    pub fn check(&self, ip: IpAddr) -> Result<(), Duration> {
        let Some(limiter) = &self.limiter else {
            return Ok(());
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % PRUNE_EVERY == PRUNE_EVERY - 1 {
            limiter.retain_recent();
        }
        limiter
            .check_key(&ip)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_address_is_held_back_others_are_not() {
        let limit = RateLimit::new(1, 3);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let b: IpAddr = "192.0.2.2".parse().unwrap();
        for _ in 0..3 {
            assert!(limit.check(a).is_ok());
        }
        let wait = limit.check(a).unwrap_err();
        assert!(
            wait > Duration::ZERO && wait <= Duration::from_secs(1),
            "{wait:?}"
        );
        assert!(limit.check(b).is_ok());
        let off = RateLimit::new(0, 0);
        for _ in 0..100 {
            assert!(off.check(a).is_ok());
        }
    }
}
