//! CPU time used so far, by this thread, this process, the whole machine or the JVMs' JIT
//! compilers: what bronze's read logs part by part, and what the bench weighs bronze and its
//! limit (raw consume) by.

use std::time::Duration;

/// Whose CPU time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    Thread,
    Process,
    /// Every core's busy time (all but idle and I/O wait), every process's, from `/proc/stat`:
    /// the broker's JVM on the same cores among it. Kernel ticks, 10 ms each here.
    Machine,
    /// The JIT compiler threads of every JVM on the machine (the broker's; Spark's beside the
    /// bench): HotSpot's `C1 CompilerThread<n>` and `C2 CompilerThread<n>`, named in 15 bytes.
    /// A broker still compiling takes cores from whatever runs beside it. Threads that ended
    /// are not counted. Kernel ticks.
    JitCompilers,
}

/// The CPU time `clock` has counted so far; zero where it cannot be read.
pub fn used(clock: Clock) -> Duration {
    let id = match clock {
        Clock::Thread => libc::CLOCK_THREAD_CPUTIME_ID,
        Clock::Process => libc::CLOCK_PROCESS_CPUTIME_ID,
        Clock::Machine => return machine().map(ticks).unwrap_or_default(),
        Clock::JitCompilers => return ticks(jit_compilers()),
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

/// Kernel ticks as time.
fn ticks(n: u64) -> Duration {
    // SAFETY: sysconf reads a constant of the system and touches no memory of ours.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_nanos(n * 1_000_000_000 / per_second)
}

/// The machine's busy ticks: the `cpu` line of `/proc/stat` without its idle and iowait ticks.
fn machine() -> Option<u64> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    busy_ticks(stat.lines().next()?)
}

/// The ticks of every JIT compiler thread of every process, from `/proc/<pid>/task/<tid>/stat`.
fn jit_compilers() -> u64 {
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return 0;
    };
    processes
        .flatten()
        .filter(|p| {
            p.file_name()
                .as_encoded_bytes()
                .iter()
                .all(u8::is_ascii_digit)
        })
        .filter_map(|p| std::fs::read_dir(p.path().join("task")).ok())
        .flat_map(|tasks| tasks.flatten())
        .filter_map(|t| std::fs::read_to_string(t.path().join("stat")).ok())
        .filter_map(|stat| compiler_ticks(&stat))
        .sum()
}

/// A thread's user and system ticks from its `stat` line, if it is a JIT compiler thread. Its
/// name sits in parentheses and may hold spaces, so the fields are counted after the last `)`.
fn compiler_ticks(stat: &str) -> Option<u64> {
    let (head, rest) = stat.rsplit_once(')')?;
    let name = &head[head.find('(')? + 1..];
    if !(name.starts_with("C1 CompilerThre") || name.starts_with("C2 CompilerThre")) {
        return None;
    }
    // After the name: the state (field 3) and so on to utime (14) and stime (15).
    let mut fields = rest.split_ascii_whitespace().skip(11);
    let user: u64 = fields.next()?.parse().ok()?;
    let system: u64 = fields.next()?.parse().ok()?;
    Some(user + system)
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
    fn only_jit_compiler_threads_count_their_user_and_system_ticks() {
        let c2 = "812 (C2 CompilerThre) S 1 812 812 0 -1 1077936192 9 0 0 0 150 7 0 0 20 0";
        assert_eq!(compiler_ticks(c2), Some(157));
        let c1 = "813 (C1 CompilerThre) R 1 812 812 0 -1 1077936192 9 0 0 0 40 2 0 0 20 0";
        assert_eq!(compiler_ticks(c1), Some(42));
        let spaced = "814 (a (C2 CompilerThre) S 1 812 812 0 -1 1077936192 9 0 0 0 9 9 0 0";
        assert_eq!(compiler_ticks(spaced), None);
        let other = "815 (data-plane-kafk) S 1 812 812 0 -1 1077936192 9 0 0 0 900 70 0 0 20";
        assert_eq!(compiler_ticks(other), None);
        assert_eq!(compiler_ticks("816 (C1 CompilerThre) S 1"), None);
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
