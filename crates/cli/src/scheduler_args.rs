//! The command-line flags that choose how a job is scheduled, shared by every command that
//! starts one.

use sleet_plan::{GroupSize, JobSettings, OverheadBounds, SchedulerKind};

#[derive(Debug, Clone, clap::Args)]
pub struct SchedulerArgs {
    /// `group` coordinates once per group of batches (Drizzle); `bsp` once per stage of every
    /// batch (Spark Streaming), kept as the baseline.
    #[arg(long, default_value = "group")]
    pub scheduler: SchedulerKind,
    /// Batches per group (group scheduler): a number, or `auto` to keep the coordination
    /// overhead inside --overhead-bounds.
    #[arg(long, default_value = "auto")]
    pub group_size: GroupSize,
    /// LOW,HIGH: the share of time the automatic group size allows for coordination.
    #[arg(long, default_value = "0.05,0.10")]
    pub overhead_bounds: OverheadBounds,
}

impl SchedulerArgs {
    /// Writes the choice into a job's settings.
    pub fn apply(&self, settings: &mut JobSettings) {
        settings.scheduler = self.scheduler;
        settings.group_size = self.group_size;
        settings.overhead_bounds = self.overhead_bounds;
    }

    /// How a result file names the group size: a number, `"auto"`, or null under bsp.
    pub fn group_size_json(&self) -> serde_json::Value {
        match (self.scheduler, self.group_size) {
            (SchedulerKind::Bsp, _) => serde_json::Value::Null,
            (SchedulerKind::Group, GroupSize::Fixed(size)) => serde_json::json!(size),
            (SchedulerKind::Group, GroupSize::Auto) => serde_json::json!("auto"),
        }
    }

    pub fn describe(&self) -> String {
        match self.scheduler {
            SchedulerKind::Bsp => "bsp scheduler".into(),
            SchedulerKind::Group => format!("group scheduler, group size {}", self.group_size),
        }
    }
}
