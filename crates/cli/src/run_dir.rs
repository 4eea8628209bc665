//! The directory a local run writes its results, dead letters and logs to. sleet deletes only
//! what it wrote: a directory it created carries a marker file, and a directory without one
//! that already holds files is refused unless the user says `--force`.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// Marks a directory as created by a sleet run, so a later run may clear it.
const MARKER: &str = ".sleet-run";

pub struct RunDir {
    pub path: PathBuf,
    /// A temporary directory chosen by sleet, not by the user.
    temporary: bool,
}

impl RunDir {
    /// `out` is the user's `--out`; without it, a fresh temporary directory named after `what`.
    pub fn prepare(out: Option<&Path>, force: bool, what: &str) -> Result<RunDir> {
        let (path, temporary) = match out {
            Some(path) => (path.to_path_buf(), false),
            None => (std::env::temp_dir().join(format!("sleet-{what}-{}", std::process::id())), true),
        };
        if path.exists() {
            let mut entries = std::fs::read_dir(&path).with_context(|| format!("reading {}", path.display()))?;
            let empty = entries.next().is_none();
            if !empty && !path.join(MARKER).exists() && !force {
                bail!(
                    "{} already holds files that sleet did not write; choose a new or empty directory, \
                     or add --force to write into it (its results/, dead-letters/ and logs/ are replaced)",
                    path.display()
                );
            }
        }
        std::fs::create_dir_all(&path).with_context(|| format!("creating {}", path.display()))?;
        let marker = path.join(MARKER);
        if !marker.exists() && !force {
            std::fs::write(&marker, "written by sleet: a later run may clear this directory\n")
                .with_context(|| format!("writing {}", marker.display()))?;
        }
        Ok(RunDir { path, temporary })
    }

    /// `name` under the run directory, emptied: a run's output never mixes with an earlier one's.
    pub fn fresh(&self, name: &str) -> Result<PathBuf> {
        let dir = self.path.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("clearing {}", dir.display()))?;
        }
        Ok(dir)
    }

    /// A temporary directory goes once the run succeeded; after a failure it stays for its
    /// logs, and the user is told where.
    pub fn finish(self, succeeded: bool) {
        if !self.temporary {
            return;
        }
        if succeeded {
            let _ = std::fs::remove_dir_all(&self.path);
        } else {
            eprintln!("{}: the run's logs and output are kept in {}", crate::entry::program(), self.path.display());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sleet-run-dir-test-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn a_directory_of_someone_elses_files_is_refused_and_left_alone() {
        let dir = scratch("foreign");
        std::fs::create_dir_all(dir.join("results")).expect("dir");
        std::fs::write(dir.join("results").join("thesis.tex"), "precious").expect("file");
        let error = RunDir::prepare(Some(&dir), false, "t").err().expect("refused").to_string();
        assert!(error.contains("--force") && error.contains(&dir.display().to_string()), "{error}");
        assert!(dir.join("results").join("thesis.tex").exists(), "nothing was deleted");
        let forced = RunDir::prepare(Some(&dir), true, "t").expect("--force writes into it");
        assert!(!dir.join(MARKER).exists(), "a forced directory is not marked as sleet's");
        forced.fresh("results").expect("cleared");
        assert!(!dir.join("results").exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_directory_sleet_created_is_reused() {
        let dir = scratch("own");
        let run = RunDir::prepare(Some(&dir), false, "t").expect("new directory");
        std::fs::create_dir_all(run.fresh("results").expect("path")).expect("dir");
        std::fs::write(dir.join("results").join("part-0.jsonl"), "{}").expect("file");
        RunDir::prepare(Some(&dir), false, "t").expect("its own directory again");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
