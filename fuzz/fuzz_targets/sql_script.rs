//! SQL scripts as `sleet sql` and `sleet submit` read them: lexing, parsing, DDL, settings and
//! query planning (`sleet_sql::compile`), then for a script that compiles, what the client and
//! driver do next with its job.
//!
//! Input: the script's text. Checked: no panic, no hang, no unbounded allocation; an error
//! points inside the text (a line and column it has, or none); a compiled job is valid, plans
//! into stages with and without combine, explains, and survives its JSON round trip.

#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_plan::{plan_stages, JobFile, JobSettings, SinkSpec};
use sleet_sql::{compile, SqlOptions};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let no_files = |name: &str| Err(format!("{name}: no files while fuzzing"));
    let options = SqlOptions {
        default_sink: SinkSpec::Discard,
        job_name: "sql".into(),
        settings: JobSettings::default(),
        start_ms: 1_800_000_000_000,
        read_file: &no_files,
    };
    match compile(text, &options) {
        Err(error) => {
            if error.at.is_known() {
                let lines = text.split('\n').count() as u64;
                assert!(error.at.line <= lines, "{error} points past the text's {lines} lines");
            }
            let _ = error.to_string();
        }
        Ok(compiled) => {
            let job = compiled.job();
            job.check().expect("a compiled job is valid");
            for combine in [false, true] {
                plan_stages(&job.plan, combine).expect("a valid job plans into stages");
            }
            sleet_sql::explain(job).expect("a valid job explains");
            let again = JobFile::from_json(&job.to_json()).expect("a compiled job's JSON is a valid job");
            assert_eq!(&again, job, "a compiled job survives the JSON round trip");
        }
    }
});
