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

/// A CSV file of string columns: a header naming `columns` in order, then one row per line.
/// Fields may be double-quoted (a quote inside doubled); blank lines are skipped. Errors
/// name the file and line.
pub fn load_csv(path: &Path, columns: &[String]) -> Result<RecordBatch, ConnectorError> {
    let text = std::fs::read_to_string(path).map_err(ConnectorError::io("reading table file", path))?;
    let format = |line: usize, reason: String| ConnectorError::Format { path: path.to_path_buf(), line, reason };
    let mut lines = text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty());
    let Some((_, header)) = lines.next() else { return Err(format(1, "the file is empty: expected a header".into())) };
    let header = split_csv_line(header).map_err(|reason| format(1, reason))?;
    if header != columns {
        return Err(format(1, format!("header is `{}`, expected `{}`", header.join(","), columns.join(","))));
    }
    let mut values: Vec<Vec<String>> = vec![Vec::new(); columns.len()];
    for (index, line) in lines {
        let fields = split_csv_line(line).map_err(|reason| format(index + 1, reason))?;
        if fields.len() != columns.len() {
            return Err(format(index + 1, format!("{} fields, expected {}", fields.len(), columns.len())));
        }
        for (column, field) in values.iter_mut().zip(fields) {
            column.push(field);
        }
    }
    let schema = Arc::new(Schema::new(
        columns.iter().map(|column| Field::new(column.as_str(), DataType::Utf8, false)).collect::<Vec<_>>(),
    ));
    let arrays: Vec<ArrayRef> =
        values.into_iter().map(|column| Arc::new(StringArray::from(column)) as ArrayRef).collect();
    RecordBatch::try_new(schema, arrays).map_err(|error| format(0, error.to_string()))
}

fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.trim_end_matches('\r').chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("a quoted field is not closed".into()),
                }
            }
            match chars.next() {
                Some(',') => fields.push(field),
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(c) => return Err(format!("`{c}` after a closing quote")),
            }
        } else {
            loop {
                match chars.next() {
                    Some(',') => break,
                    Some(c) => field.push(c),
                    None => {
                        fields.push(field.trim().to_string());
                        return Ok(fields);
                    }
                }
            }
            fields.push(field.trim().to_string());
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
    fn a_bad_csv_table_is_refused_naming_the_line() {
        let path = std::env::temp_dir().join(format!("sleet-table-bad-{}.csv", std::process::id()));
        for (text, expected) in [
            ("ad,campaign_id\na,b\n", ":1: header is `ad,campaign_id`"),
            ("ad_id,campaign_id\na,b\na\n", ":3: 1 fields, expected 2"),
            ("ad_id,campaign_id\n\"a,b\n", ":2: a quoted field is not closed"),
            ("", ":1: the file is empty"),
        ] {
            std::fs::write(&path, text).expect("write");
            let error = load_csv(&path, &columns()).expect_err(text).to_string();
            assert!(error.contains(expected), "{text:?}: {error}");
        }
        let missing = load_csv(Path::new("/nonexistent/campaigns.csv"), &columns()).expect_err("missing");
        assert!(missing.to_string().contains("/nonexistent/campaigns.csv"), "{missing}");
        let _ = std::fs::remove_file(&path);
    }
}
