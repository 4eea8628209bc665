//! CPU time of processes: what the benchmarks divide by events to give µs per event for
//! sleet, the Kafka broker and the producer separately, and what `bench console` holds to a
//! 1 % budget.
//!
//! Read from each process's CPU-time clock (`clock_getcpuclockid`), the kernel's exact sum
//! over its threads, those that exited included. Not `/proc/<pid>/stat`: that counts whole
//! 10 ms ticks, scaled from sampled ticks, so it can stray from the true figure by more than
//! a tick, and the driver of a 10 ms-batch job uses only a few tens of ms a second.

use procfs::process::all_processes;

/// User plus system CPU seconds `pid` has used so far; `None` if it is gone.
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    // The clock id packs the pid shifted left by 3 into an int: a larger one would wrap to
    // another process's clock, or this one's. (Linux's pids stay below 2^22.)
    if pid >= 1 << 28 {
        return None;
    }
    let pid = libc::pid_t::try_from(pid).ok()?;
    let mut clock: libc::clockid_t = 0;
    // SAFETY: the call writes one clockid_t through a pointer to a live local.
    if unsafe { libc::clock_getcpuclockid(pid, &mut clock) } != 0 {
        return None;
    }
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: the call writes one timespec through a pointer to a live local.
    if unsafe { libc::clock_gettime(clock, &mut now) } != 0 {
        return None;
    }
    Some(now.tv_sec as f64 + now.tv_nsec as f64 / 1e9)
}

/// The sum over `pids`, counting processes that are gone as zero.
pub fn total_cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|pid| cpu_seconds(*pid)).sum()
}

/// The process of the Kafka broker listening on `port` on this machine, if one runs: a
/// `kafka.Kafka` JVM whose properties file names that listener.
pub fn find_kafka_broker(port: u16) -> Option<u32> {
    let listener = format!("127.0.0.1:{port}");
    all_processes().ok()?.filter_map(Result::ok).find_map(|process| {
        let args = process.cmdline().ok()?;
        let main = args.iter().position(|arg| arg == "kafka.Kafka")?;
        let properties = std::fs::read_to_string(args.get(main + 1)?).ok()?;
        let listens = properties.lines().any(|line| line.starts_with("listeners=") && line.contains(&listener));
        listens.then_some(process.pid as u32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn this_thread_cpu_seconds() -> f64 {
        let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: the call writes one timespec through a pointer to a live local.
        assert_eq!(unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) }, 0);
        now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
    }

    #[test]
    fn this_process_counts_the_cpu_its_thread_spent_and_a_missing_one_is_none() {
        let own = std::process::id();
        let (before, wall) = (cpu_seconds(own).expect("own clock"), std::time::Instant::now());
        // Spin until this thread alone has used 50 ms of CPU, however often it is preempted.
        let spun_from = this_thread_cpu_seconds();
        let mut x = 0u64;
        while this_thread_cpu_seconds() - spun_from < 0.05 {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        let used = cpu_seconds(own).expect("own clock") - before;
        // At least this thread's 50 ms (the other test threads' only add), and no more than
        // every core busy for the whole wall time.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        assert!(used >= 0.05, "the process clock moved {used} s while one of its threads spun 0.05 s ({x})");
        assert!(
            used <= wall.elapsed().as_secs_f64() * cores + 1e-3,
            "{used} s in {:?} on {cores} cores",
            wall.elapsed()
        );
        // Linux's largest pid_max is 2^22, so no process has that id; a larger id would wrap.
        assert_eq!(cpu_seconds(1 << 22), None);
        assert_eq!(cpu_seconds(i32::MAX as u32), None);
        assert_eq!(cpu_seconds(u32::MAX), None);
    }
}
