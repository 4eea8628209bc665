//! The command-line flags that choose how a job is scheduled, shared by every command that
//! starts one.

use sleet_plan::{GroupSize, JobSettings, LatencyTarget, OverheadBounds, SchedulerKind};

#[derive(Debug, Clone, clap::Args)]
pub struct SchedulerArgs {
    /// `group` coordinates once per group of batches (Drizzle); `bsp` once per stage of every
    /// batch (Spark Streaming), kept as the baseline.
    #[arg(long, default_value = "group")]
    pub scheduler: SchedulerKind,
    /// Batches per group (group scheduler only): a number, or `auto` to keep the coordination
    /// overhead inside --overhead-bounds [default: auto].
    #[arg(long)]
    group_size: Option<GroupSize>,
    /// LOW,HIGH: the share of time the automatic group size allows for coordination (group
    /// scheduler only) [default: 0.05,0.10].
    #[arg(long)]
    overhead_bounds: Option<OverheadBounds>,
    /// The job's latency target (e.g. 200ms): the automatic group size never spans more than
    /// --group-latency-share of it. Unset, only the overhead bounds steer the size.
    #[arg(long, value_parser = crate::duration_arg::millis)]
    latency_target: Option<std::time::Duration>,
    /// The share of --latency-target one group may span, in (0, 1] [default: 0.25].
    #[arg(long, requires = "latency_target", value_parser = LatencyTarget::parse_group_share)]
    group_latency_share: Option<f64>,
    /// While batches end later than their interval, sources read fewer records per batch
    /// (Kafka and files; the built-in generators cannot, and their schedule slips instead), so
    /// the lag stays bounded and the backlog waits in the source.
    #[arg(long)]
    pub backpressure: bool,
}

impl SchedulerArgs {
    pub fn new(scheduler: SchedulerKind, group_size: GroupSize) -> Self {
        SchedulerArgs {
            scheduler,
            group_size: Some(group_size),
            overhead_bounds: None,
            latency_target: None,
            group_latency_share: None,
            backpressure: false,
        }
    }

    /// Refuses the flags that mean nothing to the chosen scheduler, naming them: a user who
    /// sets a group size under bsp believes it had an effect.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.scheduler == SchedulerKind::Bsp {
            for (flag, given) in [
                ("--group-size", self.group_size.is_some()),
                ("--overhead-bounds", self.overhead_bounds.is_some()),
                ("--latency-target", self.latency_target.is_some()),
            ] {
                anyhow::ensure!(!given, "{flag} applies to --scheduler group only, not bsp");
            }
        }
        if self.latency_target.is_some() {
            anyhow::ensure!(
                self.group_size() == GroupSize::Auto,
                "--latency-target bounds the automatic group size; it means nothing with --group-size {}",
                self.group_size()
            );
        }
        Ok(())
    }

    pub fn group_size(&self) -> GroupSize {
        self.group_size.unwrap_or(GroupSize::Auto)
    }

    pub fn overhead_bounds(&self) -> OverheadBounds {
        self.overhead_bounds.unwrap_or_default()
    }

    /// Writes the choice into a job's settings.
    pub fn apply(&self, settings: &mut JobSettings) {
        settings.scheduler = self.scheduler;
        settings.group_size = self.group_size();
        settings.overhead_bounds = self.overhead_bounds();
        settings.latency_target = self.latency_target();
        settings.backpressure |= self.backpressure;
    }

    /// The latency target as a job's settings hold it (whole milliseconds, at least one).
    pub fn latency_target(&self) -> Option<LatencyTarget> {
        self.latency_target.map(|target| LatencyTarget {
            target_ms: (target.as_millis() as u64).max(1),
            group_share: self.group_latency_share.unwrap_or(sleet_plan::job::DEFAULT_GROUP_SHARE),
        })
    }

    /// How a result file names the group size: a number, `"auto"`, or null under bsp.
    pub fn group_size_json(&self) -> serde_json::Value {
        match (self.scheduler, self.group_size()) {
            (SchedulerKind::Bsp, _) => serde_json::Value::Null,
            (SchedulerKind::Group, GroupSize::Fixed(size)) => serde_json::json!(size),
            (SchedulerKind::Group, GroupSize::Auto) => serde_json::json!("auto"),
        }
    }

    /// The bounds as a result file gives them; null under bsp.
    pub fn overhead_bounds_json(&self) -> serde_json::Value {
        let bounds = self.overhead_bounds();
        match self.scheduler {
            SchedulerKind::Bsp => serde_json::Value::Null,
            SchedulerKind::Group => serde_json::json!([bounds.low, bounds.high]),
        }
    }

    pub fn describe(&self) -> String {
        match self.scheduler {
            SchedulerKind::Bsp => "bsp scheduler".into(),
            SchedulerKind::Group => format!("group scheduler, group size {}", self.group_size()),
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        scheduling: SchedulerArgs,
    }

    fn settings(args: &[&str]) -> anyhow::Result<JobSettings> {
        let command = Command::try_parse_from(std::iter::once("sleet").chain(args.iter().copied()))?;
        command.scheduling.check()?;
        let mut settings = JobSettings::default();
        command.scheduling.apply(&mut settings);
        Ok(settings)
    }

    #[test]
    fn a_latency_target_reaches_the_settings_only_where_it_bounds_something() {
        let target = settings(&["--latency-target", "200ms", "--group-latency-share", "0.5"]).unwrap().latency_target;
        assert_eq!(target, Some(LatencyTarget { target_ms: 200, group_share: 0.5 }));
        let default_share = settings(&["--latency-target", "1s"]).unwrap().latency_target;
        assert_eq!(default_share, Some(LatencyTarget { target_ms: 1_000, group_share: 0.25 }));
        assert_eq!(settings(&[]).unwrap().latency_target, None);
        let refused = [
            (vec!["--group-latency-share", "0.5"], "--latency-target"),
            (vec!["--latency-target", "1s", "--group-latency-share", "0"], "(0, 1]"),
            (vec!["--latency-target", "1s", "--scheduler", "bsp"], "not bsp"),
            (vec!["--latency-target", "1s", "--group-size", "10"], "automatic group size"),
        ];
        for (args, fragment) in refused {
            let error = settings(&args).expect_err("refused").to_string();
            assert!(error.contains(fragment), "{args:?}: `{error}`");
        }
    }
}
