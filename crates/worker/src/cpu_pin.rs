//! Pinning a worker to cores of its own (`sleet worker --cpus 0-1`).
//!
//! Workers that share a host all close a batch at the same instant, so their threads wake
//! together, and the kernel may place two of them on one core while another sits idle: the
//! idle core pulls one over only at its next balancing pass, milliseconds later. With two
//! one-core workers sharing a two-core host, some batches ran both tasks on one core and took
//! far longer than the rest, and a worker's event loop waited behind the other worker's task
//! before it could start its own (measured, see docs/experiments/2026-11-27-comment-figures.md).
//! A worker pinned to its own cores meets neither; the price is that it cannot borrow a core
//! its neighbour leaves idle.

use std::io;

/// A set of cpus, in order, no repeats: one command-line value (`parse_cpu_list`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList(pub Vec<usize>);

impl std::str::FromStr for CpuList {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        parse_cpu_list(text).map(CpuList)
    }
}

/// Parses a cpu list as `taskset` and `/sys` write it: `0-3,6,8-9`. Sorted, no repeats.
pub fn parse_cpu_list(text: &str) -> Result<Vec<usize>, String> {
    let mut cpus = Vec::new();
    for item in text.split(',').map(str::trim) {
        let number = |part: &str| {
            part.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{item}` in cpu list `{text}` is not a cpu number or range"))
        };
        match item.split_once('-') {
            Some((first, last)) => {
                let (first, last) = (number(first)?, number(last)?);
                if first > last {
                    return Err(format!("the range `{item}` in cpu list `{text}` runs backwards"));
                }
                cpus.extend(first..=last);
            }
            None => cpus.push(number(item)?),
        }
    }
    if cpus.iter().any(|&cpu| cpu >= libc::CPU_SETSIZE as usize) {
        return Err(format!("cpu list `{text}` names a cpu beyond {}", libc::CPU_SETSIZE - 1));
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Restricts the calling thread, and every thread it starts afterwards, to `cpus`.
pub fn pin_this_thread(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: a zeroed cpu_set_t is the empty set; CPU_SET only writes bits within it
    // (`parse_cpu_list` keeps numbers below CPU_SETSIZE, `allowed_cpus` reads them from one).
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("cpu {cpu} is beyond the cpu set")));
        }
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: pid 0 is the calling thread; `set` is a valid cpu_set_t of the size passed.
    let status = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    if status == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The cpus the calling thread may run on (its affinity, which a container's cpuset also
/// narrows), in order.
pub fn allowed_cpus() -> io::Result<Vec<usize>> {
    // SAFETY: as in `pin_this_thread`; the kernel fills `set`.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let status = unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    if status != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((0..libc::CPU_SETSIZE as usize).filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) }).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists_parse_as_taskset_writes_them() {
        assert_eq!(parse_cpu_list("0-3,6,8-9"), Ok(vec![0, 1, 2, 3, 6, 8, 9]));
        assert_eq!(parse_cpu_list("1,0,1"), Ok(vec![0, 1]));
        assert_eq!(parse_cpu_list("2"), Ok(vec![2]));
        assert_eq!(parse_cpu_list("3-1"), Err("the range `3-1` in cpu list `3-1` runs backwards".to_string()));
        assert_eq!(parse_cpu_list("0,x"), Err("`x` in cpu list `0,x` is not a cpu number or range".to_string()));
        assert_eq!(parse_cpu_list(""), Err("`` in cpu list `` is not a cpu number or range".to_string()));
        assert!(parse_cpu_list("0-99999").is_err());
    }

    #[test]
    fn a_thread_pinned_to_one_allowed_cpu_runs_only_there() {
        let allowed = allowed_cpus().expect("reading this thread's affinity");
        assert!(!allowed.is_empty());
        let first = allowed[0];
        let seen = std::thread::spawn(move || {
            pin_this_thread(&[first]).expect("pinning to an allowed cpu");
            let child = std::thread::spawn(allowed_cpus).join().expect("child thread");
            (allowed_cpus().expect("own affinity"), child.expect("child's affinity"))
        })
        .join()
        .expect("pinned thread");
        assert_eq!(seen, (vec![first], vec![first]), "the thread and the thread it started");
    }
}
