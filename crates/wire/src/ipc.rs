//! Data blocks on the wire: one Arrow IPC stream (schema + one record batch) per block.

use arrow_array::RecordBatch;
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::StreamWriter;

use crate::error::WireError;

pub fn encode_block(block: &RecordBatch) -> Result<Vec<u8>, WireError> {
    let mut out = Vec::with_capacity(block.get_array_memory_size() + 1024);
    let mut writer = StreamWriter::try_new(&mut out, &block.schema()).map_err(WireError::Ipc)?;
    writer.write(block).map_err(WireError::Ipc)?;
    writer.finish().map_err(WireError::Ipc)?;
    drop(writer);
    Ok(out)
}

/// Decodes a block; bytes that are not exactly one IPC stream with one batch are an error.
pub fn decode_block(bytes: &[u8]) -> Result<RecordBatch, WireError> {
    let mut reader = StreamReader::try_new(bytes, None).map_err(WireError::Ipc)?;
    let block = match reader.next() {
        Some(batch) => batch.map_err(WireError::Ipc)?,
        None => return Err(WireError::BadBlock("the stream holds no record batch".into())),
    };
    if reader.next().is_some() {
        return Err(WireError::BadBlock("the stream holds more than one record batch".into()));
    }
    Ok(block)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int64Array, StringArray};

    use super::*;

    fn sample() -> RecordBatch {
        RecordBatch::try_from_iter([
            ("campaign_id", Arc::new(StringArray::from(vec!["a", "b"])) as ArrayRef),
            ("count", Arc::new(Int64Array::from(vec![3, 4])) as ArrayRef),
        ])
        .expect("batch")
    }

    #[test]
    fn block_round_trips() {
        let block = sample();
        assert_eq!(decode_block(&encode_block(&block).expect("encode")).expect("decode"), block);
    }

    #[test]
    fn damaged_block_is_an_error_not_a_panic() {
        let bytes = encode_block(&sample()).expect("encode");
        for cut in [0, 3, bytes.len() / 2, bytes.len() - 9] {
            assert!(decode_block(&bytes[..cut]).is_err(), "cut at {cut} must fail");
        }
        assert!(decode_block(b"not arrow at all").is_err());
    }
}
