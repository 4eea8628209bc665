//! Static tables that lookups join against, loaded once per job on each worker.

use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use sleet_plan::TableSpec;

use crate::error::ConnectorError;
use crate::ysb::Campaigns;

pub fn load_table(spec: &TableSpec) -> Result<RecordBatch, ConnectorError> {
    match spec {
        TableSpec::YsbCampaigns { seed } => Ok(Campaigns::new(*seed).to_record_batch()),
        TableSpec::Csv { path, columns } => load_csv(Path::new(path), columns),
    }
}

/// A CSV file of string columns: a header naming `columns` in order, then one row per record.
/// Fields may be double-quoted, and a quoted field may hold commas, doubled quotes and line
/// breaks; whitespace around a field is not part of it; blank lines are skipped. Errors name
/// the file and the line a record starts on, and the field where one is at fault.
pub fn load_csv(path: &Path, columns: &[String]) -> Result<RecordBatch, ConnectorError> {
    let mut text = std::fs::read(path).map_err(ConnectorError::io("reading table file", path))?;
    // The csv crate takes a quoted field that is never closed to run to the end of the file,
    // silently swallowing every later row. A record of our own after the file's tells the two
    // apart: it ends up inside a field exactly when the file ended inside quotes.
    text.push(b'\n');
    text.extend_from_slice(END_MARK.as_bytes());
    text.push(b'\n');
    let mut records = Records::new(&text, columns);
    let format = |(line, reason): (u64, String)| ConnectorError::format(path.to_path_buf(), line as usize, reason);
    let Some((line, header)) = records.next().map_err(format)? else {
        return Err(format((1, "the file is empty: expected a header".into())));
    };
    if header.iter().ne(columns.iter().map(String::as_str)) {
        let header: Vec<&str> = header.iter().collect();
        return Err(format((line, format!("header is `{}`, expected `{}`", header.join(","), columns.join(",")))));
    }
    let mut values: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
    while let Some((line, record)) = records.next().map_err(format)? {
        if record.len() != columns.len() {
            return Err(format((line, format!("{} fields, expected {}", record.len(), columns.len()))));
        }
        for (column, field) in values.iter_mut().zip(record.iter()) {
            column.push(field.to_string());
        }
    }
    let schema = Arc::new(Schema::new(
        columns.iter().map(|column| Field::new(column.as_str(), DataType::Utf8, false)).collect::<Vec<_>>(),
    ));
    let arrays: Vec<ArrayRef> =
        values.into_iter().map(|column| Arc::new(StringArray::from(column)) as ArrayRef).collect();
    RecordBatch::try_new(schema, arrays).map_err(|error| format((0, error.to_string())))
}

/// A record no table holds (NUL is not text a table carries), read after the file's last.
const END_MARK: &str = "\0sleet-end-of-table\0";

/// The records of a table's text, each with the line it starts on.
struct Records<'a> {
    text: &'a [u8],
    columns: &'a [String],
    reader: csv::Reader<&'a [u8]>,
}

impl<'a> Records<'a> {
    fn new(text: &'a [u8], columns: &'a [String]) -> Self {
        let reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).trim(csv::Trim::All).from_reader(text);
        Records { text, columns, reader }
    }

    /// The next record that is not blank; `None` after the file's last. An error is a line and
    /// a reason.
    fn next(&mut self) -> Result<Option<(u64, csv::StringRecord)>, (u64, String)> {
        loop {
            let mut record = csv::StringRecord::new();
            let more = self.reader.read_record(&mut record).map_err(|error| self.reason(error))?;
            let line = record.position().map_or(0, |position| self.start_line(position));
            if record.len() == 1 && &record[0] == END_MARK {
                return Ok(None);
            }
            if !more || record.iter().any(|field| field.contains(END_MARK)) {
                return Err((line, "a quoted field is not closed".into()));
            }
            if !(record.len() == 1 && record[0].is_empty()) {
                return Ok(Some((line, record)));
            }
        }
    }

    /// The line a record starts on. The reader gives where it began to look, which is before
    /// the blank lines it skipped.
    fn start_line(&self, position: &csv::Position) -> u64 {
        let skipped = self.text[position.byte() as usize..]
            .iter()
            .take_while(|&&byte| byte == b'\n' || byte == b'\r')
            .filter(|&&byte| byte == b'\n')
            .count();
        position.line() + skipped as u64
    }

    fn reason(&self, error: csv::Error) -> (u64, String) {
        let line = error.position().map_or(0, |position| self.start_line(position));
        match error.kind() {
            csv::ErrorKind::Utf8 { err, .. } => {
                let name = self.columns.get(err.field()).map_or(String::new(), |name| format!(" (`{name}`)"));
                (line, format!("field {}{name} is not UTF-8", err.field() + 1))
            }
            _ => (line, error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;

    fn columns() -> Vec<String> {
        vec!["ad_id".into(), "campaign_id".into()]
    }

    #[test]
    fn a_csv_table_loads_with_quotes_and_blank_lines() {
        let path = std::env::temp_dir().join(format!("sleet-table-{}.csv", std::process::id()));
        std::fs::write(&path, "ad_id,campaign_id\r\na1,c1\n\n\"a,2\",\"c\"\"2\"\n").expect("write");
        let table = load_csv(&path, &columns()).expect("load");
        assert_eq!(table.num_rows(), 2);
        assert_eq!(table.column(0).as_string::<i32>().value(1), "a,2");
        assert_eq!(table.column(1).as_string::<i32>().value(1), "c\"2");
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn quoted_fields_keep_commas_doubled_quotes_and_line_breaks() {
        let path = std::env::temp_dir().join(format!("sleet-table-quoted-{}.csv", std::process::id()));
        let text = concat!(
            "ad_id,campaign_id\n",
            "\"ad, one\",\"camp \"\"A\"\"\"\n",
            "\"ad\ntwo\",c2\r\n",
            "\n",
            "\"multi\nline\nad\",\"x,\"\"y\"\",\nz\"\n",
            "last,row",
        );
        std::fs::write(&path, text).expect("write");
        let table = load_csv(&path, &columns()).expect("load");
        let column = |index: usize| -> Vec<String> {
            table.column(index).as_string::<i32>().iter().map(|value| value.expect("not null").to_string()).collect()
        };
        assert_eq!(column(0), ["ad, one", "ad\ntwo", "multi\nline\nad", "last"]);
        assert_eq!(column(1), ["camp \"A\"", "c2", "x,\"y\",\nz", "row"]);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn a_bad_csv_table_is_refused_naming_the_line() {
        let path = std::env::temp_dir().join(format!("sleet-table-bad-{}.csv", std::process::id()));
        for (text, expected) in [
            ("ad,campaign_id\na,b\n", ":1: header is `ad,campaign_id`"),
            ("ad_id,campaign_id\na,b\na\n", ":3: 1 fields, expected 2"),
            ("ad_id,campaign_id\n\"a\nb\",c\n\nx,y,z\n", ":5: 3 fields, expected 2"),
            ("ad_id,campaign_id\n\"a,b\n", ":2: a quoted field is not closed"),
            ("ad_id,campaign_id\na,b\nc,\"d\ne,f\n", ":3: a quoted field is not closed"),
            ("", ":1: the file is empty"),
        ] {
            std::fs::write(&path, text).expect("write");
            let error = load_csv(&path, &columns()).expect_err(text).to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        std::fs::write(&path, b"ad_id,campaign_id\na,b\nc,\xffd\n").expect("write");
        let error = load_csv(&path, &columns()).expect_err("not UTF-8").to_string();
        assert!(error.contains(":3: field 2 (`campaign_id`) is not UTF-8"), "{error}");
        let missing = load_csv(Path::new("/nonexistent/campaigns.csv"), &columns()).expect_err("missing");
        assert!(missing.to_string().contains("/nonexistent/campaigns.csv"), "{missing}");
        let _ = std::fs::remove_file(&path);
    }
}
