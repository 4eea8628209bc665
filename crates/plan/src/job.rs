//! The job file: a plan plus how to run it. `sleet submit` reads one; benches write one.

use serde::{Deserialize, Serialize};

use crate::avro::AvroSchemaSource;
use crate::error::{NodeRef, PlanError};
use crate::node::{Operator, Plan};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Spark Streaming's behaviour: a message per task, a barrier after every stage.
    Bsp,
    /// Drizzle's: one message per worker per group of batches, shuffles pre-scheduled.
    Group,
}

impl std::str::FromStr for SchedulerKind {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "bsp" => Ok(SchedulerKind::Bsp),
            "group" => Ok(SchedulerKind::Group),
            other => Err(format!("unknown scheduler `{other}` (expected `bsp` or `group`)")),
        }
    }
}

impl std::fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            SchedulerKind::Bsp => "bsp",
            SchedulerKind::Group => "group",
        })
    }
}

/// How many batches the group scheduler coordinates at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupSize {
    Fixed(u32),
    /// Tuned while the job runs to keep the coordination overhead inside `overhead_bounds`.
    Auto,
}

impl std::str::FromStr for GroupSize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "auto" {
            return Ok(GroupSize::Auto);
        }
        match text.parse::<u32>() {
            Ok(size) if size >= 1 => Ok(GroupSize::Fixed(size)),
            _ => Err(format!("group size `{text}` is neither `auto` nor a whole number of batches ≥ 1")),
        }
    }
}

impl std::fmt::Display for GroupSize {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GroupSize::Fixed(size) => write!(f, "{size}"),
            GroupSize::Auto => f.write_str("auto"),
        }
    }
}

// In job files a group size is `"auto"` or a number, as on the command line.
impl Serialize for GroupSize {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            GroupSize::Fixed(size) => serializer.serialize_u32(*size),
            GroupSize::Auto => serializer.serialize_str("auto"),
        }
    }
}

impl<'de> Deserialize<'de> for GroupSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Number(u64),
            Text(String),
        }
        match Written::deserialize(deserializer)? {
            Written::Number(size) => u32::try_from(size)
                .ok()
                .filter(|size| *size >= 1)
                .map(GroupSize::Fixed)
                .ok_or_else(|| serde::de::Error::custom(format!("group size {size} is not in 1..=4294967295"))),
            Written::Text(text) => text.parse().map_err(serde::de::Error::custom),
        }
    }
}

/// The band the automatic group size keeps the coordination overhead in: above it the group
/// grows, below it the group shrinks (`docs/design/group-scheduling.md`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct OverheadBounds {
    pub low: f64,
    pub high: f64,
}

impl Default for OverheadBounds {
    fn default() -> Self {
        OverheadBounds { low: 0.05, high: 0.10 }
    }
}

impl OverheadBounds {
    pub fn check(&self) -> Result<(), String> {
        let in_unit = |value: f64| (0.0..=1.0).contains(&value);
        if !(in_unit(self.low) && in_unit(self.high) && self.low < self.high) {
            return Err(format!("bounds {},{} must satisfy 0 ≤ LOW < HIGH ≤ 1", self.low, self.high));
        }
        Ok(())
    }
}

impl std::str::FromStr for OverheadBounds {
    type Err = String;

    /// `LOW,HIGH`, as shares of time: `0.05,0.10`.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let parse = |part: Option<&str>| part.and_then(|part| part.trim().parse::<f64>().ok());
        let mut parts = text.split(',');
        let (Some(low), Some(high), None) = (parse(parts.next()), parse(parts.next()), parts.next()) else {
            return Err(format!("overhead bounds `{text}` are not LOW,HIGH (e.g. 0.05,0.10)"));
        };
        let bounds = OverheadBounds { low, high };
        bounds.check()?;
        Ok(bounds)
    }
}

/// A job's latency target, and the share of it one group of batches may span: the automatic
/// group size never grows past `group_share × target_ms` of batches (at least one). A group is
/// what the driver acts on (checkpoints, size changes, membership wait for its boundary, and
/// workers hold its reports until it ends), so its span is latency the job can be charged.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct LatencyTarget {
    pub target_ms: u64,
    #[serde(default = "default_group_share")]
    pub group_share: f64,
}

/// A quarter of the target: room for the batch's own processing and its window after it.
pub const DEFAULT_GROUP_SHARE: f64 = 0.25;

fn default_group_share() -> f64 {
    DEFAULT_GROUP_SHARE
}

impl LatencyTarget {
    pub fn check(&self) -> Result<(), String> {
        if self.target_ms == 0 || self.target_ms > u64::from(u32::MAX) {
            return Err(format!("a latency target is 1 ms to {} ms, not {} ms", u32::MAX, self.target_ms));
        }
        check_group_share(self.group_share)
    }

    /// A group's share as a flag or a setting writes it (`0.25`), checked as `check` does.
    pub fn parse_group_share(text: &str) -> Result<f64, String> {
        let share: f64 = text.trim().parse().map_err(|_| format!("`{text}` is not a share in (0, 1]"))?;
        check_group_share(share).map(|()| share)
    }
}

fn check_group_share(share: f64) -> Result<(), String> {
    if share > 0.0 && share <= 1.0 {
        Ok(())
    } else {
        Err(format!("a group's share of the latency target is in (0, 1], not {share}"))
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSettings {
    pub batch_interval_ms: u64,
    /// Run this long, then stop; `None` runs until cancelled.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default = "default_scheduler")]
    pub scheduler: SchedulerKind,
    /// Batches per group, for the group scheduler.
    #[serde(default = "default_group_size")]
    pub group_size: GroupSize,
    /// Where `GroupSize::Auto` keeps the coordination overhead.
    #[serde(default)]
    pub overhead_bounds: OverheadBounds,
    /// Partial aggregation before an exchange (map-side combine).
    #[serde(default = "default_true")]
    pub combine: bool,
    /// Where workers write dead letters: one file per worker.
    #[serde(default)]
    pub dead_letter_dir: Option<String>,
    /// Start of batch 0 in ms since the epoch. Default: the next interval boundary a moment
    /// after submission. A start in the past replays a backlog: every batch already closed
    /// runs as fast as the cluster allows, then the job follows the clock.
    #[serde(default)]
    pub start_ms: Option<i64>,
    /// How often stateful partitions checkpoint their state (rounded up to group
    /// boundaries); 0 turns checkpoints off, and a lost worker then means replaying the job
    /// from its first batch.
    #[serde(default = "default_checkpoint_interval_ms")]
    pub checkpoint_interval_ms: u64,
    /// Bounds the automatic group size by latency; `None` leaves it to the overhead bounds
    /// alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target: Option<LatencyTarget>,
    /// While batches end later than their interval, each source partition reads fewer
    /// records per batch, so the lag stays bounded and the backlog waits in the source
    /// (`docs/jobs.md`, "Backpressure"). Written only when on, so older job files still read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backpressure: bool,
}

pub const DEFAULT_CHECKPOINT_INTERVAL_MS: u64 = 1_000;

fn default_checkpoint_interval_ms() -> u64 {
    DEFAULT_CHECKPOINT_INTERVAL_MS
}

impl Default for JobSettings {
    fn default() -> Self {
        JobSettings {
            batch_interval_ms: 100,
            duration_ms: None,
            scheduler: default_scheduler(),
            group_size: default_group_size(),
            overhead_bounds: OverheadBounds::default(),
            combine: true,
            dead_letter_dir: None,
            start_ms: None,
            checkpoint_interval_ms: DEFAULT_CHECKPOINT_INTERVAL_MS,
            latency_target: None,
            backpressure: false,
        }
    }
}

fn default_scheduler() -> SchedulerKind {
    SchedulerKind::Group
}

fn default_group_size() -> GroupSize {
    GroupSize::Auto
}

fn default_true() -> bool {
    true
}

impl JobSettings {
    /// Checks the settings; the error names the offending field.
    pub fn validate(&self) -> Result<(), PlanError> {
        let invalid = |field: &str, reason: String| PlanError::InvalidSetting { field: field.into(), reason };
        if self.batch_interval_ms == 0 {
            return Err(invalid("batch_interval_ms", "must be at least 1".into()));
        }
        if self.duration_ms == Some(0) {
            return Err(invalid("duration_ms", "must be at least 1 when given".into()));
        }
        if self.group_size == GroupSize::Fixed(0) {
            return Err(invalid("group_size", "must be at least 1 or \"auto\"".into()));
        }
        self.overhead_bounds.check().map_err(|reason| invalid("overhead_bounds", reason))?;
        if let Some(target) = &self.latency_target {
            target.check().map_err(|reason| invalid("latency_target", reason))?;
            // Only the automatic size has anything to bound; taken silently elsewhere, the
            // target would look like it had an effect.
            if self.scheduler != SchedulerKind::Group || self.group_size != GroupSize::Auto {
                return Err(invalid(
                    "latency_target",
                    "bounds the automatic group size, so it needs scheduler group and group_size auto".into(),
                ));
            }
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFile {
    pub plan: Plan,
    pub settings: JobSettings,
    /// The SQL text the job was compiled from, when it was: the driver shows it beside the
    /// plan. Nothing runs from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

impl JobFile {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a job file always serializes")
    }

    /// Parses and validates a job file.
    pub fn from_json(text: &str) -> Result<JobFile, PlanError> {
        let job = JobFile::from_json_unchecked(text)?;
        job.check()?;
        Ok(job)
    }

    /// Parses a job file without validating it, for a caller that must fill something in
    /// first (`inline_avro_schemas`), then `check`.
    pub fn from_json_unchecked(text: &str) -> Result<JobFile, PlanError> {
        serde_json::from_str(text).map_err(PlanError::JobFile)
    }

    pub fn check(&self) -> Result<(), PlanError> {
        crate::validate::validate(&self.plan)?;
        self.settings.validate()
    }

    /// Replaces each Avro schema named by its path with the JSON that `read` returns for
    /// that path, so the job carries its schema to the driver and workers, which read no
    /// files of the client's. The error names the node and the file.
    pub fn inline_avro_schemas(&mut self, read: impl Fn(&str) -> Result<String, String>) -> Result<(), PlanError> {
        for (index, node) in self.plan.nodes.iter_mut().enumerate() {
            let Operator::DecodeAvro { schema, .. } = &mut node.operator else { continue };
            let AvroSchemaSource::Path(path) = schema else { continue };
            let invalid = |reason: String| PlanError::InvalidOption {
                node: NodeRef { index, kind: "decode_avro" },
                field: "schema".into(),
                reason,
            };
            let text = read(path).map_err(|error| invalid(format!("reading `{path}`: {error}")))?;
            let json =
                serde_json::from_str(&text).map_err(|error| invalid(format!("`{path}` is not JSON: {error}")))?;
            *schema = AvroSchemaSource::Inline(json);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_settings(json: &str, expected: Result<(SchedulerKind, GroupSize), &str>) {
        let parsed = serde_json::from_str::<JobSettings>(json)
            .map_err(|error| error.to_string())
            .and_then(|settings| settings.validate().map(|()| settings).map_err(|error| error.to_string()));
        match (parsed, expected) {
            (Ok(settings), Ok(expected)) => assert_eq!((settings.scheduler, settings.group_size), expected),
            (Err(error), Err(fragment)) => assert!(error.contains(fragment), "`{error}` should mention `{fragment}`"),
            (found, expected) => panic!("{json}: found {found:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn scheduler_and_group_size_parse_with_defaults() {
        check_settings(r#"{"batch_interval_ms": 10}"#, Ok((SchedulerKind::Group, GroupSize::Auto)));
        check_settings(
            r#"{"batch_interval_ms": 10, "scheduler": "bsp", "group_size": 25}"#,
            Ok((SchedulerKind::Bsp, GroupSize::Fixed(25))),
        );
        check_settings(
            r#"{"batch_interval_ms": 10, "group_size": "auto"}"#,
            Ok((SchedulerKind::Group, GroupSize::Auto)),
        );
        check_settings(r#"{"batch_interval_ms": 10, "group_size": 0}"#, Err("group size 0"));
        check_settings(r#"{"batch_interval_ms": 10, "group_size": "big"}"#, Err("group size `big`"));
        check_settings(r#"{"batch_interval_ms": 0}"#, Err("batch_interval_ms"));
        check_settings(
            r#"{"batch_interval_ms": 10, "overhead_bounds": {"low": 0.2, "high": 0.1}}"#,
            Err("overhead_bounds"),
        );
    }

    #[test]
    fn a_latency_target_takes_a_share_and_bounds_only_the_automatic_group_size() {
        let settings: JobSettings =
            serde_json::from_str(r#"{"batch_interval_ms": 10, "latency_target": {"target_ms": 200}}"#).expect("parses");
        assert_eq!(settings.latency_target, Some(LatencyTarget { target_ms: 200, group_share: DEFAULT_GROUP_SHARE }));
        assert!(settings.validate().is_ok());
        let refused = [
            (r#""latency_target": {"target_ms": 0}"#, "1 ms"),
            (r#""latency_target": {"target_ms": 100, "group_share": 0}"#, "(0, 1]"),
            (r#""latency_target": {"target_ms": 100, "group_share": 1.5}"#, "(0, 1]"),
            (r#""latency_target": {"target_ms": 100}, "group_size": 8"#, "group_size auto"),
            (r#""latency_target": {"target_ms": 100}, "scheduler": "bsp""#, "scheduler group"),
        ];
        for (fields, fragment) in refused {
            let json = format!(r#"{{"batch_interval_ms": 10, {fields}}}"#);
            let error = serde_json::from_str::<JobSettings>(&json).expect("parses").validate().expect_err(&json);
            let text = error.to_string();
            assert!(text.contains("latency_target") && text.contains(fragment), "{json}: `{text}`");
        }
        let unset = serde_json::to_string(&JobSettings::default()).expect("serializes");
        assert!(!unset.contains("latency_target"), "job files without a target stay as they were: {unset}");
    }

    #[test]
    fn command_line_forms_parse_and_print_back() {
        assert_eq!("auto".parse::<GroupSize>(), Ok(GroupSize::Auto));
        assert_eq!("100".parse::<GroupSize>(), Ok(GroupSize::Fixed(100)));
        assert!("0".parse::<GroupSize>().is_err());
        assert_eq!(GroupSize::Fixed(7).to_string(), "7");
        assert_eq!("0.05,0.10".parse::<OverheadBounds>(), Ok(OverheadBounds { low: 0.05, high: 0.10 }));
        assert!("0.1".parse::<OverheadBounds>().is_err());
        assert!("0.1,0.05".parse::<OverheadBounds>().is_err());
        assert!("0.1,0.2,0.3".parse::<OverheadBounds>().is_err());
        assert_eq!("group".parse::<SchedulerKind>().map(|kind| kind.to_string()), Ok("group".to_string()));
        assert!("spark".parse::<SchedulerKind>().is_err());
    }
}
