//! The machine under the job: how many cores it has, how busy the rest of it kept them, and
//! how fast one core runs while its neighbours are busy. The ideal-time model divides cpu
//! work by the job's cores as if each were a whole, free core; on a small host it is not,
//! and the monotask records alone cannot show it (they see their own threads, not the host).
//!
//! ```text
//!  cpu work per monotask, relative to one core alone on an idle host:
//!
//!    time_factor(n) = sharing(n) ÷ speed(n)         n = job cores + other busy cores
//!    sharing(n)     = max(1, n ÷ host cores)        runnable threads beyond the cores take turns
//!    speed(n)       = 1 − (1 − s) × (min(n, H) − 1) ÷ (H − 1)
//!                                                   s: a core's speed with all H busy
//! ```
//!
//! A what-if that changes the job's cores scales its cpu work by
//! `time_factor(new) ÷ time_factor(baseline)`, so the baseline's own figure is unchanged.

use serde::{Deserialize, Serialize};

/// The slowest all-busy core speed the model takes at face value; a calibration below it
/// measured something other than the cores (a host swapping, another job's burst).
const CORE_SPEED_MIN: f64 = 0.05;

/// What the machine offered while a run was measured.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HostCapacity {
    /// Cores the host schedules threads on.
    pub cores: u32,
    /// Mean busy cores of the whole host over the measured part of the run (user, system,
    /// interrupt and steal time from `/proc/stat`), the job's own monotasks included.
    pub busy_cores: f64,
    /// One core's speed while every core of the host runs the same work, relative to it
    /// running alone, in (0, 1]: measured by a calibration loop before the run. Below 1 when
    /// the cores share something: a memory bus, a cache, a physical core under a VM's two
    /// vCPUs, a power budget.
    pub all_busy_core_speed: f64,
    /// Bytes/s one TCP connection between two of the host's processes carried for a large
    /// transfer (calibrated before the run): the link a shuffle between workers on this host
    /// crosses. A run's own fetches are often too small to show it (their time is mostly
    /// round trip). `None` in older results.
    #[serde(default)]
    pub link_bytes_per_s: Option<f64>,
    /// The part of a source stage's map task that does not grow with its input, calibrated
    /// before the run. `None` in older results and where nothing calibrated it.
    #[serde(default)]
    pub map_task_fixed: Option<MapTaskFixedCost>,
}

/// Cpu time a source stage's map task takes whatever its input's size: the intercept of its
/// time against its events, from the job's own map pipeline run at two input sizes after the
/// idle gap a batch interval leaves (allocating buffers, faulting in memory the allocator
/// gave back while the worker idled, caches that other processes cooled). A small task pays
/// as much of it as a large one, so it does not divide when more tasks share a batch's
/// events, nor double when a batch holds twice as many (measured in
/// `docs/experiments/2026-11-26-map-task-fixed-cost.md`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct MapTaskFixedCost {
    /// Of the `SourceRead` monotask: producing or reading the raw input.
    pub source_read_us: f64,
    /// Of the compute monotask (decoding, operators, partitioning, combine): taken by the
    /// model from `MapCompute`, the part that runs the operators.
    pub map_compute_us: f64,
}

impl HostCapacity {
    fn host_cores(&self) -> f64 {
        f64::from(self.cores.max(1))
    }

    /// A core's speed while `busy` cores of the host run, relative to one alone: 1 with one
    /// busy, `all_busy_core_speed` with all of them, linear in between (the calibration
    /// measures only the two ends).
    pub fn core_speed(&self, busy: f64) -> f64 {
        let host = self.host_cores();
        if host <= 1.0 {
            return 1.0;
        }
        let all_busy = self.all_busy_core_speed.clamp(CORE_SPEED_MIN, 1.0);
        let neighbours = (busy.min(host) - 1.0).max(0.0) / (host - 1.0);
        1.0 - (1.0 - all_busy) * neighbours
    }

    /// How long a unit of cpu work takes on each of `job_cores` cores running at once beside
    /// `other_cores` of other load, relative to one core alone on an idle host: slower cores
    /// (`core_speed`), and, when the threads outnumber the cores, processor sharing: each
    /// runnable thread gets `host ÷ (job + other)` of a core.
    pub fn cpu_time_factor(&self, job_cores: f64, other_cores: f64) -> f64 {
        let demand = job_cores.max(0.0) + other_cores.max(0.0);
        let sharing = (demand / self.host_cores()).max(1.0);
        sharing / self.core_speed(demand)
    }

    /// The host's busy cores that were not the job's: `busy_cores` less the `job_cores` its
    /// cpu monotasks kept busy (`RunSamples::other_cores` measures them). A host reading below
    /// the job's own use is noise, not negative load.
    pub fn other_cores_beside(&self, job_cores: f64) -> f64 {
        (self.busy_cores - job_cores).clamp(0.0, self.host_cores())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(cores: u32, busy_cores: f64, all_busy_core_speed: f64) -> HostCapacity {
        HostCapacity { cores, busy_cores, all_busy_core_speed, link_bytes_per_s: None, map_task_fixed: None }
    }

    fn check(host: HostCapacity, job_cores: f64, other_cores: f64, expected: f64) {
        let got = host.cpu_time_factor(job_cores, other_cores);
        assert!((got - expected).abs() < 1e-12, "{host:?}, job {job_cores}, other {other_cores}: {got} ≠ {expected}");
    }

    #[test]
    fn cores_slow_down_as_their_neighbours_get_busy() {
        // Two cores at 0.8 each when both run: one alone runs at full speed.
        check(host(2, 0.0, 0.8), 1.0, 0.0, 1.0);
        // Both busy: 1 ÷ 0.8.
        check(host(2, 0.0, 0.8), 2.0, 0.0, 1.25);
        // One job core beside a quarter core of other load: speed 1 − 0.2 × 0.25 = 0.95.
        check(host(2, 0.0, 0.8), 1.0, 0.25, 1.0 / 0.95);
        // Four cores at 0.7 all busy; two of four busy: 1 − 0.3 × 1/3 = 0.9.
        check(host(4, 0.0, 0.7), 2.0, 0.0, 1.0 / 0.9);
        // One core: nothing to share with but time.
        check(host(1, 0.0, 0.5), 1.0, 0.0, 1.0);
    }

    #[test]
    fn threads_beyond_the_cores_share_them() {
        // Perfect cores: two job cores and half a core of other load on two cores: each
        // thread gets 2 ÷ 2.5 of a core, so work takes 1.25 times as long.
        check(host(2, 0.0, 1.0), 2.0, 0.5, 1.25);
        // Four job cores on a two-core host: twice as long, the ideal time of 4 cores
        // becomes that of 2.
        check(host(2, 0.0, 1.0), 4.0, 0.0, 2.0);
        // Both at once: sharing 1.25 over all-busy speed 0.8.
        check(host(2, 0.0, 0.8), 2.0, 0.5, 1.25 / 0.8);
        // One job core on one host core beside other load: it waits its turn.
        check(host(1, 0.0, 1.0), 1.0, 0.5, 1.5);
    }
}
