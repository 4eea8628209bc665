//! Every Kafka response this client reads, through `connection::decode_response` (the path
//! each response body takes) at the version the client speaks; a fetch response's records then
//! go through `parse_batches`, as `fetch.rs` hands them on.
//!
//! Input: a byte choosing the API, then the response body as it follows the length prefix
//! (response header first). The correlation id expected is the one the body carries, so the
//! decoding gets past the header; a mismatch is covered by the byte choosing the API's top bit.
//! Checked: no panic, no allocation the input does not pay for.

#![no_main]

use bytes::Bytes;
use kafka_protocol::messages::{
    AddPartitionsToTxnRequest, ApiVersionsRequest, CreateTopicsRequest, DeleteTopicsRequest, EndTxnRequest,
    FetchRequest, FindCoordinatorRequest, InitProducerIdRequest, ListOffsetsRequest, MetadataRequest, ProduceRequest,
};
use kafka_protocol::protocol::Request;
use libfuzzer_sys::fuzz_target;
// Links the allocation cap (see src/lib.rs).
use sleet_fuzz as _;
use sleet_kafka::connection::decode_response;
use sleet_kafka::fetch::aborted_in;
use sleet_kafka::records::parse_batches;

/// The version `Connection::open` asks ApiVersions at.
const API_VERSIONS_VERSION: i16 = 3;

fn decode<R: Request>(body: &[u8], correlation_id: i32) -> Option<R::Response> {
    let version = sleet_kafka::version_of(R::KEY).map_or(API_VERSIONS_VERSION, |(_, version)| version);
    decode_response::<R>(Bytes::copy_from_slice(body), version, correlation_id).ok()
}

fuzz_target!(|data: &[u8]| {
    let [choice, body @ ..] = data else { return };
    let carried = body.get(..4).map_or(0, |id| i32::from_be_bytes(id.try_into().expect("4 bytes")));
    let correlation_id = if choice & 0x80 == 0 { carried } else { carried.wrapping_add(1) };
    match choice % 11 {
        0 => drop(decode::<ApiVersionsRequest>(body, correlation_id)),
        1 => drop(decode::<ProduceRequest>(body, correlation_id)),
        2 => {
            let Some(response) = decode::<FetchRequest>(body, correlation_id) else { return };
            for data in response.responses.iter().flat_map(|topic| topic.partitions.iter()) {
                let records = data.records.as_deref().unwrap_or(&[]);
                let _ = parse_batches(records, 0, i64::MAX, &mut aborted_in(data), &mut Vec::new(), &mut |_| {});
            }
        }
        3 => drop(decode::<ListOffsetsRequest>(body, correlation_id)),
        4 => drop(decode::<MetadataRequest>(body, correlation_id)),
        5 => drop(decode::<InitProducerIdRequest>(body, correlation_id)),
        6 => drop(decode::<CreateTopicsRequest>(body, correlation_id)),
        7 => drop(decode::<FindCoordinatorRequest>(body, correlation_id)),
        8 => drop(decode::<AddPartitionsToTxnRequest>(body, correlation_id)),
        9 => drop(decode::<EndTxnRequest>(body, correlation_id)),
        _ => drop(decode::<DeleteTopicsRequest>(body, correlation_id)),
    }
});
