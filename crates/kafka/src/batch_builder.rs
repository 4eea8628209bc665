//! Writing record batches (format v2) for a produce request, straight from borrowed keys
//! and values into one buffer; lz4-compressed as Kafka frames it.

use std::io::Write;

/// Who wrote a batch, for the broker's idempotence and transaction checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProducerStamp {
    pub producer_id: i64,
    pub producer_epoch: i16,
    pub base_sequence: i32,
    pub transactional: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Lz4,
}

/// Builds one batch: `push` records, then `finish` appends the batch to an output buffer.
pub struct BatchBuilder {
    codec: Codec,
    records: Vec<u8>,
    count: i32,
    base_timestamp: i64,
    max_timestamp: i64,
    compressed: Vec<u8>,
}

impl BatchBuilder {
    pub fn new(codec: Codec) -> Self {
        BatchBuilder {
            codec,
            records: Vec::new(),
            count: 0,
            base_timestamp: 0,
            max_timestamp: 0,
            compressed: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.count as usize
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes of records so far, before compression.
    pub fn bytes(&self) -> usize {
        self.records.len()
    }

    pub fn push(&mut self, timestamp: i64, key: Option<&[u8]>, value: &[u8]) {
        if self.count == 0 {
            self.base_timestamp = timestamp;
            self.max_timestamp = timestamp;
        }
        self.max_timestamp = self.max_timestamp.max(timestamp);
        let mut body = [0u8; 30];
        let mut at = 1; // attributes: 0
        at += put_varlong(&mut body[at..], timestamp - self.base_timestamp);
        at += put_varlong(&mut body[at..], i64::from(self.count));
        let key_length = key.map_or(-1, |key| key.len() as i64);
        at += put_varlong(&mut body[at..], key_length);
        let value_length_bytes = varlong_bytes(value.len() as i64);
        let length = at + key.map_or(0, <[u8]>::len) + value_length_bytes + value.len() + 1;
        let mut prefix = [0u8; 10];
        let prefix_length = put_varlong(&mut prefix, length as i64);
        self.records.extend_from_slice(&prefix[..prefix_length]);
        self.records.extend_from_slice(&body[..at]);
        if let Some(key) = key {
            self.records.extend_from_slice(key);
        }
        let mut value_length = [0u8; 10];
        put_varlong(&mut value_length, value.len() as i64);
        self.records.extend_from_slice(&value_length[..value_length_bytes]);
        self.records.extend_from_slice(value);
        self.records.push(0); // no headers
        self.count += 1;
    }

    /// Appends the batch to `out` and empties the builder.
    pub fn finish(&mut self, stamp: ProducerStamp, out: &mut Vec<u8>) {
        let body: &[u8] = match self.codec {
            Codec::None => &self.records,
            Codec::Lz4 => {
                self.compressed.clear();
                let mut encoder = lz4::EncoderBuilder::new()
                    .level(1)
                    .block_size(lz4::BlockSize::Max64KB)
                    // Kafka reads only frames of independent blocks.
                    .block_mode(lz4::BlockMode::Independent)
                    .build(std::mem::take(&mut self.compressed))
                    .expect("an lz4 encoder over a Vec");
                encoder.write_all(&self.records).expect("writing to a Vec");
                let (compressed, result) = encoder.finish();
                result.expect("finishing an lz4 frame in a Vec");
                self.compressed = compressed;
                &self.compressed
            }
        };
        let start = out.len();
        out.extend_from_slice(&0i64.to_be_bytes()); // base offset: the broker assigns it
        out.extend_from_slice(&0i32.to_be_bytes()); // length, below
        out.extend_from_slice(&(-1i32).to_be_bytes()); // partition leader epoch
        out.push(2); // magic
        out.extend_from_slice(&0u32.to_be_bytes()); // crc, below
        let crc_start = out.len();
        let mut attributes: i16 = match self.codec {
            Codec::None => 0,
            Codec::Lz4 => 3,
        };
        if stamp.transactional {
            attributes |= 1 << 4;
        }
        out.extend_from_slice(&attributes.to_be_bytes());
        out.extend_from_slice(&(self.count - 1).to_be_bytes());
        out.extend_from_slice(&self.base_timestamp.to_be_bytes());
        out.extend_from_slice(&self.max_timestamp.to_be_bytes());
        out.extend_from_slice(&stamp.producer_id.to_be_bytes());
        out.extend_from_slice(&stamp.producer_epoch.to_be_bytes());
        out.extend_from_slice(&stamp.base_sequence.to_be_bytes());
        out.extend_from_slice(&self.count.to_be_bytes());
        out.extend_from_slice(body);
        let length = (out.len() - start - 12) as i32;
        out[start + 8..start + 12].copy_from_slice(&length.to_be_bytes());
        let crc = crc32c::crc32c(&out[crc_start..]);
        out[crc_start - 4..crc_start].copy_from_slice(&crc.to_be_bytes());
        self.records.clear();
        self.count = 0;
    }
}

fn varlong_bytes(value: i64) -> usize {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let mut bytes = 1;
    while zigzag >= 0x80 {
        zigzag >>= 7;
        bytes += 1;
    }
    bytes
}

fn put_varlong(out: &mut [u8], value: i64) -> usize {
    let mut zigzag = ((value << 1) ^ (value >> 63)) as u64;
    let mut at = 0;
    while zigzag >= 0x80 {
        out[at] = (zigzag as u8) | 0x80;
        zigzag >>= 7;
        at += 1;
    }
    out[at] = zigzag as u8;
    at + 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::{parse_batches, AbortedTransactions};

    fn build(codec: Codec, count: usize) -> Vec<u8> {
        let mut builder = BatchBuilder::new(codec);
        for index in 0..count {
            let key = (index % 3 != 0).then(|| format!("key-{index}"));
            builder.push(
                5_000 + index as i64 * 3,
                key.as_deref().map(str::as_bytes),
                format!("value {index}").repeat(index % 50).as_bytes(),
            );
        }
        let mut out = Vec::new();
        builder.finish(
            ProducerStamp { producer_id: 9, producer_epoch: 1, base_sequence: 40, transactional: false },
            &mut out,
        );
        out
    }

    #[test]
    fn batches_read_back_with_this_crate_and_with_the_protocol_library() {
        for codec in [Codec::None, Codec::Lz4] {
            let data = build(codec, 300);
            let mut seen = Vec::new();
            let mut scratch = Vec::new();
            parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut scratch, &mut |record| {
                seen.push((
                    record.offset,
                    record.timestamp,
                    record.key.map(<[u8]>::to_vec),
                    record.value.map(<[u8]>::to_vec),
                ))
            })
            .expect("parse");
            assert_eq!(seen.len(), 300);
            assert_eq!(seen[4], (4, 5_012, Some(b"key-4".to_vec()), Some("value 4".repeat(4).into_bytes())));
            assert_eq!(seen[3].2, None);

            let mut buf = bytes::Bytes::from(data);
            let set = kafka_protocol::records::RecordBatchDecoder::decode(&mut buf).expect("library decode");
            assert_eq!(set.records.len(), 300);
            assert_eq!(set.records[299].value.as_deref(), Some("value 299".repeat(299 % 50).as_bytes()));
            assert_eq!((set.records[0].producer_id, set.records[0].sequence), (9, 40));
        }
    }
}
