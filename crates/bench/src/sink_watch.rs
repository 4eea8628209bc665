//! An outside reader of a run's JSON-lines output: when each batch's rows appeared in the sink
//! files and when the commit manifest admitted it, as a reader in another process sees them.
//! This is the end of the measured end-to-end latency that `bench ysb` checks the breakdown
//! against (`breakdown_check`), taken from the files and not from any engine report.
//!
//! ```text
//!  workers append part-N.jsonl ──inotify──▶ watcher thread: new lines' "batch" ──▶ rows_visible_at_us
//!  driver renames _manifest.json ──inotify──▶ watcher thread: committed_through ──▶ committed_at_us
//! ```
//!
//! The watcher blocks reading an inotify descriptor and reads the clock as soon as the read
//! returns, before it looks at any file: its times are late by the wake-up and one read of the
//! events only (tens of µs on an idle core, more when both cores are busy), never early. It is
//! stopped by removing its watch, which wakes it with the kernel's `IGNORED` event, so it needs
//! no timeout to look at its stop flag. Linux only, as the bench is.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use sleet_durable::manifest::{read_manifest, MANIFEST_FILE};
use sleet_wire::clock::now_us;

/// What the watcher saw, µs since the epoch on this host's clock (the workers' and the
/// driver's too: they are processes on this host).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinkSightings {
    /// Per batch: when the last of the files holding its rows first showed them. A batch's
    /// rows in one file are appended by one write, so they appear together.
    pub rows_visible_at_us: BTreeMap<u64, i64>,
    /// Per batch: when the manifest first admitted it (a reader that trusts only committed
    /// output sees it then).
    pub committed_at_us: BTreeMap<u64, i64>,
}

/// Stops its thread when dropped, so a run that fails half-way leaves no watcher behind.
pub struct SinkWatch {
    stop: Arc<AtomicBool>,
    /// Removing the watch wakes the thread.
    watches: Watches,
    descriptor: WatchDescriptor,
    thread: Option<JoinHandle<Result<SinkSightings>>>,
}

impl SinkWatch {
    /// Starts watching `dir`, creating it if need be: it must exist before the first write,
    /// or the first rows would be missed.
    pub fn start(dir: &Path) -> Result<SinkWatch> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let inotify = Inotify::init().context("starting inotify")?;
        let descriptor = inotify
            .watches()
            .add(dir, WatchMask::MODIFY | WatchMask::MOVED_TO | WatchMask::CREATE)
            .with_context(|| format!("watching {}", dir.display()))?;
        let watches = inotify.watches();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("sink-watch".into())
            .spawn(move || watch(inotify, &dir, &stopping))
            .context("starting the sink watcher")?;
        Ok(SinkWatch { stop, watches, descriptor, thread: Some(thread) })
    }

    /// Stops the watcher after one last look at the files, and returns what it saw.
    pub fn finish(mut self) -> Result<SinkSightings> {
        self.stop_watching();
        let thread = self.thread.take().expect("finish takes the watcher once");
        thread.join().map_err(|_| anyhow::anyhow!("the sink watcher panicked"))?
    }

    fn stop_watching(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Fails only if the watch is gone already (its directory was removed), in which case
        // the thread had its `IGNORED` event then and has stopped.
        let _ = self.watches.remove(self.descriptor.clone());
    }
}

impl Drop for SinkWatch {
    fn drop(&mut self) {
        if self.thread.is_some() {
            self.stop_watching();
        }
    }
}

/// Bytes for one read of events: room for hundreds of them.
const EVENT_BUFFER_BYTES: usize = 16 * 1024;

fn watch(mut inotify: Inotify, dir: &Path, stop: &AtomicBool) -> Result<SinkSightings> {
    let mut reader = SinkReader::new(dir);
    let mut buffer = [0u8; EVENT_BUFFER_BYTES];
    loop {
        let mut changed = Changed::default();
        changed.add(inotify.read_events_blocking(&mut buffer).context("waiting for inotify events")?);
        let at_us = now_us();
        // Drain what else is queued, so one scan answers all of it.
        loop {
            match inotify.read_events(&mut buffer) {
                Ok(events) => changed.add(events),
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(error) => return Err(error).context("reading inotify events"),
            }
        }
        if changed.watch_gone || stop.load(Ordering::SeqCst) {
            reader.scan(at_us, true)?;
            return Ok(reader.sightings);
        }
        reader.scan(at_us, changed.manifest)?;
    }
}

/// The files of one sink directory, read as they grow.
struct SinkReader {
    dir: PathBuf,
    files: HashMap<PathBuf, FileTail>,
    sightings: SinkSightings,
    committed_through: Option<u64>,
}

#[derive(Default)]
struct FileTail {
    offset: u64,
    /// The start of a line whose end was not written yet.
    partial: Vec<u8>,
    /// The last batch whose rows this file showed: files are appended in batch order.
    last_batch: Option<u64>,
}

impl SinkReader {
    fn new(dir: &Path) -> Self {
        SinkReader {
            dir: dir.to_path_buf(),
            files: HashMap::new(),
            sightings: SinkSightings::default(),
            committed_through: None,
        }
    }

    fn scan(&mut self, at_us: i64, manifest: bool) -> Result<()> {
        let entries = std::fs::read_dir(&self.dir).with_context(|| format!("listing {}", self.dir.display()))?;
        for entry in entries {
            let path = entry.with_context(|| format!("listing {}", self.dir.display()))?.path();
            let is_rows = path
                .file_name()
                .and_then(|name| name.to_str())
                .is_some_and(|name| name.starts_with("part-") && name.ends_with(".jsonl"));
            if is_rows {
                self.read_file(&path, at_us)?;
            }
        }
        if manifest {
            self.read_manifest(at_us)?;
        }
        Ok(())
    }

    fn read_file(&mut self, path: &Path, at_us: i64) -> Result<()> {
        let tail = self.files.entry(path.to_path_buf()).or_default();
        let mut file = std::fs::File::open(path).with_context(|| format!("opening {}", path.display()))?;
        file.seek(SeekFrom::Start(tail.offset)).with_context(|| format!("seeking in {}", path.display()))?;
        let mut appended = std::mem::take(&mut tail.partial);
        let read = file.read_to_end(&mut appended).with_context(|| format!("reading {}", path.display()))?;
        tail.offset += read as u64;
        let complete = appended.iter().rposition(|&byte| byte == b'\n').map_or(0, |end| end + 1);
        for line in appended[..complete].split(|&byte| byte == b'\n').filter(|line| !line.is_empty()) {
            let batch = line_batch(line).with_context(|| {
                format!("a line of {} without a batch: {}", path.display(), String::from_utf8_lossy(line))
            })?;
            if tail.last_batch.is_some_and(|last| batch <= last) {
                continue;
            }
            tail.last_batch = Some(batch);
            let seen = self.sightings.rows_visible_at_us.entry(batch).or_insert(at_us);
            *seen = (*seen).max(at_us);
        }
        tail.partial = appended[complete..].to_vec();
        Ok(())
    }

    fn read_manifest(&mut self, at_us: i64) -> Result<()> {
        let Some(manifest) = read_manifest(&self.dir).context("reading the commit manifest")? else {
            return Ok(());
        };
        let Some(through) = manifest.committed_through() else { return Ok(()) };
        let first = self.committed_through.map_or(0, |last| last + 1);
        for batch in first..=through {
            self.sightings.committed_at_us.insert(batch, at_us);
        }
        self.committed_through = Some(through.max(self.committed_through.unwrap_or(0)));
        Ok(())
    }
}

/// The `"batch"` of a sink line, which `format_json_lines` writes last: `…,"batch":42}`.
fn line_batch(line: &[u8]) -> Option<u64> {
    const KEY: &[u8] = b"\"batch\":";
    let start = line.windows(KEY.len()).rposition(|window| window == KEY)? + KEY.len();
    let digits = line[start..].iter().take_while(|byte| byte.is_ascii_digit()).count();
    std::str::from_utf8(&line[start..start + digits]).ok()?.parse().ok()
}

/// What woke the watcher.
#[derive(Default)]
struct Changed {
    /// The manifest was replaced (or events were lost, so it may have been).
    manifest: bool,
    /// The watch was removed: by `finish`, or with its directory.
    watch_gone: bool,
}

impl Changed {
    fn add<'a>(&mut self, events: impl Iterator<Item = inotify::Event<&'a std::ffi::OsStr>>) {
        for event in events {
            self.manifest |=
                event.name.is_some_and(|name| name == MANIFEST_FILE) || event.mask.contains(EventMask::Q_OVERFLOW);
            self.watch_gone |= event.mask.contains(EventMask::IGNORED);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_batch_is_read_off_the_end_of_a_sink_line() {
        assert_eq!(line_batch(br#"{"window_start":10000,"campaign_id":"c","count":3,"batch":417}"#), Some(417));
        assert_eq!(line_batch(br#"{"campaign_id":"\"batch\":9","batch":5}"#), Some(5), "the last key counts");
        assert_eq!(line_batch(br#"{"count":3}"#), None);
    }

    #[test]
    fn a_batch_is_visible_when_its_last_file_shows_it_and_committed_when_the_manifest_admits_it() {
        let dir = std::env::temp_dir().join(format!("sleet-sink-watch-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let append = |file: &str, text: &str| {
            use std::io::Write;
            let mut file = std::fs::OpenOptions::new().create(true).append(true).open(dir.join(file)).expect("open");
            file.write_all(text.as_bytes()).expect("write");
        };
        let mut reader = SinkReader::new(&dir);
        append("part-0.jsonl", "{\"count\":1,\"batch\":0}\n{\"count\":2,\"batch\":1}\n{\"count\":");
        reader.scan(100, false).expect("scan");
        append("part-1.jsonl", "{\"count\":1,\"batch\":0}\n");
        append("part-0.jsonl", "5,\"batch\":1}\n{\"count\":3,\"batch\":2}\n");
        reader.scan(200, false).expect("scan");
        let manifest = sleet_durable::manifest::CommitManifest {
            job: 1,
            segments: vec![sleet_durable::manifest::CommittedSegment {
                attempt: 0,
                first_batch: 0,
                last_batch: Some(1),
            }],
            finished: false,
        };
        sleet_durable::manifest::write_manifest(&dir, &manifest).expect("manifest");
        reader.scan(300, true).expect("scan");
        let expected: BTreeMap<u64, i64> = [(0, 200), (1, 100), (2, 200)].into();
        assert_eq!(reader.sightings.rows_visible_at_us, expected, "batch 0 waits for part-1; a torn line counts once");
        assert_eq!(reader.sightings.committed_at_us, [(0, 300), (1, 300)].into());
        append("part-0.jsonl", "no batch here\n");
        assert!(reader.scan(400, false).is_err(), "a line that is not a sink row is an error");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_watcher_sees_an_append_after_it_happens() {
        let dir = std::env::temp_dir().join(format!("sleet-sink-watch-live-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let watch = SinkWatch::start(&dir).expect("start");
        let before = now_us();
        std::fs::write(dir.join("part-0.jsonl"), "{\"count\":1,\"batch\":7}\n").expect("write");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let seen = watch.finish().expect("finish");
        let at = seen.rows_visible_at_us.get(&7).copied().expect("batch 7 seen");
        assert!(at >= before, "seen at {at}, written after {before}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
