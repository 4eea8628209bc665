//! A SQL script as `sleet sql` and `sleet submit` read it: compiled on the client (the driver
//! receives a job file, as from any other front end), with the files it names read relative
//! to the script and the defaults `sleet job` uses for results and dead letters.

use std::path::Path;

use anyhow::{Context, Result};
use sleet_plan::{JobSettings, SinkSpec};
use sleet_sql::{compile, Compiled, SqlOptions};

/// Whether `path` names a SQL script rather than a JSON job file.
pub fn is_sql(path: &Path) -> bool {
    path.extension().is_some_and(|extension| extension.eq_ignore_ascii_case("sql"))
}

/// What a script's bare `SELECT` writes to, and where bad records go, unless it says.
pub struct SqlDefaults {
    pub results_dir: String,
    pub dead_letter_dir: String,
    pub now_ms: i64,
}

impl SqlDefaults {
    pub fn here(now_ms: i64) -> Result<SqlDefaults> {
        Ok(SqlDefaults {
            results_dir: sleet_workloads::absolute_dir("sleet-results", "the results directory")?,
            dead_letter_dir: sleet_workloads::absolute_dir("sleet-dead-letters", "the dead-letter directory")?,
            now_ms,
        })
    }
}

/// Compiles the script at `path` (its text is `text`); a bare SELECT's job is named after the
/// file.
pub fn compile_sql_file(path: &Path, text: &str, defaults: &SqlDefaults) -> Result<Compiled> {
    let base = path.parent().unwrap_or(Path::new("."));
    let name = path.file_stem().map_or_else(|| "sql".to_string(), |stem| stem.to_string_lossy().into_owned());
    compile_in(base, &name, text, defaults).map_err(|error| anyhow::anyhow!("{}: {error}", path.display()))
}

/// Compiles a script that came without a file (posted to the driver's API): the files it
/// names are read from the current directory, and a bare SELECT's job is called `name`.
pub fn compile_sql_text(name: &str, text: &str, defaults: &SqlDefaults) -> Result<Compiled> {
    compile_in(Path::new("."), name, text, defaults).map_err(|error| anyhow::anyhow!("{error}"))
}

fn compile_in(
    base: &Path,
    job_name: &str,
    text: &str,
    defaults: &SqlDefaults,
) -> Result<Compiled, sleet_sql::SqlError> {
    let base = base.to_path_buf();
    let read_file = move |name: &str| {
        let resolved = base.join(name);
        std::fs::read_to_string(&resolved).map_err(|error| format!("reading {}: {error}", resolved.display()))
    };
    let settings = JobSettings { dead_letter_dir: Some(defaults.dead_letter_dir.clone()), ..JobSettings::default() };
    let options = SqlOptions {
        default_sink: SinkSpec::JsonLines { dir: defaults.results_dir.clone() },
        job_name: job_name.to_string(),
        // A generator that simulates time from a start begins a moment after the script is
        // compiled, on a whole second, as `sleet job gateway` does.
        start_ms: (defaults.now_ms + 5_000) / 1_000 * 1_000,
        settings,
        read_file: &read_file,
    };
    compile(text, &options)
}

/// Reads and compiles a script; the error names the file.
pub fn read_sql_file(path: &Path, defaults: &SqlDefaults) -> Result<Compiled> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    compile_sql_file(path, &text, defaults)
}
