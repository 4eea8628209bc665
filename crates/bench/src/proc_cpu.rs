//! CPU time of processes, from `/proc/<pid>/stat`: what the benchmarks divide by events to
//! give µs per event for sleet, the Kafka broker and the producer separately.

/// User plus system CPU seconds `pid` has used so far; `None` if it is gone (or not Linux).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after_name = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // SAFETY: sysconf has no preconditions.
    let per_second = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    Some(ticks as f64 / per_second.max(1) as f64)
}

/// The sum over `pids`, counting processes that are gone as zero.
pub fn total_cpu_seconds(pids: &[u32]) -> f64 {
    pids.iter().filter_map(|pid| cpu_seconds(*pid)).sum()
}

/// The process of the Kafka broker listening on `port` on this machine, if one runs: a
/// `kafka.Kafka` JVM whose properties file names that listener.
pub fn find_kafka_broker(port: u16) -> Option<u32> {
    let listener = format!("127.0.0.1:{port}");
    std::fs::read_dir("/proc").ok()?.filter_map(Result::ok).find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        let args: Vec<String> =
            cmdline.split(|byte| *byte == 0).map(|arg| String::from_utf8_lossy(arg).into_owned()).collect();
        let main = args.iter().position(|arg| arg == "kafka.Kafka")?;
        let properties = std::fs::read_to_string(args.get(main + 1)?).ok()?;
        properties.lines().any(|line| line.starts_with("listeners=") && line.contains(&listener)).then_some(pid)
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
