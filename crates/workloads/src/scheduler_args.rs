//! The command-line flags that choose how a job is scheduled, shared by every command that
//! starts one.

use sleet_plan::{GroupSize, JobSettings, OverheadBounds, SchedulerKind};

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
}

impl SchedulerArgs {
    pub fn new(scheduler: SchedulerKind, group_size: GroupSize) -> Self {
        SchedulerArgs { scheduler, group_size: Some(group_size), overhead_bounds: None }
    }

    /// Refuses the flags that mean nothing to the chosen scheduler, naming them: a user who
    /// sets a group size under bsp believes it had an effect.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.scheduler == SchedulerKind::Bsp {
            for (flag, given) in
                [("--group-size", self.group_size.is_some()), ("--overhead-bounds", self.overhead_bounds.is_some())]
            {
                anyhow::ensure!(!given, "{flag} applies to --scheduler group only, not bsp");
            }
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
