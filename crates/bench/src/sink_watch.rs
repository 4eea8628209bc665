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
//! The watcher blocks in `poll` on an inotify descriptor and reads the clock as soon as it
//! wakes, before reading anything: its times are late by the wake-up only (tens of µs on an
//! idle core, more when both cores are busy), never early. Linux only, as the bench is.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use sleet_connectors::manifest::{read_manifest, MANIFEST_FILE};
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

/// How long the watcher waits in `poll` before looking at its stop flag.
const POLL_TIMEOUT_MS: i32 = 50;

/// Stops its thread when dropped, so a run that fails half-way leaves no watcher behind.
pub struct SinkWatch {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<SinkSightings>>>,
}

impl SinkWatch {
    /// Starts watching `dir`, creating it if need be: it must exist before the first write,
    /// or the first rows would be missed.
    pub fn start(dir: &Path) -> Result<SinkWatch> {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let inotify = Inotify::watch(dir)?;
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("sink-watch".into())
            .spawn(move || watch(&inotify, &dir, &stopping))
            .context("starting the sink watcher")?;
        Ok(SinkWatch { stop, thread: Some(thread) })
    }

    /// Stops the watcher after one last look at the files, and returns what it saw.
    pub fn finish(mut self) -> Result<SinkSightings> {
        self.stop.store(true, Ordering::SeqCst);
        let thread = self.thread.take().expect("finish takes the watcher once");
        thread.join().map_err(|_| anyhow::anyhow!("the sink watcher panicked"))?
    }
}

impl Drop for SinkWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

fn watch(inotify: &Inotify, dir: &Path, stop: &AtomicBool) -> Result<SinkSightings> {
    let mut reader = SinkReader::new(dir);
    loop {
        let stopping = stop.load(Ordering::SeqCst);
        let woke = inotify.wait(POLL_TIMEOUT_MS)?;
        let at_us = now_us();
        if let Some(changed) = woke {
            reader.scan(at_us, changed.manifest)?;
        }
        if stopping {
            reader.scan(at_us, true)?;
            return Ok(reader.sightings);
        }
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
struct Changed {
    /// The manifest was replaced.
    manifest: bool,
}

/// An inotify descriptor watching one directory for appends and renames into it.
struct Inotify {
    fd: libc::c_int,
}

impl Inotify {
    fn watch(dir: &Path) -> Result<Inotify> {
        // SAFETY: plain system calls on a descriptor this struct owns; the path is a valid
        // NUL-terminated string for the duration of the call.
        let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
        anyhow::ensure!(fd >= 0, "inotify_init1: {}", std::io::Error::last_os_error());
        let inotify = Inotify { fd };
        let path = CString::new(dir.as_os_str().as_bytes()).context("a sink directory with a NUL in its name")?;
        let mask = libc::IN_MODIFY | libc::IN_MOVED_TO | libc::IN_CREATE;
        // SAFETY: as above.
        let watch = unsafe { libc::inotify_add_watch(inotify.fd, path.as_ptr(), mask) };
        anyhow::ensure!(watch >= 0, "watching {}: {}", dir.display(), std::io::Error::last_os_error());
        Ok(inotify)
    }

    /// Waits up to `timeout_ms` for changes and drains them; `None` when none came.
    fn wait(&self, timeout_ms: i32) -> Result<Option<Changed>> {
        let mut poll = libc::pollfd { fd: self.fd, events: libc::POLLIN, revents: 0 };
        // SAFETY: one valid pollfd.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout_ms) };
        if ready < 0 {
            let error = std::io::Error::last_os_error();
            return if error.kind() == std::io::ErrorKind::Interrupted { Ok(None) } else { Err(error.into()) };
        }
        if ready == 0 {
            return Ok(None);
        }
        let mut changed = Changed { manifest: false };
        let mut buffer = [0u8; 16 * 1024];
        loop {
            // SAFETY: the buffer is valid for its length.
            let read = unsafe { libc::read(self.fd, buffer.as_mut_ptr().cast(), buffer.len()) };
            if read <= 0 {
                break;
            }
            changed.manifest |= names(&buffer[..read as usize]).any(|name| name == MANIFEST_FILE.as_bytes());
        }
        Ok(Some(changed))
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this struct's and is closed once.
        unsafe { libc::close(self.fd) };
    }
}

/// The file names of the `inotify_event`s in `buffer` (the kernel pads each name with NULs).
fn names(buffer: &[u8]) -> impl Iterator<Item = &[u8]> {
    const HEADER: usize = std::mem::size_of::<libc::inotify_event>();
    let mut offset = 0;
    std::iter::from_fn(move || {
        if offset + HEADER > buffer.len() {
            return None;
        }
        let length_at = offset + HEADER - 4;
        let length = u32::from_ne_bytes(buffer[length_at..length_at + 4].try_into().expect("4 bytes")) as usize;
        let name = &buffer[offset + HEADER..(offset + HEADER + length).min(buffer.len())];
        offset += HEADER + length;
        Some(&name[..name.iter().position(|&byte| byte == 0).unwrap_or(name.len())])
    })
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
        let manifest = sleet_connectors::manifest::CommitManifest {
            job: 1,
            segments: vec![sleet_connectors::manifest::CommittedSegment {
                attempt: 0,
                first_batch: 0,
                last_batch: Some(1),
            }],
            finished: false,
        };
        sleet_connectors::manifest::write_manifest(&dir, &manifest).expect("manifest");
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
