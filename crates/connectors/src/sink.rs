//! Sink output as JSON lines: formatting rows, the per-partition file sink, and a reader for
//! ysb results that the bench and the tests use.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use crate::error::ConnectorError;

/// Appends one JSON object per row, every column by name plus `update_time`, then a newline.
pub fn format_json_lines(batch: &RecordBatch, update_time_ms: i64, out: &mut Vec<u8>) {
    let schema = batch.schema();
    let names: Vec<Vec<u8>> = schema
        .fields()
        .iter()
        .map(|field| serde_json::to_vec(field.name()).expect("a string always serializes"))
        .collect();
    for row in 0..batch.num_rows() {
        out.push(b'{');
        for (index, column) in batch.columns().iter().enumerate() {
            out.extend_from_slice(&names[index]);
            out.push(b':');
            write_value(column.as_ref(), row, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"update_time\":");
        out.extend_from_slice(update_time_ms.to_string().as_bytes());
        out.extend_from_slice(b"}\n");
    }
}

fn write_value(column: &dyn Array, row: usize, out: &mut Vec<u8>) {
    if column.is_null(row) {
        out.extend_from_slice(b"null");
        return;
    }
    match column.data_type() {
        DataType::Utf8 => {
            serde_json::to_writer(&mut *out, column.as_string::<i32>().value(row)).expect("writing to a Vec")
        }
        DataType::Int64 => out.extend_from_slice(column.as_primitive::<Int64Type>().value(row).to_string().as_bytes()),
        DataType::Float64 => {
            let value = column.as_primitive::<Float64Type>().value(row);
            // JSON has no NaN or infinity; such a value is written as null rather than break the line.
            match serde_json::Number::from_f64(value) {
                Some(number) => out.extend_from_slice(number.to_string().as_bytes()),
                None => out.extend_from_slice(b"null"),
            }
        }
        DataType::Boolean => out.extend_from_slice(if column.as_boolean().value(row) { b"true" } else { b"false" }),
        DataType::Binary => {
            serde_json::to_writer(&mut *out, &String::from_utf8_lossy(column.as_binary::<i32>().value(row)))
                .expect("writing to a Vec")
        }
        other => out.extend_from_slice(format!("\"<{other} not supported in JSON output>\"").as_bytes()),
    }
}

pub fn sink_file_path(dir: &Path, partition: u32) -> PathBuf {
    dir.join(format!("part-{partition}.jsonl"))
}

/// One file per reduce partition; a partition has one writer, so no locking across workers.
pub struct JsonLinesSink {
    path: PathBuf,
    writer: BufWriter<File>,
}

impl JsonLinesSink {
    pub fn create(dir: &Path, partition: u32) -> Result<Self, ConnectorError> {
        fs::create_dir_all(dir).map_err(ConnectorError::io("creating sink directory", dir))?;
        let path = sink_file_path(dir, partition);
        let file = File::create(&path).map_err(ConnectorError::io("creating sink file", &path))?;
        Ok(JsonLinesSink { path, writer: BufWriter::with_capacity(256 * 1024, file) })
    }

    pub fn write(&mut self, bytes: &[u8]) -> Result<(), ConnectorError> {
        self.writer.write_all(bytes).map_err(ConnectorError::io("writing sink file", &self.path))
    }

    pub fn flush(&mut self) -> Result<(), ConnectorError> {
        self.writer.flush().map_err(ConnectorError::io("flushing sink file", &self.path))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkRow {
    pub window_start: i64,
    pub campaign_id: String,
    pub count: i64,
    pub update_time_ms: i64,
}

/// Every row of every `part-*.jsonl` under `dir`, in file order (files sorted by name).
pub fn read_ysb_sink(dir: &Path) -> Result<Vec<SinkRow>, ConnectorError> {
    let lines = crate::files::read_json_lines(dir, "part-", "reading sink files")?;
    lines
        .into_iter()
        .map(|crate::files::JsonLine { path, line, value }| {
            let format = |reason: String| ConnectorError::Format { path: path.clone(), line, reason };
            let int = |name: &str| value[name].as_i64().ok_or_else(|| format(format!("`{name}` is not an integer")));
            Ok(SinkRow {
                window_start: int("window_start")?,
                campaign_id: value["campaign_id"]
                    .as_str()
                    .ok_or_else(|| format("`campaign_id` is not a string".into()))?
                    .to_string(),
                count: int("count")?,
                update_time_ms: int("update_time")?,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, BooleanArray, Float64Array, Int64Array, StringArray};

    use super::*;

    fn scratch_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("sleet-sink-test-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn rows_format_as_json_objects_with_the_update_time() {
        let batch = RecordBatch::try_from_iter([
            ("window_start", Arc::new(Int64Array::from(vec![Some(10_000), None])) as ArrayRef),
            ("campaign_id", Arc::new(StringArray::from(vec!["a\"b", "ü"])) as ArrayRef),
            ("score", Arc::new(Float64Array::from(vec![1.5, f64::NAN])) as ArrayRef),
            ("ok", Arc::new(BooleanArray::from(vec![true, false])) as ArrayRef),
        ])
        .expect("batch");
        let mut out = Vec::new();
        format_json_lines(&batch, 77, &mut out);
        let lines: Vec<serde_json::Value> = String::from_utf8(out)
            .expect("utf8")
            .lines()
            .map(|line| serde_json::from_str(line).expect("json"))
            .collect();
        assert_eq!(
            lines[0],
            serde_json::json!({"window_start": 10000, "campaign_id": "a\"b", "score": 1.5, "ok": true, "update_time": 77})
        );
        assert_eq!(lines[1]["window_start"], serde_json::Value::Null);
        assert_eq!(lines[1]["score"], serde_json::Value::Null);
    }

    #[test]
    fn sink_files_read_back_in_order() {
        let dir = scratch_dir("roundtrip");
        let batch = RecordBatch::try_from_iter([
            ("window_start", Arc::new(Int64Array::from(vec![0, 10_000])) as ArrayRef),
            ("campaign_id", Arc::new(StringArray::from(vec!["c1", "c2"])) as ArrayRef),
            ("count", Arc::new(Int64Array::from(vec![3, 4])) as ArrayRef),
        ])
        .expect("batch");
        let mut sink = JsonLinesSink::create(&dir, 1).expect("create");
        let mut bytes = Vec::new();
        format_json_lines(&batch, 123, &mut bytes);
        sink.write(&bytes).expect("write");
        sink.flush().expect("flush");
        let rows = read_ysb_sink(&dir).expect("read");
        assert_eq!(rows[1], SinkRow { window_start: 10_000, campaign_id: "c2".into(), count: 4, update_time_ms: 123 });
        fs::write(sink_file_path(&dir, 2), "{\"window_start\": \"x\"}\n").expect("write bad");
        let error = read_ysb_sink(&dir).expect_err("a bad line is an error").to_string();
        assert!(error.contains("part-2.jsonl:1"), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }
}
