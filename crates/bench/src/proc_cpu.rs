//! CPU time of processes, from `/proc/<pid>/stat`: what the benchmarks divide by events to
//! give µs per event for sleet, the Kafka broker and the producer separately.

use procfs::process::{all_processes, Process};

/// User plus system CPU seconds `pid` has used so far; `None` if it is gone (or not Linux).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = Process::new(i32::try_from(pid).ok()?).ok()?.stat().ok()?;
    Some((stat.utime + stat.stime) as f64 / procfs::ticks_per_second().max(1) as f64)
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

    #[test]
    fn this_process_has_used_some_cpu_and_a_missing_one_none() {
        let spin = std::time::Instant::now();
        let mut x = 0u64;
        while spin.elapsed() < std::time::Duration::from_millis(50) {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        assert!(cpu_seconds(std::process::id()).expect("own stat") > 0.0, "{x}");
        assert_eq!(cpu_seconds(u32::MAX), None);
    }
}
