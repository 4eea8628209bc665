//! What the machine offers a benchmark run (`sleet_clarity::HostCapacity`): its cores, how
//! busy the whole host was while the run was measured (`/proc/stat`), and how fast one core
//! runs while every core is busy, from a calibration loop (decoding ysb events) run before
//! the cluster starts.
//! The what-if model needs these because the monotask records see only the job's threads.

use std::sync::{Arc, Barrier};

use sleet_clarity::{HostCapacity, MapTaskFixedCost};
use sleet_connectors::ysb::{event_schema, YsbGenerator};
use sleet_exec::json::JsonDecoder;
use sleet_exec::RawRecords;
use sleet_plan::YsbSourceSpec;

use crate::ysb_job::YSB_RECORD_BYTES_MAX;

/// Calibration rounds; the median of their ratios is the answer, so that one round that a
/// neighbour's burst slowed does not set it.
const CALIBRATION_ROUNDS: usize = 7;
/// CPU time one calibration pass aims at: long enough to dwarf a clock read and a thread
/// start, short enough that all rounds take a fraction of a second.
const CALIBRATION_PASS_NS: u64 = 15_000_000;
/// Events each calibration thread decodes per pass: a third of a ysb map task's input at
/// 300 000 events/s in 100 ms batches, so a pass meets the caches as a task's decoding does.
const CALIBRATION_EVENTS: u64 = 10_000;

/// The cores the host schedules threads on; 1 if it cannot say.
pub fn host_cores() -> u32 {
    std::thread::available_parallelism().map_or(1, |cores| cores.get() as u32)
}

/// Busy and total time of all cores so far, in clock ticks (`/proc/stat`'s first line).
#[derive(Debug, Clone, Copy)]
pub struct HostTicks {
    busy: u64,
    total: u64,
}

impl HostTicks {
    /// `None` where `/proc/stat` is missing or unreadable (not Linux).
    pub fn now() -> Option<HostTicks> {
        use procfs::CurrentSI;
        Some(HostTicks::of(&procfs::KernelStats::current().ok()?.total))
    }

    /// Busy is everything but idle and iowait. Steal (time the hypervisor gave the vCPU to
    /// someone else) counts as busy: it is load on the host that the job has to share.
    fn of(all_cores: &procfs::CpuTime) -> HostTicks {
        let [irq, softirq, steal, iowait] =
            [all_cores.irq, all_cores.softirq, all_cores.steal, all_cores.iowait].map(|ticks| ticks.unwrap_or(0));
        let busy = all_cores.user + all_cores.nice + all_cores.system + irq + softirq + steal;
        HostTicks { busy, total: busy + all_cores.idle + iowait }
    }

    /// Mean busy cores from `self` to `later`, out of `cores`.
    pub fn busy_cores_until(&self, later: &HostTicks, cores: u32) -> Option<f64> {
        let total = later.total.checked_sub(self.total).filter(|&ticks| ticks > 0)?;
        let busy = later.busy.saturating_sub(self.busy);
        Some(busy as f64 / total as f64 * f64::from(cores))
    }
}

/// A measured run's host figures: the ticks at the start of the measured part, then the
/// capacity once it ends.
pub struct HostMeter {
    cores: u32,
    all_busy_core_speed: f64,
    link_bytes_per_s: Option<f64>,
    map_task_fixed: Option<MapTaskFixedCost>,
    from: Option<HostTicks>,
}

impl HostMeter {
    /// Calibrates the cores' speed now (before the cluster starts, so the loop runs on an
    /// otherwise quiet host); `start` marks the measured part's start later.
    pub fn calibrated() -> HostMeter {
        let cores = host_cores();
        HostMeter {
            cores,
            all_busy_core_speed: all_busy_core_speed(cores),
            link_bytes_per_s: loopback_link_bytes_per_s(),
            map_task_fixed: None,
            from: None,
        }
    }

    /// Adds the job's calibrated fixed cost per source task (`crate::task_calibration`).
    pub fn with_map_task_fixed(self, map_task_fixed: Option<MapTaskFixedCost>) -> HostMeter {
        HostMeter { map_task_fixed, ..self }
    }

    /// Marks the start of the measured part; later calls keep the first mark.
    pub fn start(&mut self) {
        if self.from.is_none() {
            self.from = HostTicks::now();
        }
    }

    /// The host's capacity from the mark to now; `None` without a mark or `/proc/stat`.
    pub fn finish(&self) -> Option<HostCapacity> {
        let busy_cores = self.from?.busy_cores_until(&HostTicks::now()?, self.cores)?;
        Some(HostCapacity {
            cores: self.cores,
            busy_cores,
            all_busy_core_speed: self.all_busy_core_speed,
            link_bytes_per_s: self.link_bytes_per_s,
            map_task_fixed: self.map_task_fixed,
        })
    }
}

/// Bytes of one link calibration transfer: enough that its round trips and the thread start
/// are noise beside the bytes' time.
const LINK_CALIBRATION_BYTES: usize = 64 << 20;
const LINK_CALIBRATION_CHUNK: usize = 1 << 20;
const LINK_CALIBRATION_ROUNDS: usize = 3;

/// Bytes/s of one TCP connection over loopback between two threads, the median of a few
/// transfers: the link the workers of a local cluster shuffle over. `None` when loopback
/// cannot be used.
pub fn loopback_link_bytes_per_s() -> Option<f64> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
    let mut rates: Vec<f64> = (0..LINK_CALIBRATION_ROUNDS).filter_map(|_| one_transfer(&listener)).collect();
    rates.sort_by(f64::total_cmp);
    rates.get(rates.len() / 2).copied()
}

fn one_transfer(listener: &std::net::TcpListener) -> Option<f64> {
    use std::io::{Read, Write};
    let address = listener.local_addr().ok()?;
    let started = std::time::Instant::now();
    let sender = std::thread::spawn(move || -> std::io::Result<()> {
        let mut stream = std::net::TcpStream::connect(address)?;
        let chunk = vec![0x5a_u8; LINK_CALIBRATION_CHUNK];
        for _ in 0..LINK_CALIBRATION_BYTES / LINK_CALIBRATION_CHUNK {
            stream.write_all(&chunk)?;
        }
        Ok(())
    });
    let (mut stream, _) = listener.accept().ok()?;
    let mut buffer = vec![0_u8; LINK_CALIBRATION_CHUNK];
    let mut received = 0;
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => received += read,
            Err(_) => return None,
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    sender.join().ok()?.ok()?;
    (received == LINK_CALIBRATION_BYTES && elapsed > 0.0).then(|| received as f64 / elapsed)
}

/// One core's speed with all `cores` running the calibration loop, relative to one running
/// it alone: the median over rounds of (one alone's cpu time ÷ the mean cpu time of `cores`
/// at once) for the same passes. Thread cpu time, not wall time, so that other load on the
/// host (which `HostCapacity::busy_cores` counts) does not count twice.
pub fn all_busy_core_speed(cores: u32) -> f64 {
    if cores <= 1 {
        return 1.0;
    }
    let passes = passes_for(CALIBRATION_PASS_NS);
    let mut ratios: Vec<f64> = (0..CALIBRATION_ROUNDS)
        .filter_map(|_| {
            let alone = timed_passes(passes);
            let together = run_together(cores as usize, passes);
            let mean = together.iter().sum::<f64>() / together.len() as f64;
            (alone > 0.0 && mean > 0.0).then(|| (alone / mean).min(1.0))
        })
        .collect();
    ratios.sort_by(f64::total_cmp);
    ratios.get(ratios.len() / 2).copied().unwrap_or(1.0)
}

/// The passes whose cpu time is about `target_ns` on one core alone.
fn passes_for(target_ns: u64) -> u32 {
    let one = timed_passes(1).max(1.0);
    ((target_ns as f64 / one).round() as u32).max(1)
}

/// `cores` threads, released together, each running `passes`; their cpu times in ns.
fn run_together(cores: usize, passes: u32) -> Vec<f64> {
    let barrier = Arc::new(Barrier::new(cores));
    let threads: Vec<_> = (0..cores)
        .map(|_| {
            let barrier = Arc::clone(&barrier);
            std::thread::spawn(move || {
                barrier.wait();
                timed_passes(passes)
            })
        })
        .collect();
    threads.into_iter().filter_map(|thread| thread.join().ok()).collect()
}

/// Cpu time of this thread, in ns, for `passes` of decoding generated ysb events (made
/// before the clock starts). The loop is the engine's own JSON decoder on the benchmarks'
/// own events, because how much a busy neighbour core slows a core depends on the work: a
/// loop bound by one chain of dependent instructions barely notices a neighbour that shares
/// its physical core (a VM's vCPUs may be two hardware threads of one), while decoding,
/// which keeps many instructions in flight, ran a third slower here with both cores busy.
fn timed_passes(passes: u32) -> f64 {
    let spec =
        YsbSourceSpec { seed: 7, rate_per_s: CALIBRATION_EVENTS, partitions: 1, bad_fraction: 0.0, pre_decoded: false };
    let mut events = RawRecords::new();
    YsbGenerator::new(&spec, 0).generate(0, 1_000, &mut events);
    let decoder = JsonDecoder::new(
        &event_schema(),
        &["ad_id".into(), "event_type".into(), "event_time".into()],
        YSB_RECORD_BYTES_MAX,
    )
    .expect("the ysb event schema holds the decoded columns");
    let start = thread_cpu_ns();
    for _ in 0..passes {
        std::hint::black_box(decoder.decode(std::hint::black_box(&events)));
    }
    thread_cpu_ns() - start
}

fn thread_cpu_ns() -> f64 {
    let mut now = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `now` is a valid timespec to write to; this clock exists on every Linux.
    let status = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "reading this thread's cpu clock");
    now.tv_sec as f64 * 1e9 + now.tv_nsec as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The all-cores line of `/proc/stat` as procfs reads it.
    fn ticks(cpu_line: &str) -> HostTicks {
        use procfs::FromBufReadSI;
        let stat = format!("{cpu_line}\ncpu0 1 2 3 4 5 6 7 8 0 0\nctxt 1\nbtime 1\nprocesses 1\n");
        let stats = procfs::KernelStats::from_buf_read(stat.as_bytes(), procfs::current_system_info()).expect("parses");
        HostTicks::of(&stats.total)
    }

    #[test]
    fn busy_is_all_but_idle_and_iowait() {
        let before = ticks("cpu  100 0 50 1000 10 0 5 5 0 0");
        let after = ticks("cpu  250 0 100 1200 20 0 10 10 0 0");
        // Busy 160 → 370 (+210) of total 1170 → 1590 (+420): half the time, on 2 cores.
        let busy = before.busy_cores_until(&after, 2).expect("ticks passed");
        assert!((busy - 1.0).abs() < 1e-12, "{busy}");
        assert!(before.busy_cores_until(&before, 2).is_none(), "no time passed");
        assert!(HostTicks::now().is_some(), "this machine has a /proc/stat");
    }

    #[test]
    fn the_loopback_link_carries_bytes() {
        let rate = loopback_link_bytes_per_s().expect("loopback works here");
        // Any machine that runs the tests moves more than 1 MB/s over loopback; the figure
        // only has to be a rate, not a particular one.
        assert!(rate > 1e6 && rate.is_finite(), "{rate}");
    }

    #[test]
    fn calibration_gives_a_speed_in_range() {
        let speed = all_busy_core_speed(2);
        assert!(speed > 0.0 && speed <= 1.0, "{speed}");
        assert_eq!(all_busy_core_speed(1), 1.0);
    }
}
