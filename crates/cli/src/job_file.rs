//! Reading a job file for `sleet submit`: the files it names (Avro schemas) are read here, on
//! the client, relative to the job file, so the job reaches the driver whole.

use std::path::Path;

use anyhow::{Context, Result};
use sleet_plan::JobFile;

/// Parses `text`, the contents of the job file at `path`, puts the JSON of each Avro schema
/// it names by path in its place, and validates the result.
pub fn read_job_file(path: &Path, text: &str) -> Result<JobFile> {
    let base = path.parent().unwrap_or(Path::new("."));
    let read_schema = |schema: &str| std::fs::read_to_string(base.join(schema)).map_err(|error| error.to_string());
    let job = JobFile::from_json_unchecked(text).and_then(|mut job| {
        job.inline_avro_schemas(read_schema)?;
        job.check()?;
        Ok(job)
    });
    job.with_context(|| format!("{} is not a valid job", path.display()))
}

#[cfg(test)]
mod tests {
    use sleet_plan::{AvroSchemaSource, Operator};

    use super::*;

    fn job_text(schema: &str) -> String {
        format!(
            r#"{{"plan": {{"name": "gw", "nodes": [
                {{"operator": {{"source": {{"spec": {{"kind": "files", "path": "/in", "partitions": 1}}}}}}}},
                {{"operator": {{"decode_avro": {{"schema": {schema}}}}}}},
                {{"operator": {{"filter": {{"predicate": {{"binary": {{"op": "gt", "left": {{"column": "ipTx"}}, "right": {{"literal": {{"float64": 0.0}}}}}}}}}}}}}},
                {{"operator": {{"sink": {{"spec": {{"kind": "discard"}}}}}}}}]}},
              "settings": {{"batch_interval_ms": 100}}}}"#
        )
    }

    #[test]
    fn a_schema_named_by_path_is_read_beside_the_job_file() {
        let dir = std::env::temp_dir().join(format!("sleet-job-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        std::fs::write(dir.join("gateway.avsc"), sleet_avro::GATEWAY_SCHEMA).expect("schema written");
        let job = read_job_file(&dir.join("job.json"), &job_text(r#""gateway.avsc""#)).expect("a valid job");
        let Operator::DecodeAvro { schema: AvroSchemaSource::Inline(json), max_record_bytes } =
            &job.plan.nodes[1].operator
        else {
            panic!("the schema is inlined: {:?}", job.plan.nodes[1])
        };
        assert_eq!(json["name"], "Reading");
        assert_eq!(*max_record_bytes, sleet_plan::node::default_max_record_bytes());

        let error = read_job_file(&dir.join("job.json"), &job_text(r#""missing.avsc""#)).expect_err("no such file");
        let chain = format!("{error:#}");
        assert!(chain.contains("node 1 (decode_avro): option `schema`: reading `missing.avsc`"), "{chain}");
        std::fs::remove_dir_all(&dir).expect("temp dir removed");
    }
}
