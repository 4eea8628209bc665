//! `sleet_avro::framed::framed_records`, the splitting of the ingest server's Avro bodies and
//! binary WebSocket messages (length-prefixed single-object records), on arbitrary bytes;
//! then the job's `AvroDecoder` on what it yields, as the server checks a request.
//!
//! What is checked, beyond no panic and no allocation the input does not pay for: the records
//! yielded, framed again with `push_framed`, give back exactly the bytes they were split from;
//! a body split without error is consumed to its last byte, and one with an error stops at it
//! with fewer than its prefix's bytes left; every yielded record is one row or one dead letter.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sleet_avro::framed::{framed_records, push_framed, FramingError, LENGTH_BYTES};
use sleet_exec::avro::AvroDecoder;
use sleet_exec::RawRecords;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;

static DECODER: OnceLock<AvroDecoder> = OnceLock::new();

fuzz_target!(|body: &[u8]| {
    let mut records = RawRecords::new();
    let mut error = None;
    for record in framed_records(body) {
        match record {
            Ok(record) => records.push(record),
            Err(failure) => error = Some(failure),
        }
    }
    let mut framed = Vec::with_capacity(body.len());
    for record in records.iter() {
        push_framed(record, &mut framed);
    }
    assert_eq!(&body[..framed.len()], framed.as_slice(), "the records re-frame to the bytes they came from");
    match error {
        None => assert_eq!(framed.len(), body.len(), "a body split whole is consumed whole"),
        Some(FramingError::ShortLength { index, at, left }) => {
            assert_eq!((index, at, left), (records.len(), framed.len(), body.len() - framed.len()));
            assert!(left < LENGTH_BYTES);
        }
        Some(FramingError::Truncated { index, at, length, left }) => {
            assert_eq!((index, at), (records.len(), framed.len()));
            assert_eq!(left, body.len() - framed.len() - LENGTH_BYTES);
            assert!(length as usize > left);
        }
    }
    let decoder = DECODER.get_or_init(|| {
        let schema: serde_json::Value = serde_json::from_str(sleet_avro::GATEWAY_SCHEMA).expect("JSON");
        AvroDecoder::new(&schema, &["gateway_id".to_string()], 4096).expect("the gateway schema")
    });
    let output = decoder.decode(&records);
    assert_eq!(output.batch.num_rows() + output.dead_letters.len(), records.len(), "rows + dead letters = records");
});
