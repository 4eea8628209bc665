//! JSON-lines files as a source: one partition per file, read front to back, each batch a
//! byte range of whole lines.
//!
//! For replaying captured data and for tests. A directory's `*.jsonl` and `*.json` files
//! are its partitions in name order (`partitions_of` is the one listing both the driver and
//! the workers use). Files are read as they are when the batch closes: a batch takes up to
//! `max_records_per_partition_per_batch` lines and reports their bytes, so a replay reads
//! the same lines. A line that does not end in a newline is taken once nothing follows it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use sleet_exec::RawRecords;
use sleet_monotask::Resource;
use sleet_plan::{FileSourceSpec, SourceRange};

use crate::error::ConnectorError;
use crate::source::Source;

/// A line longer than this is cut here (and becomes a dead letter as oversized): one
/// runaway line must not take the worker's memory.
const LINE_BYTES_MAX: u64 = 16 << 20;

/// The files a spec's path names, in partition order.
pub fn partitions_of(path: &str) -> Result<Vec<PathBuf>, ConnectorError> {
    let path = Path::new(path);
    let metadata = std::fs::metadata(path).map_err(ConnectorError::io("reading source path", path))?;
    if metadata.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(ConnectorError::io("listing source directory", path))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|file| file.is_file() && file.extension().is_some_and(|ext| ext == "jsonl" || ext == "json"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(ConnectorError::External {
            what: format!("file source {}", path.display()),
            reason: "holds no *.jsonl or *.json files".into(),
        });
    }
    Ok(files)
}

pub struct FileSource {
    spec: FileSourceSpec,
    partition: u32,
    state: Mutex<Option<Reader>>,
}

struct Reader {
    path: PathBuf,
    file: BufReader<File>,
    position: u64,
}

impl FileSource {
    pub fn new(spec: &FileSourceSpec, partition: u32) -> Self {
        FileSource { spec: spec.clone(), partition, state: Mutex::new(None) }
    }

    fn open(&self) -> Result<Reader, ConnectorError> {
        let files = partitions_of(&self.spec.path)?;
        let path = files.get(self.partition as usize).cloned().ok_or_else(|| ConnectorError::External {
            what: format!("file source {}", self.spec.path),
            reason: format!("has {} files now; partition {} has none", files.len(), self.partition),
        })?;
        let mut file = File::open(&path).map_err(ConnectorError::io("opening source file", &path))?;
        let position = self.spec.start_bytes.get(self.partition as usize).copied().unwrap_or(0);
        if position > 0 {
            use std::io::{Seek, SeekFrom};
            file.seek(SeekFrom::Start(position)).map_err(ConnectorError::io("seeking in source file", &path))?;
        }
        Ok(Reader { path, file: BufReader::with_capacity(1 << 20, file), position })
    }
}

impl Source for FileSource {
    fn resource(&self) -> Resource {
        Resource::Disk
    }

    fn read(&self, _start_ms: i64, _end_ms: i64, out: &mut RawRecords) -> Result<SourceRange, ConnectorError> {
        let mut state = self.state.lock().expect("file source lock");
        if state.is_none() {
            *state = Some(self.open()?);
        }
        let reader = state.as_mut().expect("opened above");
        let start = reader.position;
        let mut line = Vec::new();
        let mut records = 0;
        while records < self.spec.max_records_per_partition_per_batch {
            line.clear();
            let read = (&mut reader.file)
                .take(LINE_BYTES_MAX)
                .read_until(b'\n', &mut line)
                .map_err(ConnectorError::io("reading source file", &reader.path))?;
            if read == 0 {
                break;
            }
            let line_start = reader.position;
            reader.position += read as u64;
            if line.last() != Some(&b'\n') && read as u64 == LINE_BYTES_MAX {
                reader.position += skip_rest_of_line(&mut reader.file, &reader.path)?;
            }
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            if text.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            out.push(text);
            out.positions.push(line_start as i64);
            records += 1;
        }
        Ok(SourceRange::Bytes { start, end: reader.position })
    }

    fn locate(&self, position: i64) -> Option<serde_json::Value> {
        let state = self.state.lock().expect("file source lock");
        let path = state.as_ref().map(|reader| reader.path.display().to_string());
        Some(serde_json::json!({ "file": path, "byte": position }))
    }
}

fn skip_rest_of_line(file: &mut BufReader<File>, path: &Path) -> Result<u64, ConnectorError> {
    let mut skipped = 0;
    loop {
        let buffer = file.fill_buf().map_err(ConnectorError::io("reading source file", path))?;
        if buffer.is_empty() {
            return Ok(skipped);
        }
        match buffer.iter().position(|byte| *byte == b'\n') {
            Some(at) => {
                file.consume(at + 1);
                return Ok(skipped + at as u64 + 1);
            }
            None => {
                let length = buffer.len();
                file.consume(length);
                skipped += length as u64;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(path: &Path, max: u32) -> FileSourceSpec {
        FileSourceSpec {
            path: path.display().to_string(),
            max_records_per_partition_per_batch: max,
            partitions: 0,
            start_bytes: Vec::new(),
        }
    }

    #[test]
    fn batches_take_bounded_whole_lines_and_report_their_bytes() {
        let dir = std::env::temp_dir().join(format!("sleet-file-source-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("b.jsonl"), "{\"n\":1}\n\n{\"n\":2}\r\n{\"n\":3}").expect("write");
        std::fs::write(dir.join("a.jsonl"), "{\"a\":0}\n").expect("write");
        std::fs::write(dir.join("notes.txt"), "not a partition").expect("write");
        assert_eq!(partitions_of(&dir.display().to_string()).expect("list").len(), 2);

        let source = FileSource::new(&spec(&dir, 2), 1);
        let mut first = RawRecords::new();
        assert_eq!(source.read(0, 10, &mut first).expect("read"), SourceRange::Bytes { start: 0, end: 18 });
        assert_eq!(first.iter().collect::<Vec<_>>(), vec![&b"{\"n\":1}"[..], b"{\"n\":2}"]);
        assert_eq!(first.positions, vec![0, 9]);
        let mut second = RawRecords::new();
        assert_eq!(source.read(10, 20, &mut second).expect("read"), SourceRange::Bytes { start: 18, end: 25 });
        assert_eq!(second.get(0), b"{\"n\":3}");
        let mut third = RawRecords::new();
        assert_eq!(source.read(20, 30, &mut third).expect("read"), SourceRange::Bytes { start: 25, end: 25 });
        assert!(third.is_empty());
        assert_eq!(source.locate(9).expect("located")["byte"], 9);

        let missing = FileSource::new(&spec(&dir, 2), 5).read(0, 10, &mut RawRecords::new()).expect_err("no file 5");
        assert!(missing.to_string().contains("partition 5"), "{missing}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
