//! The model of a job's recent batches, as the API, the stream and the metrics show it:
//! computed here, from the samples the driver hands over, over the newest batches only, and
//! at most once per `MODEL_MAX_AGE` however many readers ask, so watching a job costs its
//! driver little.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sleet_clarity::{glance, Glance, RunSamples};

/// Batches the live model reads: the newest second of 10 ms batches, ten of 100 ms ones.
const MODEL_BATCHES_MAX: usize = 100;
/// A model younger than this is shown again rather than computed anew.
const MODEL_MAX_AGE: Duration = Duration::from_secs(10);

/// The last model computed: for which job, when.
#[derive(Default)]
pub struct ModelCache {
    last: Mutex<Option<(u64, Instant, Arc<Glance>)>>,
}

impl ModelCache {
    /// The model of `job`'s `recent` samples, computed now unless a young one is kept.
    pub fn glance_of(&self, job: u64, recent: &RunSamples) -> Arc<Glance> {
        let mut last = self.last.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some((kept_job, at, glance)) = last.as_ref() {
            if *kept_job == job && at.elapsed() < MODEL_MAX_AGE {
                return Arc::clone(glance);
            }
        }
        let fresh = Arc::new(glance(&newest(recent, MODEL_BATCHES_MAX)));
        *last = Some((job, Instant::now(), Arc::clone(&fresh)));
        fresh
    }
}

/// The newest `max` batches of `run`, with their tasks.
fn newest(run: &RunSamples, max: usize) -> RunSamples {
    if run.batches.len() <= max {
        return run.clone();
    }
    let batches = run.batches[run.batches.len() - max..].to_vec();
    let first = batches.first().map_or(0, |batch| batch.batch);
    let tasks = run.tasks.iter().filter(|task| task.batch >= first).cloned().collect();
    RunSamples { shape: run.shape, batches, tasks, host: run.host }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sleet_clarity::{BatchSample, ClusterShape, TaskSample};

    fn run(batches: u64) -> RunSamples {
        let shape = ClusterShape {
            workers: 1,
            cores_per_worker: 1,
            batch_interval_ms: 10,
            net_bytes_per_s: None,
            disk_bytes_per_s: None,
        };
        RunSamples {
            shape,
            batches: (0..batches).map(batch_sample).collect(),
            tasks: (0..batches).map(task_sample).collect(),
            host: None,
        }
    }

    fn batch_sample(batch: u64) -> BatchSample {
        let closed_at_us = 1_000_000 + batch as i64 * 10_000;
        BatchSample {
            batch,
            closed_at_us,
            first_task_started_at_us: closed_at_us,
            finished_at_us: closed_at_us + 2_000,
            coordination_us: 100,
            events: 10,
            event_wait_us: None,
            committed_at_us: None,
        }
    }

    fn task_sample(batch: u64) -> TaskSample {
        let started_at_us = 1_000_000 + batch as i64 * 10_000;
        TaskSample {
            stage: 0,
            partition: 0,
            batch,
            worker: 1,
            started_at_us,
            finished_at_us: started_at_us + 1_500,
            records_in: 10,
            monotasks: Vec::new(),
        }
    }

    #[test]
    fn the_model_reads_the_newest_batches_and_is_kept_while_young() {
        let trimmed = newest(&run(500), 200);
        assert_eq!(trimmed.batches.len(), 200);
        assert_eq!(trimmed.batches.first().map(|b| b.batch), Some(300));
        assert!(trimmed.tasks.iter().all(|task| task.batch >= 300) && trimmed.tasks.len() == 200);
        assert_eq!(newest(&run(50), 200).batches.len(), 50);

        let cache = ModelCache::default();
        let first = cache.glance_of(1, &run(10));
        assert!(Arc::ptr_eq(&first, &cache.glance_of(1, &run(20))), "young: kept");
        assert_eq!(first.batches, 10);
        assert_eq!(cache.glance_of(2, &run(20)).batches, 20, "another job: computed");
    }
}
