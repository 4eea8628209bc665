//! `SET 'key' = 'value'`: how the job runs (batch interval, scheduler, checkpoints, …) and
//! what its keyed state may hold. Keys are written with dots, dashes or underscores alike.

use sleet_plan::{GroupSize, JobSettings, LatencyTarget, OverheadBounds, SchedulerKind};

use crate::error::{Position, SqlError};
use crate::interval::duration_ms;
use crate::query::QuerySettings;

pub const KEYS: &[&str] = &[
    "batch.interval",
    "duration",
    "scheduler",
    "group.size",
    "overhead.bounds",
    "latency.target",
    "group.latency.share",
    "combine",
    "backpressure",
    "checkpoint.interval",
    "start.ms",
    "dead.letter.dir",
    "parallelism",
    "state.ttl",
    "state.max.keys",
];

/// Applies one `SET`; the error names the key or the value at fault.
pub fn apply(
    key: &str,
    value: &str,
    at: Position,
    job: &mut JobSettings,
    query: &mut QuerySettings,
) -> Result<(), SqlError> {
    let normalized = key.to_ascii_lowercase().replace(['-', '_'], ".");
    let bad = |reason: String| SqlError::invalid(at, format!("SET '{key}': {reason}"));
    let duration = || duration_ms(value).map_err(&bad);
    let flag = || value.trim().parse::<bool>().map_err(|_| bad(format!("`{value}` is not true or false")));
    let whole = |what: &str| value.trim().parse::<u64>().map_err(|_| bad(format!("`{value}` is not {what}")));
    match normalized.as_str() {
        "batch.interval" => {
            let ms = duration()?;
            if ms == 0 {
                return Err(bad("a batch interval must be at least 1 ms".into()));
            }
            job.batch_interval_ms = ms as u64;
        }
        "duration" => job.duration_ms = Some(duration()? as u64),
        "scheduler" => job.scheduler = value.parse::<SchedulerKind>().map_err(bad)?,
        "group.size" => job.group_size = value.parse::<GroupSize>().map_err(bad)?,
        "overhead.bounds" => job.overhead_bounds = value.parse::<OverheadBounds>().map_err(bad)?,
        "latency.target" => {
            let ms = duration()?;
            if ms == 0 {
                return Err(bad("a latency target must be at least 1 ms".into()));
            }
            let share = job.latency_target.map_or(sleet_plan::job::DEFAULT_GROUP_SHARE, |target| target.group_share);
            job.latency_target = Some(LatencyTarget { target_ms: ms as u64, group_share: share });
        }
        "group.latency.share" => {
            let Some(target) = job.latency_target.as_mut() else {
                return Err(bad("set 'latency.target' first: the share is of that target".into()));
            };
            target.group_share = LatencyTarget::parse_group_share(value).map_err(bad)?;
        }
        "combine" => job.combine = flag()?,
        "backpressure" => job.backpressure = flag()?,
        "checkpoint.interval" => job.checkpoint_interval_ms = duration()? as u64,
        "start.ms" => {
            job.start_ms =
                Some(value.trim().parse::<i64>().map_err(|_| bad(format!("`{value}` is not ms since the epoch")))?)
        }
        "dead.letter.dir" => job.dead_letter_dir = Some(value.to_string()),
        "parallelism" => {
            let partitions = whole("a whole number of partitions")?;
            if partitions == 0 || partitions > u32::MAX as u64 {
                return Err(bad("parallelism is a whole number ≥ 1".into()));
            }
            query.parallelism = Some(partitions as u32);
        }
        "state.ttl" => {
            let ms = duration()?;
            if ms == 0 {
                return Err(bad("a state lifetime must be positive".into()));
            }
            query.state_ttl_ms = Some(ms);
        }
        "state.max.keys" => query.max_keys = Some(whole("a whole number of keys")?),
        _ => {
            return Err(SqlError::invalid(at, format!("SET '{key}': unknown setting (sleet has {})", KEYS.join(", "))))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(key: &str, value: &str) -> Result<(JobSettings, QuerySettings), String> {
        let mut job = JobSettings::default();
        let mut query = QuerySettings::default();
        apply(key, value, Position::default(), &mut job, &mut query).map_err(|error| error.to_string())?;
        Ok((job, query))
    }

    #[test]
    fn settings_take_durations_and_names_in_any_spelling() {
        assert_eq!(check("batch.interval", "10ms").unwrap().0.batch_interval_ms, 10);
        assert_eq!(check("batch_interval", "1s").unwrap().0.batch_interval_ms, 1_000);
        assert_eq!(check("state.ttl", "2 d").unwrap().1.state_ttl_ms, Some(172_800_000));
        assert_eq!(check("scheduler", "bsp").unwrap().0.scheduler, SchedulerKind::Bsp);
        assert_eq!(check("parallelism", "4").unwrap().1.parallelism, Some(4));
        assert!(check("backpressure", "true").unwrap().0.backpressure);
        assert!(check("backpressure", "on").unwrap_err().contains("not true or false"));
    }

    #[test]
    fn bad_settings_name_the_key() {
        assert!(check("batch.interval", "0").unwrap_err().contains("SET 'batch.interval'"));
        assert!(check("bacth.interval", "10ms").unwrap_err().contains("unknown setting"));
        assert!(check("scheduler", "fifo").unwrap_err().contains("unknown scheduler"));
        assert!(check("parallelism", "0").unwrap_err().contains("≥ 1"));
    }

    #[test]
    fn a_latency_target_comes_first_and_its_group_share_after() {
        let (mut job, mut query) = check("latency.target", "200ms").unwrap();
        assert_eq!(job.latency_target, Some(LatencyTarget { target_ms: 200, group_share: 0.25 }));
        apply("group-latency-share", "0.5", Position::default(), &mut job, &mut query).unwrap();
        assert_eq!(job.latency_target.map(|target| target.group_share), Some(0.5));
        assert!(check("group.latency.share", "0.5").unwrap_err().contains("set 'latency.target' first"));
        assert!(check("latency.target", "0").unwrap_err().contains("at least 1 ms"));
        let mut job = JobSettings::default();
        apply("latency.target", "1s", Position::default(), &mut job, &mut query).unwrap();
        let error = apply("group.latency.share", "2", Position::default(), &mut job, &mut query).unwrap_err();
        assert!(error.to_string().contains("(0, 1]"), "{error}");
    }
}
