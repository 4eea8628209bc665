//! Where checkpoints live: snapshots of keyed state written by the workers, and the driver's
//! record of each complete checkpoint. Behind a trait so that an object store can stand in
//! for the directory; everything here is whole-object put, get, list and delete, which both
//! offer.
//!
//! A put is atomic and durable: written to a temporary name, synced, renamed, and the
//! directory synced, so a reader sees either nothing or the whole object, even after a
//! crash in the middle of the write.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::DurableError;
use crate::file::{replace_file, Durability, TEMPORARY_SUFFIX};

pub trait CheckpointStore: Send + Sync {
    /// Stores `bytes` under `name` (`/`-separated), replacing what was there; returns the
    /// location a later `get` takes.
    fn put(&self, name: &str, bytes: &[u8]) -> Result<String, DurableError>;

    fn get(&self, location: &str) -> Result<Vec<u8>, DurableError>;

    /// The names directly under `prefix` (a folder), sorted.
    fn list(&self, prefix: &str) -> Result<Vec<String>, DurableError>;

    /// Removes `prefix` and everything under it; nothing there is not an error.
    fn delete_all(&self, prefix: &str) -> Result<(), DurableError>;
}

/// Where the snapshots of one checkpoint of one job attempt go: one folder per checkpoint,
/// so that dropping an old checkpoint is one `delete_all`.
pub fn snapshot_folder(job: u64, batch: u64) -> String {
    format!("job-{job}/after-batch-{batch}")
}

pub fn snapshot_name(job: u64, batch: u64, stage: u32, partition: u32) -> String {
    format!("{}/s{stage}-p{partition}.state", snapshot_folder(job, batch))
}

/// A directory on a file system every process of the job can reach (one machine, or a
/// shared mount).
pub struct DirectoryStore {
    root: PathBuf,
}

impl DirectoryStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirectoryStore { root: root.into() }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }
}

impl CheckpointStore for DirectoryStore {
    fn put(&self, name: &str, bytes: &[u8]) -> Result<String, DurableError> {
        let path = self.path(name);
        replace_file(&path, bytes, Durability::HostCrash, "writing checkpoint file")?;
        Ok(path.to_string_lossy().into_owned())
    }

    fn get(&self, location: &str) -> Result<Vec<u8>, DurableError> {
        let path = Path::new(location);
        fs::read(path).map_err(DurableError::io("reading checkpoint file", path))
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>, DurableError> {
        let dir = self.path(prefix);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(DurableError::io("listing checkpoint directory", &dir)(error)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(DurableError::io("listing checkpoint directory", &dir))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // A temporary file is a put that never finished: not an object.
            if !name.ends_with(TEMPORARY_SUFFIX) {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn delete_all(&self, prefix: &str) -> Result<(), DurableError> {
        let path = self.path(prefix);
        let removed = if path.is_dir() { fs::remove_dir_all(&path) } else { fs::remove_file(&path) };
        match removed {
            Ok(()) => Ok(()),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(DurableError::io("deleting checkpoint files", &path)(error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_replaces_whole_objects_and_list_ignores_unfinished_ones() {
        let root = std::env::temp_dir().join(format!("sleet-checkpoint-store-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let store = DirectoryStore::new(&root);
        let first = store.put("job-1/b9/s1-p0.state", b"first").expect("put");
        let second = store.put("job-1/b9/s1-p0.state", b"second").expect("put again");
        assert_eq!(first, second, "the same name is the same location");
        assert_eq!(store.get(&first).expect("get"), b"second");
        fs::write(root.join("job-1/b9/s1-p1.state.77.partial"), b"torn").expect("a torn put");
        assert_eq!(store.list("job-1/b9").expect("list"), vec!["s1-p0.state".to_string()]);
        assert!(store.list("job-2").expect("list of nothing").is_empty());
        store.delete_all("job-1/b9").expect("delete");
        assert!(store.get(&first).is_err(), "deleted");
        store.delete_all("job-1/b9").expect("deleting nothing is fine");
        let _ = fs::remove_dir_all(&root);
    }
}
