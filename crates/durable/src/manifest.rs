//! A sink directory's commit manifest: which of the rows in its files a reader may trust.
//!
//! ```text
//!  dir/part-0.jsonl        attempt 0's rows, tagged with their batch
//!  dir/part-0.a1.jsonl     attempt 1's rows (after a recovery)
//!  dir/_manifest.json      {"segments": [{attempt 0, batches 0..=41}, {attempt 1, 42..=97}]}
//! ```
//!
//! Workers append rows to a file per partition and attempt; the driver alone decides what is
//! committed. A row counts when the manifest has a segment for its file's attempt that holds
//! its batch: the segments of successive attempts never overlap, so a batch re-run after a
//! failure is read from one attempt only, and rows that a lost (or only frozen) worker wrote
//! past its attempt's segment are never read. A batch is committed only once every task that
//! writes its rows has reported, so a segment never admits half a batch.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::DurableError;
use crate::file::{read_json_file, replace_file, Durability};

pub const MANIFEST_FILE: &str = "_manifest.json";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitManifest {
    /// The job (its first attempt's id) that wrote the directory.
    pub job: u64,
    /// In attempt order; batch ranges ascending and disjoint.
    pub segments: Vec<CommittedSegment>,
    /// The job ended and nothing more will be committed.
    pub finished: bool,
}

/// Batches `first_batch..=last_batch` are committed from the files of `attempt`; an attempt
/// that committed nothing has `last_batch` + 1 == `first_batch` (or no segment at all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommittedSegment {
    pub attempt: u32,
    pub first_batch: u64,
    pub last_batch: Option<u64>,
}

impl CommitManifest {
    /// Whether a row of `batch` in a file of `attempt` is committed output.
    pub fn admits(&self, attempt: u32, batch: u64) -> bool {
        self.segments.iter().any(|segment| {
            segment.attempt == attempt
                && batch >= segment.first_batch
                && segment.last_batch.is_some_and(|last| batch <= last)
        })
    }

    /// The last batch whose output is committed, if any is.
    pub fn committed_through(&self) -> Option<u64> {
        self.segments.iter().filter_map(|segment| segment.last_batch).max()
    }

    /// Attempts with at least one committed batch: the only files worth keeping.
    fn keeps_attempt(&self, attempt: u32) -> bool {
        self.segments.iter().any(|segment| {
            segment.attempt == attempt && segment.last_batch.is_some_and(|last| last >= segment.first_batch)
        })
    }
}

/// Replaces the manifest of `dir` in one step (write a temporary file, rename it over the
/// old one), so a reader sees the old manifest or the new one, never half of either. Not
/// synced: the rows it admits are in the OS's cache and not synced either, so the manifest
/// guards against a lost process, as they do; the job's end syncs both.
pub fn write_manifest(dir: &Path, manifest: &CommitManifest) -> Result<(), DurableError> {
    let text = serde_json::to_vec_pretty(manifest).expect("a manifest serializes");
    let durability = if manifest.finished { Durability::HostCrash } else { Durability::ProcessCrash };
    replace_file(&dir.join(MANIFEST_FILE), &text, durability, "publishing commit manifest")
}

/// The manifest of `dir`; `None` when it has none (nothing was ever committed there).
pub fn read_manifest(dir: &Path) -> Result<Option<CommitManifest>, DurableError> {
    read_json_file(&dir.join(MANIFEST_FILE), "a commit manifest")
}

/// The name of an output file of one partition: `<stem>.jsonl` for a job's first attempt,
/// `<stem>.a<attempt>.jsonl` after a recovery, so that a new owner never appends to a file a
/// lost worker may have left with a torn last line, or may still write to if it was only
/// frozen.
pub fn attempt_file_name(stem: &str, attempt: u32) -> String {
    match attempt {
        0 => format!("{stem}.jsonl"),
        attempt => format!("{stem}.a{attempt}.jsonl"),
    }
}

/// The attempt an output file belongs to, from its name (`attempt_file_name`):
/// `part-3.jsonl` → 0, `part-3.a2.jsonl` → 2; `None` for a name of another shape.
pub fn attempt_of_file(path: &Path) -> Option<u32> {
    let stem = path.file_name()?.to_str()?.strip_suffix(".jsonl")?;
    match stem.rsplit_once('.') {
        Some((_, attempt)) => attempt.strip_prefix('a')?.parse().ok(),
        None => Some(0),
    }
}

/// Removes the files of attempts that committed nothing (a lost attempt's partial output):
/// what no manifest segment admits is not output. Returns the files removed.
pub fn remove_uncommitted_files(files: &[PathBuf], manifest: &CommitManifest) -> Result<Vec<PathBuf>, DurableError> {
    let mut removed = Vec::new();
    for file in files {
        if attempt_of_file(file).is_some_and(|attempt| !manifest.keeps_attempt(attempt)) {
            fs::remove_file(file).map_err(DurableError::io("removing uncommitted output", file))?;
            removed.push(file.clone());
        }
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn manifest() -> CommitManifest {
        CommitManifest {
            job: 7,
            segments: vec![
                CommittedSegment { attempt: 0, first_batch: 0, last_batch: Some(41) },
                CommittedSegment { attempt: 1, first_batch: 42, last_batch: None },
                CommittedSegment { attempt: 2, first_batch: 42, last_batch: Some(97) },
            ],
            finished: true,
        }
    }

    #[test]
    fn a_row_counts_only_inside_its_attempts_segment() {
        let manifest = manifest();
        let check =
            |attempt, batch, expected| assert_eq!(manifest.admits(attempt, batch), expected, "{attempt} {batch}");
        check(0, 0, true);
        check(0, 41, true);
        check(0, 42, false);
        check(1, 42, false);
        check(2, 42, true);
        check(2, 97, true);
        check(2, 98, false);
        check(3, 50, false);
        assert_eq!(manifest.committed_through(), Some(97));
        assert_eq!(CommitManifest::default().committed_through(), None);
    }

    #[test]
    fn file_names_tell_their_attempt() {
        let check = |name: &str, expected| assert_eq!(attempt_of_file(Path::new(name)), expected, "{name}");
        check("dir/part-3.jsonl", Some(0));
        check("part-3.a2.jsonl", Some(2));
        check("dead-letters-s0-p1.a11.jsonl", Some(11));
        check("part-3.b2.jsonl", None);
        check("_manifest.json", None);
        let name = attempt_file_name("part-5", 4);
        check(&name, Some(4));
    }

    #[test]
    fn written_then_read_and_uncommitted_attempts_removed() {
        let dir = std::env::temp_dir().join(format!("sleet-manifest-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        assert_eq!(read_manifest(&dir).expect("no dir is no manifest"), None);
        write_manifest(&dir, &manifest()).expect("write");
        assert_eq!(read_manifest(&dir).expect("read"), Some(manifest()));
        let files: Vec<PathBuf> = ["part-0.jsonl", "part-0.a1.jsonl", "part-0.a2.jsonl"]
            .iter()
            .map(|name| {
                let path = dir.join(name);
                fs::write(&path, "{}\n").expect("file");
                path
            })
            .collect();
        let removed = remove_uncommitted_files(&files, &manifest()).expect("remove");
        assert_eq!(removed, vec![dir.join("part-0.a1.jsonl")]);
        assert!(dir.join("part-0.jsonl").exists() && dir.join("part-0.a2.jsonl").exists());
        fs::write(dir.join(MANIFEST_FILE), "{").expect("corrupt");
        let error = read_manifest(&dir).expect_err("a corrupt manifest is an error").to_string();
        assert!(error.contains("_manifest.json") && error.contains("not a commit manifest"), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }
}
