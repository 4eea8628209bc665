//! Resident memory of a cluster's processes over a run: each one's RSS once a second, and its
//! peak, so a result says how much memory sleet needed and whether it kept growing. The peak is
//! the larger of the kernel's high-water mark (`VmHWM`, which sees a peak between two samples
//! once the memory is unmapped) and the samples themselves (the mark lags a peak that is still
//! mapped).

use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;
use serde_json::json;

const SAMPLE_EVERY: Duration = Duration::from_secs(1);
/// Memory a process needs to get going (its first batches, its buffers filling) is not growth:
/// what follows this is compared with the RSS at its end.
const SETTLING: usize = 60;

/// One process's memory over the run, in MB (10^6 bytes).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ProcessMemory {
    pub role: String,
    pub pid: u32,
    /// The highest RSS the process reached up to the last sample; `None` if it could not be read.
    pub peak_rss_mb: Option<f64>,
    /// RSS at each second of the run, from the first sample.
    pub rss_mb: Vec<f64>,
}

impl ProcessMemory {
    fn sample(&mut self) {
        if let Some((rss_mb, mark_mb)) = read_memory(self.pid) {
            self.rss_mb.push(rss_mb);
            self.raise_peak(rss_mb.max(mark_mb));
        }
    }

    fn raise_peak(&mut self, mb: f64) {
        self.peak_rss_mb = Some(self.peak_rss_mb.map_or(mb, |peak| peak.max(mb)));
    }

    /// The largest RSS after the first minute over the RSS at its end; `None` for runs of a
    /// minute or less.
    pub fn growth_after_first_minute(&self) -> Option<f64> {
        let settled = *self.rss_mb.get(SETTLING - 1)?;
        let later = self.rss_mb[SETTLING..].iter().copied().reduce(f64::max)?;
        (settled > 0.0).then(|| later / settled)
    }
}

/// Samples the memory of `processes` (a role and a pid each) on a thread of its own until
/// `finish`.
pub struct MemoryWatch {
    stop: mpsc::Sender<()>,
    thread: JoinHandle<Vec<ProcessMemory>>,
}

impl MemoryWatch {
    /// Watches a local cluster's driver and the workers it started with.
    pub fn of_cluster(cluster: &sleet_cli::cluster::LocalCluster) -> Result<MemoryWatch> {
        let pids = cluster.pids();
        let roles =
            std::iter::once("driver".to_string()).chain((1..pids.len()).map(|worker| format!("worker-{worker}")));
        MemoryWatch::start(roles.zip(pids).collect())
    }

    pub fn start(processes: Vec<(String, u32)>) -> Result<MemoryWatch> {
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("memory-watch".into())
            .spawn(move || {
                let mut watched: Vec<ProcessMemory> = processes
                    .into_iter()
                    .map(|(role, pid)| ProcessMemory { role, pid, peak_rss_mb: None, rss_mb: Vec::new() })
                    .collect();
                loop {
                    for process in &mut watched {
                        process.sample();
                    }
                    match stopped.recv_timeout(SAMPLE_EVERY) {
                        Err(RecvTimeoutError::Timeout) => {}
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                // One more at the end: the peak is read last while the processes still run.
                for process in &mut watched {
                    if let Some((_, mark_mb)) = read_memory(process.pid) {
                        process.raise_peak(mark_mb);
                    }
                }
                watched
            })
            .context("starting the memory watch's thread")?;
        Ok(MemoryWatch { stop, thread })
    }

    /// Stops sampling (call it while the processes still run, so their peaks are read) and
    /// returns what was seen.
    pub fn finish(self) -> Result<Vec<ProcessMemory>> {
        let MemoryWatch { stop, thread } = self;
        let _ = stop.send(());
        thread.join().map_err(|_| anyhow!("the memory watch's thread panicked"))
    }
}

/// The `memory` section of a result.
pub fn memory_json(processes: &[ProcessMemory]) -> serde_json::Value {
    let peaks: Vec<f64> = processes.iter().filter_map(|process| process.peak_rss_mb).collect();
    let growth: Vec<serde_json::Value> = processes
        .iter()
        .map(|process| json!({ "role": process.role, "growth": process.growth_after_first_minute() }))
        .collect();
    json!({
        "definition": "resident set size of sleet's driver and workers (MB = 10^6 bytes): each one's peak (the larger of the kernel's high-water mark VmHWM and the samples), and its RSS once a second; growth is the largest RSS after the first minute over the RSS at the first minute's end (runs longer than a minute)",
        "peak_rss_mb_sum": (peaks.len() == processes.len()).then(|| peaks.iter().sum::<f64>()),
        "processes": processes,
        "growth_after_first_minute": growth,
    })
}

/// RSS and peak RSS of `pid` in MB, or `None` if it is gone.
fn read_memory(pid: u32) -> Option<(f64, f64)> {
    let status = procfs::process::Process::new(i32::try_from(pid).ok()?).ok()?.status().ok()?;
    // The kernel gives both in kB.
    let megabytes = |kilobytes: u64| kilobytes as f64 * 1024.0 / 1e6;
    Some((megabytes(status.vmrss?), megabytes(status.vmhwm?)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_sampled_and_its_peak_covers_memory_it_touched_and_freed() {
        let watch = MemoryWatch::start(vec![("self".into(), std::process::id())]).expect("starts");
        // 64 MB touched page by page and freed before the next sample: only the peak sees it.
        let touched = vec![1u8; 64 << 20];
        let sum: u64 = touched.iter().step_by(4096).map(|byte| u64::from(*byte)).sum();
        drop(touched);
        let seen = watch.finish().expect("finishes");
        assert_eq!(seen.len(), 1);
        let me = &seen[0];
        assert!(!me.rss_mb.is_empty(), "sampled at least once at its start");
        let peak = me.peak_rss_mb.expect("a peak");
        assert!(peak >= 64.0 * 1.048_576 * 0.9, "peak {peak} MB after touching 64 MiB ({sum} pages)");
        assert!(me.rss_mb.iter().all(|rss| *rss <= peak), "{me:?}");
    }

    #[test]
    fn a_process_that_is_gone_has_no_figures_and_no_sum_is_made_without_it() {
        let seen = vec![ProcessMemory { role: "gone".into(), pid: u32::MAX, peak_rss_mb: None, rss_mb: vec![] }];
        assert_eq!(read_memory(u32::MAX), None);
        assert!(memory_json(&seen)["peak_rss_mb_sum"].is_null());
    }

    #[test]
    fn growth_compares_the_rest_of_the_run_with_the_end_of_its_first_minute() {
        let mut rss_mb: Vec<f64> = (0..60).map(|second| 10.0 + second as f64).collect();
        assert_eq!(
            ProcessMemory { role: "w".into(), pid: 1, peak_rss_mb: None, rss_mb: rss_mb.clone() }
                .growth_after_first_minute(),
            None
        );
        rss_mb.extend([70.0, 75.0, 69.0]);
        let process = ProcessMemory { role: "w".into(), pid: 1, peak_rss_mb: Some(75.0), rss_mb };
        assert_eq!(process.growth_after_first_minute(), Some(75.0 / 69.0));
    }
}
