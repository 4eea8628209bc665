//! Result rows as JSON lines: one object per row, every column by name plus the batch that
//! produced it; one file per reduce partition, or standard output.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;
use sleet_monotask::Resource;

use super::Sink;
use crate::error::ConnectorError;

/// Appends one JSON object per row of `rows`, every column by name plus `"batch"`, then a
/// newline. Nothing in a line depends on when it was written, so a replayed batch formats the
/// same bytes; readers take, per key, the row of the highest batch.
pub fn format_json_lines(rows: &RecordBatch, batch: u64, out: &mut Vec<u8>) {
    let schema = rows.schema();
    let names: Vec<Vec<u8>> = schema
        .fields()
        .iter()
        .map(|field| serde_json::to_vec(field.name()).expect("a string always serializes"))
        .collect();
    let batch = batch.to_string();
    for row in 0..rows.num_rows() {
        out.push(b'{');
        for (index, column) in rows.columns().iter().enumerate() {
            out.extend_from_slice(&names[index]);
            out.push(b':');
            write_value(column.as_ref(), row, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"batch\":");
        out.extend_from_slice(batch.as_bytes());
        out.extend_from_slice(b"}\n");
    }
}

/// Row `row`'s values in `columns` as a JSON array (`["c1",10000]`): a record key that the
/// same row always gets, however often its batch is written.
pub fn format_json_key(rows: &RecordBatch, columns: &[usize], row: usize, out: &mut Vec<u8>) {
    out.push(b'[');
    for (position, &column) in columns.iter().enumerate() {
        if position > 0 {
            out.push(b',');
        }
        write_value(rows.column(column).as_ref(), row, out);
    }
    out.push(b']');
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

pub fn sink_file_path(dir: &Path, partition: u32, attempt: u32) -> PathBuf {
    dir.join(sleet_durable::manifest::attempt_file_name(&format!("part-{partition}"), attempt))
}

/// One file per reduce partition, appended to (a partition has one writer, so no locking
/// across workers, and opening it again — a new owner after a failure, a job resumed — never
/// loses what is there), or this process's standard output, for trying a job by hand.
pub struct JsonLinesSink {
    /// Where the rows go, for errors: the file, or `<stdout>`.
    path: PathBuf,
    destination: Mutex<Destination>,
}

enum Destination {
    File(BufWriter<File>),
    Stdout,
}

impl JsonLinesSink {
    pub fn open(dir: &Path, partition: u32, attempt: u32) -> Result<Self, ConnectorError> {
        fs::create_dir_all(dir).map_err(ConnectorError::io("creating sink directory", dir))?;
        let path = sink_file_path(dir, partition, attempt);
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(ConnectorError::io("opening sink file", &path))?;
        let destination = Destination::File(BufWriter::with_capacity(256 * 1024, file));
        Ok(JsonLinesSink { path, destination: Mutex::new(destination) })
    }

    pub fn stdout() -> Self {
        JsonLinesSink { path: PathBuf::from("<stdout>"), destination: Mutex::new(Destination::Stdout) }
    }
}

impl Sink for JsonLinesSink {
    fn resource(&self) -> Resource {
        Resource::Disk
    }

    fn encode(&self, batch: u64, rows: &RecordBatch, out: &mut Vec<u8>) {
        format_json_lines(rows, batch, out);
    }

    fn write(&self, _batch: u64, encoded: &[u8]) -> Result<(), ConnectorError> {
        // Handed to the OS at once: a finished batch's rows are visible to readers, not held
        // in a buffer.
        let written = match &mut *self.destination.lock().expect("sink lock") {
            Destination::File(file) => file.write_all(encoded).and_then(|()| file.flush()),
            Destination::Stdout => {
                let mut stdout = std::io::stdout().lock();
                stdout.write_all(encoded).and_then(|()| stdout.flush())
            }
        };
        written.map_err(ConnectorError::io("writing sink output", &self.path))
    }

    fn flush(&self) -> Result<(), ConnectorError> {
        let flushed = match &mut *self.destination.lock().expect("sink lock") {
            Destination::File(file) => file.flush().and_then(|()| file.get_ref().sync_data()),
            Destination::Stdout => std::io::stdout().flush(),
        };
        flushed.map_err(ConnectorError::io("flushing sink output", &self.path))
    }
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
    fn rows_format_as_json_objects_with_their_batch() {
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
            serde_json::json!({"window_start": 10000, "campaign_id": "a\"b", "score": 1.5, "ok": true, "batch": 77})
        );
        assert_eq!(lines[1]["window_start"], serde_json::Value::Null);
        assert_eq!(lines[1]["score"], serde_json::Value::Null);
    }

    #[test]
    fn a_batch_written_again_is_the_same_bytes_and_reopening_keeps_the_file() {
        let dir = scratch_dir("reopen");
        let batch = crate::sink::sample_ysb_rows();
        let sink = JsonLinesSink::open(&dir, 1, 0).expect("open");
        let (mut first, mut again) = (Vec::new(), Vec::new());
        sink.encode(5, &batch, &mut first);
        sink.encode(5, &batch, &mut again);
        assert_eq!(first, again, "encoding depends only on the rows and the batch");
        sink.write(5, &first).expect("write");
        let visible = fs::read(sink_file_path(&dir, 1, 0)).expect("read");
        assert_eq!(visible, first, "a write is visible to readers when it returns");
        drop(sink);
        let reopened = JsonLinesSink::open(&dir, 1, 0).expect("reopen");
        reopened.write(6, b"{\"count\":1,\"batch\":6}\n").expect("write");
        reopened.flush().expect("flush");
        let text = fs::read_to_string(sink_file_path(&dir, 1, 0)).expect("read");
        assert_eq!(text.lines().count(), 3, "reopening appends: {text}");
        let _ = fs::remove_dir_all(&dir);
    }
}
