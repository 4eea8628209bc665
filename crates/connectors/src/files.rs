//! Reading back the JSON-lines files a connector wrote.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::ConnectorError;

/// What a replaced file must survive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// A killed process: the page cache keeps what was written, so the rename is enough.
    ProcessCrash,
    /// A lost host: the file is synced before the rename and its directory after it.
    HostCrash,
}

/// The suffix of a replacement still being written: not a file of its directory yet.
pub const TEMPORARY_SUFFIX: &str = ".partial";

/// Replaces `path` with `bytes`, whole: a reader finds the old file or the new one, never a
/// part of either. The bytes go to a temporary file named for this process (two writers of
/// one directory by mistake never rename each other's half-written file), which is then
/// renamed over `path`. `action` names the write in an error.
pub fn replace_file(
    path: &Path,
    bytes: &[u8],
    durability: Durability,
    action: &'static str,
) -> Result<(), ConnectorError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(ConnectorError::io(action, dir))?;
    let mut temporary = path.as_os_str().to_owned();
    temporary.push(format!(".{}{TEMPORARY_SUFFIX}", std::process::id()));
    let temporary = PathBuf::from(temporary);
    fs::File::create(&temporary)
        .and_then(|mut file| {
            file.write_all(bytes)?;
            if durability == Durability::HostCrash {
                file.sync_all()?;
            }
            Ok(())
        })
        .map_err(ConnectorError::io(action, &temporary))?;
    fs::rename(&temporary, path).map_err(ConnectorError::io(action, path))?;
    if durability == Durability::HostCrash {
        fs::File::open(dir).and_then(|handle| handle.sync_all()).map_err(ConnectorError::io(action, dir))?;
    }
    Ok(())
}

/// The JSON document at `path` as a `T`; `None` when there is no file. `what` names the
/// document in the error for one that does not parse.
pub fn read_json_file<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<Option<T>, ConnectorError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(ConnectorError::io("reading", path)(error)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|error| ConnectorError::Format {
        path: path.to_path_buf(),
        line: error.line(),
        reason: format!("not {what}: {error}"),
    })
}

/// Files in `dir` whose names start with `prefix`, sorted by name; a missing directory has none.
pub fn list_files(dir: &Path, prefix: &str, action: &'static str) -> Result<Vec<PathBuf>, ConnectorError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(ConnectorError::io(action, dir)(error)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(prefix)))
        .collect();
    files.sort();
    Ok(files)
}

/// A parsed line, with where it came from so a caller's error can name the file and line.
pub struct JsonLine {
    pub path: PathBuf,
    pub line: usize,
    pub value: serde_json::Value,
}

/// Every committed line of every file in `dir` whose name starts with `prefix`, parsed as
/// JSON, files in name order. `what` names the files in errors ("sink", "dead-letter").
///
/// Only what the directory's commit manifest admits is read (`manifest`): a line of a batch
/// its file's attempt did not commit is output of a failed attempt, re-done by another.
/// Files with no manifest beside them were not written by a sleet job that committed
/// anything, which is an error rather than a guess. A writer ends every line with a newline,
/// so bytes after a file's last newline are a write a crash cut short: they are skipped.
pub fn read_json_lines(dir: &Path, prefix: &str, what: &'static str) -> Result<Vec<JsonLine>, ConnectorError> {
    let files = list_files(dir, prefix, what)?;
    if files.is_empty() {
        return Ok(Vec::new());
    }
    let Some(manifest) = crate::manifest::read_manifest(dir)? else {
        return Err(ConnectorError::External {
            what: format!("{what} in {}", dir.display()),
            reason: format!(
                "no commit manifest ({}): nothing in it was committed by a sleet job",
                crate::manifest::MANIFEST_FILE
            ),
        });
    };
    let mut lines = Vec::new();
    for path in files {
        let attempt = crate::manifest::attempt_of_file(&path).ok_or_else(|| ConnectorError::Format {
            path: path.clone(),
            line: 0,
            reason: "not an output file name (`<stem>.jsonl` or `<stem>.a<attempt>.jsonl`)".to_string(),
        })?;
        let bytes = fs::read(&path).map_err(ConnectorError::io(what, &path))?;
        let complete = match bytes.iter().rposition(|byte| *byte == b'\n') {
            Some(last_newline) => &bytes[..last_newline],
            None => continue,
        };
        for (index, text) in complete.split(|byte| *byte == b'\n').enumerate() {
            let format_error = |reason: String| ConnectorError::Format { path: path.clone(), line: index + 1, reason };
            let value: serde_json::Value =
                serde_json::from_slice(text).map_err(|error| format_error(error.to_string()))?;
            let batch = value["batch"].as_u64().ok_or_else(|| format_error("a line without its `batch`".into()))?;
            if manifest.admits(attempt, batch) {
                lines.push(JsonLine { path: path.clone(), line: index + 1, value });
            }
        }
    }
    Ok(lines)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_committed_lines_are_read_a_torn_tail_is_skipped_and_a_bad_line_is_an_error() {
        use crate::manifest::{write_manifest, CommitManifest, CommittedSegment};
        let dir = std::env::temp_dir().join(format!("sleet-files-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).expect("dir");
        fs::write(dir.join("part-0.jsonl"), "{\"a\":1,\"batch\":0}\n{\"a\":2,\"batch\":1}\n{\"a\":").expect("write");
        fs::write(dir.join("part-1.jsonl"), "{\"a\":3,\"batch\":5}\n").expect("write");
        fs::write(dir.join("part-1.a1.jsonl"), "{\"a\":5,\"batch\":5}\n{\"a\":6,\"batch\":6}").expect("write");
        let error = read_json_lines(&dir, "part-", "reading").err().expect("no manifest").to_string();
        assert!(error.contains("no commit manifest"), "{error}");
        let manifest = CommitManifest {
            job: 1,
            segments: vec![
                CommittedSegment { attempt: 0, first_batch: 0, last_batch: Some(4) },
                CommittedSegment { attempt: 1, first_batch: 5, last_batch: Some(9) },
            ],
            finished: true,
        };
        write_manifest(&dir, &manifest).expect("manifest");
        let values: Vec<i64> = read_json_lines(&dir, "part-", "reading")
            .expect("a torn tail is no error")
            .iter()
            .map(|line| line.value["a"].as_i64().expect("a"))
            .collect();
        assert_eq!(values, vec![1, 2, 5], "batch 5 of attempt 0 is not committed, batch 6's line is torn");
        fs::write(dir.join("part-2.jsonl"), "{\"a\":\n{\"a\":4}\n").expect("write");
        let error = read_json_lines(&dir, "part-", "reading").err().expect("a bad middle line").to_string();
        assert!(error.contains("part-2.jsonl:1"), "{error}");
        assert_eq!(attempt_file_name("part-3", 0), "part-3.jsonl");
        assert_eq!(attempt_file_name("part-3", 2), "part-3.a2.jsonl");
        let _ = fs::remove_dir_all(&dir);
    }
}
