//! Sink output as JSON lines: formatting rows, the per-partition file sink, and a reader for
//! ysb results that the bench and the tests use.

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, RecordBatch};
use arrow_cast::display::{ArrayFormatter, FormatOptions};
use arrow_schema::DataType;

use crate::error::ConnectorError;

/// Appends one JSON object per row, then a newline: every column by name (strings escaped,
/// integers and floats as numbers, booleans, nulls as `null`) plus `"update_time"`.
///
/// Rows are written by hand rather than through `serde_json::Value`, which would allocate a
/// map per row. A float that JSON cannot hold (NaN, ±∞) is written as `null`; a column type
/// without a JSON counterpart (dates, decimals, lists, …) is written as arrow's display string.
pub fn format_json_lines(batch: &RecordBatch, update_time_ms: i64, out: &mut Vec<u8>) {
    let schema = batch.schema();
    let names: Vec<Vec<u8>> = schema
        .fields()
        .iter()
        .map(|field| {
            let mut name = serde_json::to_vec(field.name()).expect("a string always serializes");
            name.push(b':');
            name
        })
        .collect();
    let options = FormatOptions::default();
    let formatters: Vec<Option<ArrayFormatter>> = batch
        .columns()
        .iter()
        .map(|column| match has_json_type(column.data_type()) {
            true => None,
            false => ArrayFormatter::try_new(column.as_ref(), &options).ok(),
        })
        .collect();
    for row in 0..batch.num_rows() {
        out.push(b'{');
        for ((name, column), formatter) in names.iter().zip(batch.columns()).zip(&formatters) {
            out.extend_from_slice(name);
            write_value(column.as_ref(), formatter.as_ref(), row, out);
            out.push(b',');
        }
        out.extend_from_slice(b"\"update_time\":");
        write_integer(update_time_ms, out);
        out.extend_from_slice(b"}\n");
    }
}

/// The types `write_value` writes natively; others go through arrow's display.
fn has_json_type(data_type: &DataType) -> bool {
    use DataType::*;
    matches!(
        data_type,
        Null | Boolean
            | Utf8
            | LargeUtf8
            | Binary
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float32
            | Float64
    )
}

fn write_value(column: &dyn Array, formatter: Option<&ArrayFormatter>, row: usize, out: &mut Vec<u8>) {
    if column.is_null(row) {
        return out.extend_from_slice(b"null");
    }
    match column.data_type() {
        DataType::Utf8 => write_string(column.as_string::<i32>().value(row), out),
        DataType::LargeUtf8 => write_string(column.as_string::<i64>().value(row), out),
        DataType::Binary => write_string(&String::from_utf8_lossy(column.as_binary::<i32>().value(row)), out),
        DataType::Boolean => out.extend_from_slice(if column.as_boolean().value(row) { b"true" } else { b"false" }),
        DataType::Int8 => write_integer(column.as_primitive::<Int8Type>().value(row), out),
        DataType::Int16 => write_integer(column.as_primitive::<Int16Type>().value(row), out),
        DataType::Int32 => write_integer(column.as_primitive::<Int32Type>().value(row), out),
        DataType::Int64 => write_integer(column.as_primitive::<Int64Type>().value(row), out),
        DataType::UInt8 => write_integer(column.as_primitive::<UInt8Type>().value(row), out),
        DataType::UInt16 => write_integer(column.as_primitive::<UInt16Type>().value(row), out),
        DataType::UInt32 => write_integer(column.as_primitive::<UInt32Type>().value(row), out),
        DataType::UInt64 => write_integer(column.as_primitive::<UInt64Type>().value(row), out),
        DataType::Float32 => write_float(f64::from(column.as_primitive::<Float32Type>().value(row)), out),
        DataType::Float64 => write_float(column.as_primitive::<Float64Type>().value(row), out),
        // A type arrow cannot display either is written as null rather than lose the row.
        _ => match formatter {
            Some(formatter) => write_string(&formatter.value(row).to_string(), out),
            None => out.extend_from_slice(b"null"),
        },
    }
}

fn write_string(value: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, value).expect("writing a string to a Vec cannot fail");
}

fn write_integer(value: impl Into<i128>, out: &mut Vec<u8>) {
    write!(out, "{}", value.into()).expect("writing to a Vec cannot fail");
}

/// JSON has no NaN or infinity; such a value is written as null rather than break the line.
fn write_float(value: f64, out: &mut Vec<u8>) {
    match serde_json::Number::from_f64(value) {
        Some(number) => write!(out, "{number}").expect("writing to a Vec cannot fail"),
        None => out.extend_from_slice(b"null"),
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
    let mut files: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| {
                path.file_name().and_then(|name| name.to_str()).is_some_and(|name| name.starts_with("part-"))
            })
            .collect(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(ConnectorError::io("listing sink directory", dir)(error)),
    };
    files.sort();
    let mut rows = Vec::new();
    for path in files {
        let file = File::open(&path).map_err(ConnectorError::io("opening sink file", &path))?;
        for (index, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(ConnectorError::io("reading sink file", &path))?;
            let format = |reason: String| ConnectorError::Format { path: path.clone(), line: index + 1, reason };
            let value: serde_json::Value = serde_json::from_str(&line).map_err(|error| format(error.to_string()))?;
            let int = |name: &str| value[name].as_i64().ok_or_else(|| format(format!("`{name}` is not an integer")));
            rows.push(SinkRow {
                window_start: int("window_start")?,
                campaign_id: value["campaign_id"]
                    .as_str()
                    .ok_or_else(|| format("`campaign_id` is not a string".into()))?
                    .to_string(),
                count: int("count")?,
                update_time_ms: int("update_time")?,
            });
        }
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{
        ArrayRef, BooleanArray, Date32Array, Float32Array, Float64Array, Int32Array, Int64Array, LargeStringArray,
        NullArray, StringArray, UInt64Array,
    };
    use serde_json::{json, Value};

    use super::*;

    /// A fresh directory under the system temp dir, removed when dropped.
    struct ScratchDir(PathBuf);

    impl ScratchDir {
        fn new(name: &str) -> Self {
            let dir = std::env::temp_dir().join(format!("sleet-sink-test-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            ScratchDir(dir)
        }
    }

    impl Drop for ScratchDir {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    /// Formats a one-column batch and checks the JSON each row reads back as.
    fn check(column: ArrayRef, expected: &[Value]) {
        let data_type = column.data_type().clone();
        let batch = RecordBatch::try_from_iter([("v", column)]).expect("batch");
        let mut out = Vec::new();
        format_json_lines(&batch, 77, &mut out);
        let text = String::from_utf8(out).expect("utf8");
        assert!(text.ends_with('\n'), "{data_type}: every line ends with a newline");
        let lines: Vec<Value> =
            text.lines().map(|line| serde_json::from_str(line).expect("each line is one JSON object")).collect();
        let expected: Vec<Value> = expected.iter().map(|value| json!({"v": value, "update_time": 77})).collect();
        assert_eq!(lines, expected, "{data_type}");
    }

    #[test]
    fn values_format_as_json() {
        check(
            Arc::new(StringArray::from(vec![Some("a\"b"), Some("ü\n\t\u{1}\\"), None, Some("")])),
            &[json!("a\"b"), json!("ü\n\t\u{1}\\"), Value::Null, json!("")],
        );
        check(Arc::new(LargeStringArray::from(vec!["x"])), &[json!("x")]);
        check(
            Arc::new(Int64Array::from(vec![Some(i64::MIN), Some(0), None, Some(i64::MAX)])),
            &[json!(i64::MIN), json!(0), Value::Null, json!(i64::MAX)],
        );
        check(Arc::new(Int32Array::from(vec![-7])), &[json!(-7)]);
        check(Arc::new(UInt64Array::from(vec![u64::MAX])), &[json!(u64::MAX)]);
        check(
            Arc::new(Float64Array::from(vec![Some(1.5), Some(f64::NAN), Some(f64::INFINITY), None, Some(-0.25)])),
            &[json!(1.5), Value::Null, Value::Null, Value::Null, json!(-0.25)],
        );
        check(Arc::new(Float32Array::from(vec![2.5f32])), &[json!(2.5)]);
        check(
            Arc::new(BooleanArray::from(vec![Some(true), Some(false), None])),
            &[json!(true), json!(false), Value::Null],
        );
        check(Arc::new(NullArray::new(1)), &[Value::Null]);
        check(Arc::new(Date32Array::from(vec![19_675])), &[json!("2023-11-14")]);
    }

    #[test]
    fn rows_keep_every_column_by_name() {
        let batch = RecordBatch::try_from_iter([
            ("window_start", Arc::new(Int64Array::from(vec![10_000, 20_000])) as ArrayRef),
            ("campaign \"id\"", Arc::new(StringArray::from(vec!["c1", "c2"])) as ArrayRef),
        ])
        .expect("batch");
        let mut out = b"kept\n".to_vec();
        format_json_lines(&batch, 5, &mut out);
        let text = String::from_utf8(out).expect("utf8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "kept", "appends, never clears");
        let row: Value = serde_json::from_str(lines[2]).expect("json");
        assert_eq!(row, json!({"window_start": 20000, "campaign \"id\"": "c2", "update_time": 5}));
    }

    fn ysb_rows(window_start: &[i64], campaign: &[&str], count: &[i64]) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("window_start", Arc::new(Int64Array::from(window_start.to_vec())) as ArrayRef),
            ("campaign_id", Arc::new(StringArray::from(campaign.to_vec())) as ArrayRef),
            ("count", Arc::new(Int64Array::from(count.to_vec())) as ArrayRef),
        ])
        .expect("batch")
    }

    fn write_sink(dir: &Path, partition: u32, updates: &[(RecordBatch, i64)]) {
        let mut sink = JsonLinesSink::create(dir, partition).expect("create");
        for (batch, update_time_ms) in updates {
            let mut bytes = Vec::new();
            format_json_lines(batch, *update_time_ms, &mut bytes);
            sink.write(&bytes).expect("write");
        }
        sink.flush().expect("flush");
    }

    #[test]
    fn sink_files_read_back_in_order() {
        let scratch = ScratchDir::new("roundtrip");
        let dir = scratch.0.join("nested");
        let row = |window_start: i64, campaign: &str, count: i64, update_time_ms: i64| SinkRow {
            window_start,
            campaign_id: campaign.into(),
            count,
            update_time_ms,
        };
        write_sink(
            &dir,
            1,
            &[(ysb_rows(&[0, 10_000], &["c1", "c2"], &[3, 4]), 100), (ysb_rows(&[0], &["c1"], &[5]), 200)],
        );
        write_sink(&dir, 0, &[(ysb_rows(&[0], &["c3"], &[1]), 150)]);
        // Recreating a partition's sink starts its file over.
        write_sink(&dir, 2, &[(ysb_rows(&[0], &["stale"], &[9]), 1)]);
        write_sink(&dir, 2, &[]);
        fs::write(dir.join("notes.txt"), "not a sink file").expect("write");
        assert_eq!(
            read_ysb_sink(&dir).expect("read"),
            [row(0, "c3", 1, 150), row(0, "c1", 3, 100), row(10_000, "c2", 4, 100), row(0, "c1", 5, 200)]
        );
        assert_eq!(read_ysb_sink(&scratch.0.join("missing")).expect("a missing dir has no rows"), []);
    }

    #[test]
    fn a_bad_sink_line_names_its_file_and_line() {
        let scratch = ScratchDir::new("bad-line");
        write_sink(&scratch.0, 0, &[(ysb_rows(&[0], &["c1"], &[3]), 100)]);
        let check = |line: &str, expected: &str| {
            fs::write(
                sink_file_path(&scratch.0, 1),
                format!("{{\"window_start\": 0, \"campaign_id\": \"c\", \"count\": 1, \"update_time\": 1}}\n{line}\n"),
            )
            .expect("write");
            let error = read_ysb_sink(&scratch.0).expect_err("a bad line is an error").to_string();
            assert!(error.contains("part-1.jsonl:2") && error.contains(expected), "{line}: {error}");
        };
        check("{\"window_start\": \"x\"}", "`window_start`");
        check("{\"window_start\": 0, \"campaign_id\": 7, \"count\": 1, \"update_time\": 1}", "`campaign_id`");
        check("{\"window_start\": 0, \"campaign_id\": \"c\", \"update_time\": 1}", "`count`");
        check("{\"window_start\": 0, \"campai", "EOF");
    }

    #[test]
    fn creating_a_sink_in_an_unusable_place_names_the_path() {
        let scratch = ScratchDir::new("unusable");
        fs::create_dir_all(&scratch.0).expect("mkdir");
        let file = scratch.0.join("a-file");
        fs::write(&file, "").expect("write");
        let error = JsonLinesSink::create(&file.join("sub"), 0).err().expect("a file is not a directory");
        assert!(error.to_string().contains("a-file"), "{error}");
    }
}
