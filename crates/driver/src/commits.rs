//! Output commits (exactly-once results, `docs/design/recovery.md`): which batches' rows a reader
//! of the job's file output may trust, published as each output directory's commit manifest.
//!
//! A batch is committed once it and every batch before it completed in the current attempt
//! (every task that writes its rows reported, so its rows are all written). Each attempt owns
//! a segment of batches; a recovery first publishes the failed attempt's segment as it stands,
//! then opens the next attempt's segment right after it. Batches up to that point are never
//! written again: the new attempt re-runs them only to rebuild state (the workers drop their
//! output), and readers take the rest from the new attempt's files only. So no committed row
//! is ever read twice, and rows a lost worker wrote past its segment are never read at all.
//!
//! The decisions are pure; `publish` and `finish` do the I/O.

use std::path::PathBuf;

use sleet_durable::file::list_files;
use sleet_durable::manifest::{
    read_manifest, remove_uncommitted_files, write_manifest, CommitManifest, CommittedSegment,
};
use sleet_durable::DurableError;
use sleet_plan::{SinkSpec, StageOutput, StagePlan};
use sleet_wire::JobId;

use crate::progress::CountedBatches;

/// Publishing is a file write and rename on the driver's event loop; at most this often while
/// the job runs (and at every recovery and at the end), so 10 ms batches do not cost 100
/// renames a second. Readers see committed output this much later at worst.
const PUBLISH_INTERVAL_MS: i64 = 100;

/// An output directory and the prefix of the files the job writes there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputDir {
    pub dir: PathBuf,
    pub prefix: &'static str,
}

/// The directories a job writes its rows and dead letters to.
pub fn output_dirs(stages: &[StagePlan], dead_letter_dir: Option<&str>) -> Vec<OutputDir> {
    let sinks = stages.iter().filter_map(|stage| match &stage.output {
        StageOutput::Sink(SinkSpec::JsonLines { dir }) => Some(OutputDir { dir: PathBuf::from(dir), prefix: "part-" }),
        _ => None,
    });
    let dead_letters = dead_letter_dir.map(|dir| OutputDir { dir: PathBuf::from(dir), prefix: "dead-letters-" });
    sinks.chain(dead_letters).collect()
}

/// The newest of the manifests a job's output directories hold. A publication writes the
/// same manifest to each directory in turn, so a driver that died half-way leaves some
/// directories one publication behind; the newest is the truth, since every batch it admits
/// was complete in every directory before it was written. Pure.
pub fn newest_manifest(manifests: impl IntoIterator<Item = CommitManifest>) -> Option<CommitManifest> {
    manifests.into_iter().max_by_key(|manifest| {
        let last = manifest.segments.last();
        (manifest.segments.len(), last.and_then(|segment| segment.last_batch).map(|batch| batch + 1))
    })
}

/// The manifests on disk of a job's output directories.
pub fn read_manifests(dirs: &[OutputDir]) -> Result<Vec<CommitManifest>, DurableError> {
    let mut manifests = Vec::new();
    for output in dirs {
        manifests.extend(read_manifest(&output.dir)?);
    }
    Ok(manifests)
}

pub struct OutputCommits {
    dirs: Vec<OutputDir>,
    manifest: CommitManifest,
    /// Batches completed in the current attempt, and every batch before its segment.
    completed: CountedBatches,
    last_publish_ms: i64,
    /// The current segment's end as last published.
    published: Option<u64>,
    /// The last batch a publication admitted and when it was published (µs), until taken
    /// (`take_publication`).
    publication: Option<(u64, i64)>,
}

impl OutputCommits {
    pub fn new(job: JobId, dirs: Vec<OutputDir>) -> Self {
        let segment = CommittedSegment { attempt: 0, first_batch: 0, last_batch: None };
        OutputCommits {
            dirs,
            manifest: CommitManifest { job, segments: vec![segment], finished: false },
            completed: CountedBatches::below(0),
            last_publish_ms: i64::MIN,
            published: None,
            publication: None,
        }
    }

    /// A restarted driver goes on from the manifest on disk, its last segment published as
    /// it stands; `start_attempt` then opens the resumed attempt's segment after it.
    pub fn resumed(dirs: Vec<OutputDir>, mut manifest: CommitManifest) -> Self {
        if manifest.segments.is_empty() {
            manifest.segments.push(CommittedSegment { attempt: 0, first_batch: 0, last_batch: None });
        }
        let segment = *manifest.segments.last().expect("just ensured");
        OutputCommits {
            dirs,
            manifest,
            completed: CountedBatches::below(segment.last_batch.map_or(segment.first_batch, |last| last + 1)),
            last_publish_ms: i64::MIN,
            published: segment.last_batch,
            publication: None,
        }
    }

    fn segment(&self) -> &CommittedSegment {
        self.manifest.segments.last().expect("there is always a current segment")
    }

    /// The last batch of the current attempt that is committed in memory (not yet published).
    fn mark(&self) -> Option<u64> {
        let first_missing = self.completed.first_missing();
        (first_missing > self.segment().first_batch).then(|| first_missing - 1)
    }

    /// The last batch whose output is committed, counting the current attempt's batches
    /// completed so far: what a checkpoint may be recorded up to.
    pub fn committed_in_memory(&self) -> Option<u64> {
        self.mark().or(self.segment().first_batch.checked_sub(1))
    }

    /// A batch completed in the current attempt; returns whether that moved the mark.
    pub fn completed(&mut self, batch: u64) -> bool {
        let before = self.mark();
        self.completed.insert(batch);
        self.mark() != before
    }

    /// Publishes when the mark moved and the last publication is old enough.
    pub fn publish_if_due(&mut self, now_ms: i64) -> Result<(), DurableError> {
        if self.mark() != self.published && now_ms.saturating_sub(self.last_publish_ms) >= PUBLISH_INTERVAL_MS {
            self.last_publish_ms = now_ms;
            self.publish()?;
        }
        Ok(())
    }

    /// Publishes the mark now if it moved since the last publication. A checkpoint is
    /// recorded only after this: a driver restarted from its state directory resumes after
    /// the checkpoint and writes only batches after the published mark, so the mark on disk
    /// must not lag the checkpoint.
    pub fn publish_if_behind(&mut self) -> Result<(), DurableError> {
        if self.mark() != self.published {
            self.publish()?;
        }
        Ok(())
    }

    fn publish(&mut self) -> Result<(), DurableError> {
        let mark = self.mark();
        self.manifest.segments.last_mut().expect("a current segment").last_batch = mark;
        sleet_failpoint::hit("driver-before-manifest");
        for output in &self.dirs {
            write_manifest(&output.dir, &self.manifest)?;
        }
        sleet_failpoint::hit("driver-after-manifest");
        self.published = mark;
        if let Some(mark) = mark.filter(|_| !self.dirs.is_empty()) {
            self.publication = Some((mark, sleet_wire::clock::now_us()));
        }
        Ok(())
    }

    /// The newest publication since the last call: the last batch it admitted and when. A
    /// job without output directories commits nothing, so it has none.
    pub fn take_publication(&mut self) -> Option<(u64, i64)> {
        self.publication.take()
    }

    /// A recovery: the failed attempt's segment is published as it stands and the next
    /// attempt's starts after it. Returns the last committed batch, whose output the new
    /// attempt must not write again.
    pub fn start_attempt(&mut self, attempt: u32) -> Result<Option<u64>, DurableError> {
        self.publish()?;
        let committed = self.committed_in_memory();
        let first_batch = committed.map_or(0, |batch| batch + 1);
        self.manifest.segments.push(CommittedSegment { attempt, first_batch, last_batch: None });
        self.completed = CountedBatches::below(first_batch);
        self.published = None;
        Ok(committed)
    }

    /// The job ended: the last segment is published for good (synced), and the files of
    /// attempts that committed nothing are removed.
    pub fn finish(&mut self) -> Result<(), DurableError> {
        self.manifest.finished = true;
        self.publish()?;
        for output in &self.dirs {
            let files = list_files(&output.dir, output.prefix, "listing output files")?;
            remove_uncommitted_files(&files, &self.manifest)?;
        }
        Ok(())
    }

    #[cfg(test)]
    fn manifest(&self) -> &CommitManifest {
        &self.manifest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(attempt: u32, first_batch: u64, last_batch: Option<u64>) -> CommittedSegment {
        CommittedSegment { attempt, first_batch, last_batch }
    }

    #[test]
    fn the_mark_is_the_end_of_the_completed_prefix_and_a_recovery_starts_after_it() {
        let mut commits = OutputCommits::new(3, Vec::new());
        assert_eq!(commits.committed_in_memory(), None);
        assert!(!commits.completed(1), "batch 0 is missing");
        assert!(commits.completed(0));
        assert!(!commits.completed(3));
        assert_eq!(commits.committed_in_memory(), Some(1));
        // Batch 3 completed ahead of 2, then the attempt failed: 3 is done again.
        assert_eq!(commits.start_attempt(1).expect("no dirs, no I/O"), Some(1));
        assert_eq!(commits.take_publication(), None, "no output directory: nothing is committed for a reader");
        assert_eq!(commits.manifest().segments, vec![segment(0, 0, Some(1)), segment(1, 2, None)]);
        assert_eq!(commits.committed_in_memory(), Some(1), "nothing of attempt 1 yet");
        assert!(!commits.completed(1), "a re-run of a committed batch changes nothing");
        assert!(!commits.completed(3));
        assert!(commits.completed(2));
        assert_eq!(commits.committed_in_memory(), Some(3));
        // A recovery before the new attempt committed anything leaves it an empty segment.
        assert_eq!(commits.start_attempt(2).expect("no I/O"), Some(3));
        assert_eq!(commits.start_attempt(3).expect("no I/O"), Some(3));
        assert_eq!(
            commits.manifest().segments,
            vec![segment(0, 0, Some(1)), segment(1, 2, Some(3)), segment(2, 4, None), segment(3, 4, None)]
        );
    }

    #[test]
    fn published_to_every_directory_at_most_every_interval_and_uncommitted_files_removed() {
        let root = std::env::temp_dir().join(format!("sleet-commits-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let dirs = vec![
            OutputDir { dir: root.join("results"), prefix: "part-" },
            OutputDir { dir: root.join("dead"), prefix: "dead-letters-" },
        ];
        let mut commits = OutputCommits::new(9, dirs);
        let read = |dir: &str| sleet_durable::manifest::read_manifest(&root.join(dir)).expect("read");
        commits.completed(0);
        let before_us = sleet_wire::clock::now_us();
        commits.publish_if_due(1_000).expect("publish");
        assert_eq!(read("results").expect("published").segments, vec![segment(0, 0, Some(0))]);
        let (through, at_us) = commits.take_publication().expect("a publication");
        assert_eq!(through, 0);
        assert!((before_us..=sleet_wire::clock::now_us()).contains(&at_us), "stamped when written");
        assert_eq!(commits.take_publication(), None, "taken once");
        commits.completed(1);
        commits.publish_if_due(1_050).expect("too soon: nothing written");
        assert_eq!(commits.take_publication(), None);
        assert_eq!(read("dead").expect("published").segments, vec![segment(0, 0, Some(0))]);
        commits.publish_if_due(1_100).expect("publish");
        assert_eq!(read("dead").expect("published").segments, vec![segment(0, 0, Some(1))]);
        commits.start_attempt(1).expect("recovery");
        commits.start_attempt(2).expect("recovery");
        commits.completed(2);
        for name in ["part-0.jsonl", "part-0.a1.jsonl", "part-0.a2.jsonl"] {
            std::fs::write(root.join("results").join(name), "").expect("file");
        }
        commits.finish().expect("finish");
        let manifest = read("results").expect("final");
        assert!(manifest.finished);
        assert_eq!(manifest.segments, vec![segment(0, 0, Some(1)), segment(1, 2, None), segment(2, 2, Some(2))]);
        assert!(!root.join("results/part-0.a1.jsonl").exists(), "attempt 1 committed nothing");
        assert!(root.join("results/part-0.jsonl").exists() && root.join("results/part-0.a2.jsonl").exists());
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn a_restart_goes_on_from_the_newest_manifest_with_a_segment_after_it() {
        let manifest = |segments: Vec<CommittedSegment>| CommitManifest { job: 3, segments, finished: false };
        let behind = manifest(vec![segment(0, 0, Some(7)), segment(1, 8, Some(12))]);
        let ahead = manifest(vec![segment(0, 0, Some(7)), segment(1, 8, Some(15))]);
        let opened = manifest(vec![segment(0, 0, Some(7)), segment(1, 8, Some(12)), segment(2, 13, None)]);
        let newest = |list: Vec<&CommitManifest>| newest_manifest(list.into_iter().cloned());
        assert_eq!(newest(vec![&behind, &ahead]), Some(ahead.clone()));
        assert_eq!(newest(vec![&ahead, &behind]), Some(ahead.clone()));
        assert_eq!(newest(vec![&ahead, &opened]), Some(opened.clone()), "a later segment is newer");
        assert_eq!(newest(vec![]), None);
        let mut commits = OutputCommits::resumed(Vec::new(), ahead);
        assert_eq!(commits.committed_in_memory(), Some(15));
        assert_eq!(commits.start_attempt(2).expect("no I/O"), Some(15));
        assert!(!commits.completed(15), "committed before the restart");
        assert!(commits.completed(16));
        assert_eq!(
            commits.manifest().segments,
            vec![segment(0, 0, Some(7)), segment(1, 8, Some(15)), segment(2, 16, None)]
        );
        let mut empty = OutputCommits::resumed(Vec::new(), manifest(Vec::new()));
        assert_eq!(empty.start_attempt(1).expect("no I/O"), None);
        assert_eq!(empty.manifest().segments, vec![segment(0, 0, None), segment(1, 0, None)]);
    }

    #[test]
    fn file_sinks_and_dead_letters_are_the_outputs() {
        assert!(output_dirs(&[], None).is_empty());
        assert_eq!(output_dirs(&[], Some("dl")), vec![OutputDir { dir: PathBuf::from("dl"), prefix: "dead-letters-" }]);
    }
}
