//! The driver's state directory: the running job as a restarted driver needs it to resume
//! (`docs/design/recovery.md`, driver restart). Two files, each replaced whole
//! (`sleet_durable::file::replace_file`) and removed when the job ends: `job.json` at every attempt's start
//! (synced), `figures.json` at every attempt's start, before every checkpoint record and at most
//! every `FIGURES_SAVE_INTERVAL_MS` between (not synced, as the commit manifest).
//!
//! ```text
//!  state dir/job.json ─┐  the job file as resolved, its clock, the last attempt started,
//!                      │  every attempt id used, the next free id
//!  state dir/figures.json ─┤  the summary's figures so far, and the Kafka offsets each batch
//!                      │  since the checkpoint read (the replay log)
//!  checkpoint dir/job-<id>/checkpoint.json ─┤  the latest complete checkpoint
//!  each output dir/_manifest.json ──────────┘  what is committed, per attempt
//!                      ▼  plan_resume (pure)
//!  a new attempt: next attempt number and id, restore the checkpoint, a new manifest segment
//! ```
//!
//! The state file does not copy the checkpoint record or the manifests: each already has one
//! durable home, and a second copy could only disagree with it. What the file adds is what
//! nothing else keeps: the job itself and the attempt numbers and ids already spent, so the
//! resumed attempt writes files and snapshots no earlier attempt can have written.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sleet_durable::file::{read_json_file, replace_file, Durability};
use sleet_durable::manifest::{CommitManifest, CommittedSegment};
use sleet_plan::JobFile;
use sleet_wire::clock::BatchClock;
use sleet_wire::{JobId, RebalanceRecord, RecoveryRecord, RestartRecord, StateFigures};

use crate::checkpoints::CheckpointRecord;
use crate::error::DriverError;

const STATE_FILE: &str = "job.json";
const FIGURES_FILE: &str = "figures.json";
/// How often the figures are saved while batches complete, besides before each checkpoint
/// record: as often as the commit manifest, so the replay log on disk lags the batches the
/// workers commit by about this much at most.
pub const FIGURES_SAVE_INTERVAL_MS: i64 = 100;
/// Replay log entries saved at most (a few tens of bytes each): a checkpoint every second
/// keeps far fewer; past this a restarted driver re-runs later batches on what is there.
pub const SAVED_REPLAY_ENTRIES_MAX: usize = 65_536;

/// The running job as the state directory keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedJob {
    /// The id its client knows it by (its first attempt's id).
    pub job: JobId,
    /// The job as submitted, with its source and sink resolved against outside systems.
    pub job_file: JobFile,
    pub clock: BatchClock,
    /// The number of the last attempt started: its workers may have written files under it.
    pub attempt: u32,
    /// Every attempt's id, in order: each may have left snapshots to delete at the end.
    pub attempt_jobs: Vec<JobId>,
    /// The first id the driver had not yet given out.
    pub next_job: JobId,
}

/// What the job's summary has counted so far and what a re-run after a restart must read
/// again, as the state directory keeps it (`figures.json`). Without it a restarted driver's
/// summary would start at the restart, and batches after the checkpoint would re-run on
/// Kafka offsets cut anew: the batches the first driver's workers had committed to a Kafka
/// sink are skipped by their markers, so their rows must come from the same records, or a
/// window's update in them is lost or its state rebuilt from other records.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SavedFigures {
    pub batches_total: u64,
    pub batches_rerun: u64,
    pub events_in: u64,
    pub dead_letters: u64,
    pub late_rows_dropped: u64,
    pub unmatched_lookup_rows: u64,
    /// Absent from the figures of a driver before state figures were kept.
    #[serde(default)]
    pub state: Option<StateFigures>,
    #[serde(default)]
    pub state_full: Vec<String>,
    pub sink_rows: u64,
    pub launch_messages: u64,
    /// Every batch below this one is counted in the figures above…
    pub counted_below: u64,
    /// …and these after it, which completed ahead of an older one.
    pub counted_ahead: Vec<u64>,
    pub recoveries: Vec<RecoveryRecord>,
    pub rebalances: Vec<RebalanceRecord>,
    pub restarts: Vec<RestartRecord>,
    /// The replay log: per Kafka source partition, `(batch, end offset)` of the batches
    /// since the latest checkpoint.
    pub replay: Vec<(u32, Vec<(u64, i64)>)>,
}

/// Where a restarted driver goes on from, decided by `plan_resume`.
#[derive(Debug, Clone, PartialEq)]
pub struct ResumePlan {
    pub attempt: u32,
    pub attempt_job: JobId,
    pub restore: Option<CheckpointRecord>,
    /// The commits as the newest manifest on disk has them.
    pub manifest: CommitManifest,
    pub resume_batch: u64,
    /// Every attempt id used before, for their snapshots to be deleted at the end.
    pub attempt_jobs: Vec<JobId>,
}

/// Decides how a restarted driver resumes `saved`, from the latest checkpoint record and
/// the newest commit manifest on disk (`file_output`: whether the job has an output
/// directory to hold one). Pure. Refuses what would break exactly-once output: a checkpoint
/// or manifest of another job, or a checkpoint past the committed output (the driver
/// publishes the manifest before it records a checkpoint, so only a damaged or foreign
/// directory can show that).
pub fn plan_resume(
    saved: &SavedJob,
    checkpoint: Option<CheckpointRecord>,
    manifest: Option<CommitManifest>,
    file_output: bool,
) -> Result<ResumePlan, String> {
    if let Some(checkpoint) = &checkpoint {
        if checkpoint.job != saved.job {
            return Err(format!("the latest checkpoint belongs to job {}, not job {}", checkpoint.job, saved.job));
        }
    }
    let manifest = match manifest {
        Some(manifest) => manifest,
        // Only Kafka output, and no dead-letter directory: nothing publishes a manifest.
        // A checkpoint was recorded only once every batch up to it was committed in the
        // driver's memory, so that is what the manifest would have said; the sinks' own
        // markers cover what their workers committed after it.
        None if !file_output => {
            let segment = CommittedSegment {
                attempt: saved.attempt,
                first_batch: 0,
                last_batch: checkpoint.as_ref().map(|checkpoint| checkpoint.batch),
            };
            CommitManifest { job: saved.job, segments: vec![segment], finished: false }
        }
        None => CommitManifest { job: saved.job, ..CommitManifest::default() },
    };
    if manifest.job != saved.job {
        return Err(format!("the commit manifest belongs to job {}, not job {}", manifest.job, saved.job));
    }
    if manifest.finished {
        return Err(format!("the commit manifest says job {} already finished", saved.job));
    }
    let committed = manifest.committed_through();
    if let Some(checkpoint) = &checkpoint {
        if committed.is_none_or(|committed| committed < checkpoint.batch) {
            return Err(format!(
                "the checkpoint after batch {} is ahead of the committed output (through {committed:?})",
                checkpoint.batch
            ));
        }
    }
    // Past every attempt the state file or a manifest segment knows: its files are new.
    let attempt = manifest.segments.iter().map(|segment| segment.attempt).chain([saved.attempt]).max().unwrap_or(0) + 1;
    let attempt_job =
        saved.attempt_jobs.iter().copied().chain([saved.job, saved.next_job.saturating_sub(1)]).max().unwrap_or(0) + 1;
    let resume_batch = checkpoint.as_ref().map_or(0, |checkpoint| checkpoint.batch + 1);
    let attempt_jobs = saved.attempt_jobs.clone();
    Ok(ResumePlan { attempt, attempt_job, restore: checkpoint, manifest, resume_batch, attempt_jobs })
}

/// The state directory of one driver.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        StateDir { dir: dir.into() }
    }

    pub fn file(&self) -> PathBuf {
        self.dir.join(STATE_FILE)
    }

    /// Replaces the saved job, synced: it is written once per attempt, and a lost host
    /// must not leave a job file behind the attempts it names.
    pub fn save(&self, saved: &SavedJob) -> Result<(), DriverError> {
        let bytes = serde_json::to_vec_pretty(saved).expect("a saved job serializes");
        self.replace(STATE_FILE, &bytes, Durability::HostCrash)
    }

    /// Replaces the saved figures, not synced: they are saved every 100 ms on the driver's
    /// one thread, and like the commit manifest they guard against a lost process, whose
    /// writes the page cache keeps.
    pub fn save_figures(&self, figures: &SavedFigures) -> Result<(), DriverError> {
        let bytes = serde_json::to_vec(figures).expect("figures serialize");
        self.replace(FIGURES_FILE, &bytes, Durability::ProcessCrash)
    }

    fn replace(&self, name: &str, bytes: &[u8], durability: Durability) -> Result<(), DriverError> {
        let path = self.dir.join(name);
        replace_file(&path, bytes, durability, "saving the driver's state")
            .map_err(|error| DriverError::State { path, reason: sleet_wire::error_chain(&error) })
    }

    /// The saved job, if a job was running; a file that does not parse is an error that
    /// names the file and the field, not a job quietly forgotten.
    pub fn load(&self) -> Result<Option<SavedJob>, DriverError> {
        self.read(STATE_FILE, "a saved job")
    }

    /// The saved figures; `None` when a driver that kept none ran the job before.
    pub fn load_figures(&self) -> Result<Option<SavedFigures>, DriverError> {
        self.read(FIGURES_FILE, "the saved figures")
    }

    fn read<T: serde::de::DeserializeOwned>(&self, name: &str, what: &str) -> Result<Option<T>, DriverError> {
        let path = self.dir.join(name);
        read_json_file(&path, what).map_err(|error| DriverError::State {
            reason: format!(
                "{}; fix it, or remove the state directory to start without the job",
                sleet_wire::error_chain(&error)
            ),
            path,
        })
    }

    /// The job ended: nothing is left to resume. The directory goes too when nothing else
    /// is in it, so a finished job leaves no trace in the checkpoint directory it defaults to.
    pub fn clear(&self) -> Result<(), DriverError> {
        for name in [FIGURES_FILE, STATE_FILE] {
            let path = self.dir.join(name);
            match fs::remove_file(&path) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => return Err(DriverError::State { path, reason: format!("removing: {error}") }),
            }
        }
        // Not empty (a user's own files), or already gone: either way it stays as it is.
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }
}

/// The latest checkpoint record of `job` under `checkpoint_dir`, if it has one.
pub fn read_checkpoint(checkpoint_dir: &Path, job: JobId) -> Result<Option<CheckpointRecord>, DriverError> {
    let path = checkpoint_dir.join(crate::checkpoints::record_name(job));
    read_json_file(&path, "a checkpoint record")
        .map_err(|error| DriverError::State { reason: sleet_wire::error_chain(&error), path })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn saved(attempt: u32, attempt_jobs: Vec<JobId>, next_job: JobId) -> SavedJob {
        SavedJob {
            job: 4,
            job_file: JobFile {
                plan: sleet_plan::Plan { name: "t".into(), nodes: Vec::new() },
                settings: sleet_plan::JobSettings::default(),
                query: None,
            },
            clock: BatchClock::new(0, 100),
            attempt,
            attempt_jobs,
            next_job,
        }
    }

    fn checkpoint(job: JobId, batch: u64) -> CheckpointRecord {
        CheckpointRecord {
            job,
            attempt_job: 5,
            batch,
            snapshots: Vec::new(),
            source_ranges: Vec::new(),
            recorded_at_ms: 0,
        }
    }

    fn manifest(job: JobId, segments: &[(u32, u64, Option<u64>)]) -> CommitManifest {
        let segments = segments
            .iter()
            .map(|&(attempt, first_batch, last_batch)| CommittedSegment { attempt, first_batch, last_batch })
            .collect();
        CommitManifest { job, segments, finished: false }
    }

    fn check(
        saved: &SavedJob,
        checkpoint: Option<CheckpointRecord>,
        manifest: Option<CommitManifest>,
        expected: Result<(u32, JobId, u64), &str>,
    ) {
        let plan = plan_resume(saved, checkpoint, manifest, true);
        match (plan, expected) {
            (Ok(plan), Ok(expected)) => assert_eq!((plan.attempt, plan.attempt_job, plan.resume_batch), expected),
            (Err(error), Err(fragment)) => assert!(error.contains(fragment), "{error}"),
            (plan, expected) => panic!("planned {plan:?}, expected {expected:?}"),
        }
    }

    #[test]
    fn a_resumed_attempt_is_numbered_past_every_earlier_one_and_starts_after_the_checkpoint() {
        // Attempt 1 (id 5) ran; a checkpoint after batch 19 with output committed through 23.
        let state = saved(1, vec![4, 5], 6);
        let committed = manifest(4, &[(0, 0, Some(11)), (1, 12, Some(23))]);
        check(&state, Some(checkpoint(4, 19)), Some(committed.clone()), Ok((2, 6, 20)));
        // No checkpoint yet: from batch 0, committed batches re-run for state only.
        check(&state, None, Some(committed), Ok((2, 6, 0)));
        // Nothing published yet: a fresh manifest.
        check(&saved(0, vec![4], 5), None, None, Ok((1, 5, 0)));
        // A segment of a later attempt than the state file says (the driver died between the
        // registration and the state write cannot happen, but a manifest is trusted anyway).
        check(&state, None, Some(manifest(4, &[(0, 0, Some(3)), (3, 4, None)])), Ok((4, 6, 0)));
    }

    #[test]
    fn a_foreign_or_inconsistent_directory_is_refused() {
        let state = saved(0, vec![4], 5);
        let committed = manifest(4, &[(0, 0, Some(9))]);
        check(&state, Some(checkpoint(3, 5)), Some(committed.clone()), Err("belongs to job 3"));
        check(&state, None, Some(manifest(2, &[])), Err("belongs to job 2"));
        check(&state, Some(checkpoint(4, 12)), Some(committed.clone()), Err("ahead of the committed output"));
        check(&state, Some(checkpoint(4, 0)), None, Err("ahead of the committed output"));
        let finished = CommitManifest { finished: true, ..committed };
        check(&state, None, Some(finished), Err("already finished"));
    }

    #[test]
    fn a_job_without_file_output_resumes_after_its_checkpoint_with_no_manifest() {
        let state = saved(1, vec![4, 5], 6);
        let plan = plan_resume(&state, Some(checkpoint(4, 19)), None, false).expect("resumes");
        assert_eq!((plan.attempt, plan.attempt_job, plan.resume_batch), (2, 6, 20));
        assert_eq!(plan.manifest.committed_through(), Some(19), "committed through the checkpoint");
        let plan = plan_resume(&state, None, None, false).expect("resumes");
        assert_eq!((plan.resume_batch, plan.manifest.committed_through()), (0, None));
    }

    #[test]
    fn saved_atomically_loaded_and_a_bad_file_named() {
        let dir = std::env::temp_dir().join(format!("sleet-state-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let state = StateDir::new(&dir);
        assert_eq!(state.load().expect("no file, no job"), None);
        let job = saved(2, vec![4, 7, 9], 10);
        state.save(&job).expect("save");
        assert_eq!(state.load().expect("load"), Some(job));
        assert_eq!(state.load_figures().expect("no figures yet"), None);
        let figures = SavedFigures {
            batches_total: 40,
            counted_below: 38,
            counted_ahead: vec![39],
            recoveries: vec![RecoveryRecord { lost_worker: 2, resume_batch: 20, ..RecoveryRecord::default() }],
            replay: vec![(1, vec![(30, 1_500), (31, 2_000)])],
            ..SavedFigures::default()
        };
        state.save_figures(&figures).expect("save figures");
        assert_eq!(state.load_figures().expect("load figures"), Some(figures));
        let mut leftovers: Vec<_> = fs::read_dir(&dir).expect("dir").flatten().map(|entry| entry.file_name()).collect();
        leftovers.sort();
        let expected: Vec<std::ffi::OsString> = vec![FIGURES_FILE.into(), STATE_FILE.into()];
        assert_eq!(leftovers, expected, "no temporary file is left");
        fs::write(state.file(), r#"{"job": 4}"#).expect("a damaged file");
        let error = state.load().expect_err("refused").to_string();
        assert!(error.contains("job.json") && error.contains("missing field"), "{error}");
        state.clear().expect("clear");
        assert!(!dir.exists(), "an empty state directory is removed");
        state.clear().expect("clearing nothing is fine");
        assert_eq!(state.load().expect("gone"), None);
        let _ = fs::remove_dir_all(&dir);
    }
}
