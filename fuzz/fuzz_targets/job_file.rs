//! Job files as `sleet submit` reads them: `JobFile::from_json` (parse, plan validation,
//! settings validation), then for a job that passes, what the driver does next with it.
//!
//! Input: the file's text. Checked: no panic, no hang, no unbounded allocation; a valid job
//! plans into stages either way (with and without combine) without a panic, and survives
//! `to_json` → `from_json` unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_plan::{plan_stages, JobFile};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(job) = JobFile::from_json(text) else { return };
    for combine in [false, true] {
        let _ = plan_stages(&job.plan, combine);
    }
    let again = JobFile::from_json(&job.to_json()).expect("a valid job's own JSON is a valid job");
    assert_eq!(again, job, "a job survives the JSON round trip");
});
