//! Where a benchmark writes: its result object (`--json`), its plots, and the run directory
//! it keeps (`--out`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use sleet_cli::run_dir::RunDir;

/// Where a benchmark writes: its result object and the directory its run keeps.
#[derive(Debug, Clone, clap::Args)]
pub struct BenchOutputArgs {
    /// Write the result object here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Keep the run's sink files, dead letters, checkpoints and logs here (default: a
    /// temporary directory, removed after a successful run and kept after a failed one). A
    /// directory that holds files sleet did not write is refused unless --force.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Write into an --out directory that holds other files (its results/, dead-letters/ and
    /// logs/ are replaced).
    #[arg(long)]
    pub force: bool,
}

impl BenchOutputArgs {
    pub fn prepare(&self, what: &str) -> Result<RunDir> {
        RunDir::prepare(self.out.as_deref(), self.force, what)
    }

    /// Writes the result object to --json, or without it prints it on standard output.
    pub fn emit(&self, result: &serde_json::Value) -> Result<()> {
        let text = serde_json::to_string_pretty(result)?;
        match &self.json {
            Some(path) => write_output(path, &(text + "\n")),
            None => {
                println!("{text}");
                Ok(())
            }
        }
    }
}

/// Writes a benchmark's output file (a result object, a plot), creating its directory.
pub fn write_output(path: &Path, text: &str) -> Result<()> {
    if let Some(parent) = path.parent().filter(|parent| !parent.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}
