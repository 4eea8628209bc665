//! The job file: a plan plus how to run it. `sleet submit` reads one; benches write one.

use serde::{Deserialize, Serialize};

use crate::error::PlanError;
use crate::node::Plan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    /// Spark Streaming's behaviour: a message per task, a barrier after every stage.
    Bsp,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobSettings {
    pub batch_interval_ms: u64,
    /// Run this long, then stop; `None` runs until cancelled.
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default = "default_scheduler")]
    pub scheduler: SchedulerKind,
    /// Partial aggregation before an exchange (map-side combine).
    #[serde(default = "default_true")]
    pub combine: bool,
    /// Where workers write dead letters: one file per worker.
    #[serde(default)]
    pub dead_letter_dir: Option<String>,
}

fn default_scheduler() -> SchedulerKind {
    SchedulerKind::Bsp
}

fn default_true() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobFile {
    pub plan: Plan,
    pub settings: JobSettings,
}

impl JobFile {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a job file always serializes")
    }

    /// Parses and validates a job file.
    pub fn from_json(text: &str) -> Result<JobFile, PlanError> {
        let job: JobFile = serde_json::from_str(text).map_err(PlanError::JobFile)?;
        crate::validate::validate(&job.plan)?;
        if job.settings.batch_interval_ms == 0 {
            return Err(PlanError::InvalidOption {
                node: crate::error::NodeRef { index: 0, kind: "settings" },
                field: "batch_interval_ms".into(),
                reason: "must be at least 1".into(),
            });
        }
        Ok(job)
    }
}
