//! Whole-file writes a crash cannot tear, and the reads that go with them: the leaf every
//! other file of this crate builds on.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::DurableError;

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
) -> Result<(), DurableError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(DurableError::io(action, dir))?;
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
        .map_err(DurableError::io(action, &temporary))?;
    fs::rename(&temporary, path).map_err(DurableError::io(action, path))?;
    if durability == Durability::HostCrash {
        fs::File::open(dir).and_then(|handle| handle.sync_all()).map_err(DurableError::io(action, dir))?;
    }
    Ok(())
}

/// The JSON document at `path` as a `T`; `None` when there is no file. `what` names the
/// document in the error for one that does not parse.
pub fn read_json_file<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<Option<T>, DurableError> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(DurableError::io("reading", path)(error)),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|error| DurableError::Format {
        path: path.to_path_buf(),
        line: error.line(),
        reason: format!("not {what}: {error}"),
    })
}

/// Files in `dir` whose names start with `prefix`, sorted by name; a missing directory has none.
pub fn list_files(dir: &Path, prefix: &str, action: &'static str) -> Result<Vec<PathBuf>, DurableError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(DurableError::io(action, dir)(error)),
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with(prefix)))
        .collect();
    files.sort();
    Ok(files)
}
