//! A Nexmark query's SQL script made into the job one run submits: compiled as `sleet submit`
//! compiles it, then given the run's rate, partitions, start, length and batch interval, and
//! for the exactness check a `files` sink in the run directory in place of the script's own.

use std::path::Path;

use anyhow::{Context, Result};
use sleet_cli::sql_file::{compile_sql_file, SqlDefaults};
use sleet_plan::{JobFile, NexmarkSourceSpec, Operator, SinkSpec, SourceSpec};
use sleet_sql::Compiled;

/// What a run sets over the script's own choices.
#[derive(Debug, Clone)]
pub struct Overrides {
    pub rate_per_s: u64,
    pub partitions: u32,
    /// Batch 0's start, and event 0's time: the two must agree or the first batches miss
    /// events (or wait for them).
    pub start_ms: i64,
    pub duration_ms: u64,
    pub batch_interval_ms: u64,
    /// `Some(dir)`: write the results as JSON lines under `dir`; `None`: keep the script's sink.
    pub results_dir: Option<String>,
    pub dead_letter_dir: String,
}

/// The job `script` (at `path`, for its name and errors) compiles to with `overrides`
/// applied, and the generator's spec as the job runs it, from which the ground truth comes.
pub fn job_of_script(path: &Path, script: &str, overrides: &Overrides) -> Result<(JobFile, NexmarkSourceSpec)> {
    let defaults = SqlDefaults {
        results_dir: overrides.results_dir.clone().unwrap_or_default(),
        dead_letter_dir: overrides.dead_letter_dir.clone(),
        now_ms: overrides.start_ms,
    };
    let mut job = match compile_sql_file(path, script, &defaults)? {
        Compiled::Job(job) => job,
        Compiled::Explain(_) => {
            anyhow::bail!("{}: the script explains a query rather than running one", path.display())
        }
    };
    let mut nexmark = Vec::new();
    let mut sinks = 0;
    for node in &mut job.plan.nodes {
        match &mut node.operator {
            Operator::Source { spec: SourceSpec::Nexmark(spec) } => {
                spec.rate_per_s = overrides.rate_per_s;
                spec.partitions = overrides.partitions;
                spec.start_ms = overrides.start_ms;
                nexmark.push(spec.clone());
            }
            Operator::Source { spec } => anyhow::bail!(
                "{}: the bench runs on the built-in Nexmark generator, but the script reads {spec:?}",
                path.display()
            ),
            Operator::Sink { spec } => {
                sinks += 1;
                if let Some(dir) = &overrides.results_dir {
                    *spec = SinkSpec::JsonLines { dir: dir.clone() };
                }
            }
            _ => {}
        }
    }
    let spec = match nexmark.as_slice() {
        [spec] => spec.clone(),
        other => anyhow::bail!(
            "{}: the bench needs one table on the Nexmark generator, the script has {}",
            path.display(),
            other.len()
        ),
    };
    anyhow::ensure!(sinks == 1, "{}: the bench needs one INSERT INTO, the script writes {sinks} sinks", path.display());
    let settings = &mut job.settings;
    settings.batch_interval_ms = overrides.batch_interval_ms;
    settings.duration_ms = Some(overrides.duration_ms);
    settings.start_ms = Some(overrides.start_ms);
    settings.dead_letter_dir = Some(overrides.dead_letter_dir.clone());
    job.settings.validate().with_context(|| format!("{}: the run's settings", path.display()))?;
    Ok((job, spec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overrides(results_dir: Option<&str>) -> Overrides {
        Overrides {
            rate_per_s: 12_345,
            partitions: 3,
            start_ms: 1_767_225_600_000,
            duration_ms: 4_000,
            batch_interval_ms: 10,
            results_dir: results_dir.map(String::from),
            dead_letter_dir: "/tmp/dead".into(),
        }
    }

    fn script(name: &str) -> (std::path::PathBuf, String) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benchmarks/nexmark").join(name);
        let text = std::fs::read_to_string(&path).expect("the repository's script");
        (path, text)
    }

    #[test]
    fn the_run_sets_the_generator_the_schedule_and_the_sink() {
        for name in ["q0.sql", "q1.sql", "q2.sql", "q3.sql", "q5.sql", "q7.sql", "q8.sql"] {
            let (path, text) = script(name);
            let (job, spec) = job_of_script(&path, &text, &overrides(Some("/tmp/results"))).expect(name);
            assert_eq!((spec.rate_per_s, spec.partitions, spec.start_ms), (12_345, 3, 1_767_225_600_000), "{name}");
            assert_eq!(job.settings.batch_interval_ms, 10, "{name}");
            assert_eq!((job.settings.duration_ms, job.settings.start_ms), (Some(4_000), Some(spec.start_ms)), "{name}");
            let sink = job.plan.nodes.iter().find_map(|node| match &node.operator {
                Operator::Sink { spec } => Some(spec.clone()),
                _ => None,
            });
            assert_eq!(sink, Some(SinkSpec::JsonLines { dir: "/tmp/results".into() }), "{name}");
        }
    }

    #[test]
    fn without_a_check_the_scripts_blackhole_stays() {
        let (path, text) = script("q2.sql");
        let (job, _) = job_of_script(&path, &text, &overrides(None)).expect("q2");
        assert!(job.plan.nodes.iter().any(|node| matches!(node.operator, Operator::Sink { spec: SinkSpec::Discard })));
    }

    #[test]
    fn a_script_on_another_source_is_refused_by_name() {
        let text =
            "CREATE TABLE t (a BIGINT) WITH (connector = 'generator', kind = 'ysb', rate = '10', partitions = '1');
                    CREATE TABLE d (a BIGINT) WITH (connector = 'blackhole');
                    INSERT INTO d SELECT a FROM t;";
        let error = job_of_script(Path::new("other.sql"), text, &overrides(None)).expect_err("not Nexmark");
        assert!(format!("{error:#}").contains("other.sql"), "{error:#}");
    }
}
