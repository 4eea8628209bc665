//! Reading ysb results back from a JSON-lines sink directory, for the benchmark's check and
//! the tests.

use std::collections::BTreeMap;
use std::path::Path;

use crate::error::ConnectorError;

/// One line of ysb output: a (campaign, window)'s count as of `batch`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SinkRow {
    pub window_start: i64,
    pub campaign_id: String,
    pub count: i64,
    pub batch: u64,
}

/// Every row of every `part-*.jsonl` under `dir`, in file order (files sorted by name). A
/// line that is not a ysb row is an error naming its file and line.
pub fn read_ysb_sink(dir: &Path) -> Result<Vec<SinkRow>, ConnectorError> {
    let lines = sleet_durable::committed::read_json_lines(dir, "part-", "reading sink files")?;
    lines
        .into_iter()
        .map(|sleet_durable::committed::JsonLine { path, line, value }| {
            let format = |reason: String| ConnectorError::format(path.clone(), line, reason);
            let int = |name: &str| value[name].as_i64().ok_or_else(|| format(format!("`{name}` is not an integer")));
            Ok(SinkRow {
                window_start: int("window_start")?,
                campaign_id: value["campaign_id"]
                    .as_str()
                    .ok_or_else(|| format("`campaign_id` is not a string".into()))?
                    .to_string(),
                count: int("count")?,
                batch: value["batch"].as_u64().ok_or_else(|| format("`batch` is not a batch id".into()))?,
            })
        })
        .collect()
}

/// The final value per (campaign, window): its row of the highest batch, with that batch.
pub fn final_counts(rows: &[SinkRow]) -> BTreeMap<(String, i64), (i64, u64)> {
    let mut last: BTreeMap<(String, i64), (i64, u64)> = BTreeMap::new();
    for row in rows {
        let entry = last.entry((row.campaign_id.clone(), row.window_start)).or_insert((row.count, row.batch));
        if row.batch >= entry.1 {
            *entry = (row.count, row.batch);
        }
    }
    last
}

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::sink::{sink_file_path, JsonLinesSink, Sink};

    #[test]
    fn sink_files_read_back_in_order_and_a_bad_line_names_its_place() {
        let dir = std::env::temp_dir().join(format!("sleet-ysb-rows-test-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let batch = crate::sink::sample_ysb_rows();
        let sink = JsonLinesSink::open(&dir, 1, 0).expect("open");
        let mut bytes = Vec::new();
        sink.encode(123, &batch, &mut bytes);
        sink.write(123, &bytes).expect("write");
        crate::commit_first_attempt(&dir);
        let rows = read_ysb_sink(&dir).expect("read");
        assert_eq!(rows[1], SinkRow { window_start: 10_000, campaign_id: "c2".into(), count: 4, batch: 123 });
        fs::write(sink_file_path(&dir, 2, 0), "{\"window_start\": \"x\"}\n").expect("write bad");
        let error = read_ysb_sink(&dir).expect_err("a bad line is an error").to_string();
        assert!(error.contains("part-2.jsonl:1"), "{error}");
        let _ = fs::remove_dir_all(&dir);
    }
}
