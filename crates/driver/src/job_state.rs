//! The driver's state directory: the running job as a restarted driver needs it to resume
//! (DESIGN §6, driver restart). One file, `job.json`, replaced atomically (temporary file,
//! fsync, rename, directory fsync) at every attempt's start and removed when the job ends.
//!
//! ```text
//!  state dir/job.json ─┐  the job file as resolved, its clock, the last attempt started,
//!                      │  every attempt id used, the next free id
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

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sleet_connectors::manifest::CommitManifest;
use sleet_plan::JobFile;
use sleet_wire::clock::BatchClock;
use sleet_wire::JobId;

use crate::checkpoints::CheckpointRecord;
use crate::error::DriverError;

const STATE_FILE: &str = "job.json";

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
/// the newest commit manifest on disk. Pure. Refuses what would break exactly-once output:
/// a checkpoint or manifest of another job, or a checkpoint past the committed output (the
/// driver publishes the manifest before it records a checkpoint, so only a damaged or
/// foreign directory can show that).
pub fn plan_resume(
    saved: &SavedJob,
    checkpoint: Option<CheckpointRecord>,
    manifest: Option<CommitManifest>,
) -> Result<ResumePlan, String> {
    if let Some(checkpoint) = &checkpoint {
        if checkpoint.job != saved.job {
            return Err(format!("the latest checkpoint belongs to job {}, not job {}", checkpoint.job, saved.job));
        }
    }
    let manifest = manifest.unwrap_or_else(|| CommitManifest { job: saved.job, ..CommitManifest::default() });
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

    /// Replaces the saved job durably: a crash leaves the old file or the new, whole.
    pub fn save(&self, saved: &SavedJob) -> Result<(), DriverError> {
        let path = self.file();
        let failed = |action: &str, error: std::io::Error| DriverError::State {
            path: path.clone(),
            reason: format!("{action}: {error}"),
        };
        fs::create_dir_all(&self.dir).map_err(|error| failed("creating the state directory", error))?;
        let temporary = self.dir.join(format!("{STATE_FILE}.{}.partial", std::process::id()));
        let bytes = serde_json::to_vec_pretty(saved).expect("a saved job serializes");
        File::create(&temporary)
            .and_then(|mut file| file.write_all(&bytes).and_then(|()| file.sync_all()))
            .map_err(|error| failed("writing", error))?;
        fs::rename(&temporary, &path).map_err(|error| failed("renaming into place", error))?;
        File::open(&self.dir).and_then(|dir| dir.sync_all()).map_err(|error| failed("syncing the directory", error))
    }

    /// The saved job, if a job was running; a file that does not parse is an error that
    /// names the file and the field, not a job quietly forgotten.
    pub fn load(&self) -> Result<Option<SavedJob>, DriverError> {
        let path = self.file();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(DriverError::State { path, reason: format!("reading: {error}") }),
        };
        serde_json::from_slice(&bytes).map(Some).map_err(|error| DriverError::State {
            path: path.clone(),
            reason: format!("not a saved job ({error}); fix it, or remove it to start without the job"),
        })
    }

    /// The job ended: nothing is left to resume. The directory goes too when nothing else
    /// is in it, so a finished job leaves no trace in the checkpoint directory it defaults to.
    pub fn clear(&self) -> Result<(), DriverError> {
        match fs::remove_file(self.file()) {
            Ok(()) => {}
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(DriverError::State { path: self.file(), reason: format!("removing: {error}") }),
        }
        // Not empty (a user's own files), or already gone: either way it stays as it is.
        let _ = fs::remove_dir(&self.dir);
        Ok(())
    }
}

/// The latest checkpoint record of `job` under `checkpoint_dir`, if it has one.
pub fn read_checkpoint(checkpoint_dir: &Path, job: JobId) -> Result<Option<CheckpointRecord>, DriverError> {
    let path = checkpoint_dir.join(crate::checkpoints::record_name(job));
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(DriverError::State { path, reason: format!("reading: {error}") }),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|error| DriverError::State { path, reason: format!("not a checkpoint record ({error})") })
}

#[cfg(test)]
mod tests {
    use sleet_connectors::manifest::CommittedSegment;

    use super::*;

    fn saved(attempt: u32, attempt_jobs: Vec<JobId>, next_job: JobId) -> SavedJob {
        SavedJob {
            job: 4,
            job_file: JobFile {
                plan: sleet_plan::Plan { name: "t".into(), nodes: Vec::new() },
                settings: sleet_plan::JobSettings::default(),
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
        let plan = plan_resume(saved, checkpoint, manifest);
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
    fn saved_atomically_loaded_and_a_bad_file_named() {
        let dir = std::env::temp_dir().join(format!("sleet-state-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let state = StateDir::new(&dir);
        assert_eq!(state.load().expect("no file, no job"), None);
        let job = saved(2, vec![4, 7, 9], 10);
        state.save(&job).expect("save");
        assert_eq!(state.load().expect("load"), Some(job));
        let leftovers: Vec<_> = fs::read_dir(&dir).expect("dir").flatten().map(|entry| entry.file_name()).collect();
        assert_eq!(leftovers, vec![std::ffi::OsString::from(STATE_FILE)], "no temporary file is left");
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
