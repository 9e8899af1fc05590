//! CPU time used so far, by this thread, this process or the whole machine: what bronze's read
//! logs part by part, and what the bench weighs bronze and its limit (raw consume) by.

use std::time::Duration;

/// Whose CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Thread,
    Process,
    /// Every core's busy time (all but idle and I/O wait), every process's, from `/proc/stat`:
    /// the broker's JVM on the same cores among it. Kernel ticks, 10 ms each here.
    Machine,
}

/// The CPU time `clock` has counted so far; zero where it cannot be read.
pub fn used(clock: Clock) -> Duration {
    let id = match clock {
        Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        Clock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
        Clock::Machine => return machine().unwrap_or_default(),
    };
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill; the clock ids are always present.
    if unsafe { libc::clock_gettime(id, &mut t) } != 0 {
        return Duration::ZERO;
    }
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The machine's busy time: the `cpu` line of `/proc/stat` without its idle and iowait ticks.
fn machine() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    busy_ticks(stat.lines().next()?).map(|ticks| {
        // SAFETY: sysconf reads a constant of the system and touches no memory of ours.
        let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
        Duration::from_nanos(ticks * 1_000_000_000 / per_second)
    })
}

/// The busy ticks of `/proc/stat`'s `cpu` line: user, nice, system, irq, softirq and steal
/// (guest time is inside user already); idle and iowait left out.
fn busy_ticks(line: &str) -> Option<u64> {
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let [user, nice, system, _idle, _iowait, irq, softirq, steal] = ticks[..] else {
        return None;
    };
    Some(user + nice + system + irq + softirq + steal)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_line_counts_busy_ticks_only() {
        let line = "cpu  10 2 30 4000 50 6 7 8 100 0";
        assert_eq!(busy_ticks(line), Some(10 + 2 + 30 + 6 + 7 + 8));
        assert_eq!(busy_ticks("cpu0 1 1 1 1 1 1 1 1"), None);
        assert_eq!(busy_ticks("cpu 1 2"), None);
    }

    #[test]
    fn each_clock_moves_while_this_thread_works() {
        let before: Vec<_> = [Clock::Thread, Clock::Process, Clock::Machine]
            .map(used)
            .into();
        let started = std::time::Instant::now();
        let mut x = 0u64;
        // 30 ms of work: three of the machine's 10 ms ticks at least.
        while started.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        for (clock, before) in [Clock::Thread, Clock::Process, Clock::Machine]
            .into_iter()
            .zip(before)
        {
            assert!(used(clock) > before, "{clock:?} did not move");
        }
    }
}
