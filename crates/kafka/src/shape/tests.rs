use std::fmt::Debug;

use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use kafka_protocol::messages::api_versions_response::{ApiVersion, FinalizedFeatureKey, SupportedFeatureKey};
use kafka_protocol::messages::create_topics_response::{CreatableTopicConfigs, CreatableTopicResult};
use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::fetch_response::{
    AbortedTransaction, EpochEndOffset, FetchableTopicResponse, LeaderIdAndEpoch, PartitionData, SnapshotId,
};
use kafka_protocol::messages::find_coordinator_response::Coordinator;
use kafka_protocol::messages::list_offsets_response::{ListOffsetsPartitionResponse, ListOffsetsTopicResponse};
use kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use kafka_protocol::messages::produce_response::{
    BatchIndexAndErrorMessage, PartitionProduceResponse, TopicProduceResponse,
};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Encodable, HeaderVersion, Request, StrBytes};

use super::*;
use crate::connection::decode_response;
use crate::versions::version_of;

fn text(value: &'static str) -> StrBytes {
    StrBytes::from_static_str(value)
}

fn topic(value: &'static str) -> TopicName {
    TopicName(text(value))
}

/// Encodes `response` with kafka-protocol at the version this client reads it, and checks the
/// shape walks exactly its bytes and `decode_response` gives it back.
fn check<R: Request>(response: R::Response)
where
    R::Response: PartialEq + Debug,
{
    let version = version_of(R::KEY).map_or(3, |(_, version)| version);
    let mut body = BytesMut::new();
    response.encode(&mut body, version).expect("encodes");
    let shape = shape_of(R::KEY, version).expect("a shape for every response the client reads");
    assert_eq!(walk(shape, &body), Ok(body.len()), "{response:?}");

    let mut framed = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(5)
        .encode(&mut framed, R::Response::header_version(version))
        .expect("encodes");
    framed.extend_from_slice(&body);
    assert_eq!(decode_response::<R>(framed.freeze(), version, 5).expect("decodes"), response);
}

#[test]
fn every_response_the_client_reads_walks_exactly_its_bytes() {
    check::<ApiVersionsRequest>(
        ApiVersionsResponse::default()
            .with_api_keys(vec![ApiVersion::default().with_api_key(1).with_max_version(17)])
            .with_supported_features(vec![SupportedFeatureKey::default().with_name(text("kraft.version"))])
            .with_finalized_features_epoch(4)
            .with_finalized_features(vec![FinalizedFeatureKey::default().with_name(text("metadata.version"))])
            .with_zk_migration_ready(true),
    );
    check::<ProduceRequest>(ProduceResponse::default().with_responses(vec![
        TopicProduceResponse::default().with_name(topic("events")).with_partition_responses(
            vec![PartitionProduceResponse::default()
            .with_record_errors(vec![BatchIndexAndErrorMessage::default()
                .with_batch_index(2)
                .with_batch_index_error_message(Some(text("bad record")))])
            .with_error_message(Some(text("some failed")))],
        ),
    ]));
    check::<FetchRequest>(FetchResponse::default().with_responses(vec![
        FetchableTopicResponse::default().with_topic(topic("events")).with_partitions(vec![
            PartitionData::default()
                .with_aborted_transactions(Some(vec![AbortedTransaction::default().with_first_offset(9)]))
                .with_records(Some(Bytes::from_static(b"record batches")))
                .with_diverging_epoch(EpochEndOffset::default().with_epoch(3).with_end_offset(40))
                .with_current_leader(LeaderIdAndEpoch::default().with_leader_epoch(6))
                .with_snapshot_id(SnapshotId::default().with_end_offset(12))
                .with_unknown_tagged_field(40, Bytes::from_static(b"from a newer broker")),
            PartitionData::default().with_partition_index(1).with_aborted_transactions(None).with_records(None),
        ]),
    ]));
    check::<ListOffsetsRequest>(ListOffsetsResponse::default().with_topics(vec![ListOffsetsTopicResponse::default()
        .with_name(topic("events"))
        .with_partitions(vec![ListOffsetsPartitionResponse::default().with_offset(77)])]));
    check::<MetadataRequest>(
        MetadataResponse::default()
            .with_brokers(vec![MetadataResponseBroker::default().with_host(text("b1")).with_rack(Some(text("r")))])
            .with_cluster_id(Some(text("cluster")))
            .with_topics(vec![MetadataResponseTopic::default().with_name(Some(topic("events"))).with_partitions(
                vec![MetadataResponsePartition::default()
                    .with_replica_nodes(vec![BrokerId(1), BrokerId(2)])
                    .with_isr_nodes(vec![BrokerId(1)])],
            )]),
    );
    check::<InitProducerIdRequest>(InitProducerIdResponse::default().with_producer_id(ProducerId(8)));
    check::<CreateTopicsRequest>(CreateTopicsResponse::default().with_topics(vec![CreatableTopicResult::default()
        .with_name(topic("events"))
        .with_error_message(Some(text("exists")))
        .with_topic_config_error_code(41)
        .with_configs(Some(vec![CreatableTopicConfigs::default()
            .with_name(text("retention.ms"))
            .with_value(Some(text("-1")))]))]));
    check::<FindCoordinatorRequest>(FindCoordinatorResponse::default().with_coordinators(vec![
        Coordinator::default().with_key(text("txn")).with_host(text("b1")).with_error_message(Some(text("none"))),
    ]));
    check::<AddPartitionsToTxnRequest>(AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(
        vec![AddPartitionsToTxnTopicResult::default()
            .with_name(topic("events"))
            .with_results_by_partition(vec![AddPartitionsToTxnPartitionResult::default().with_partition_index(3)])],
    ));
    check::<EndTxnRequest>(EndTxnResponse::default().with_error_code(47));
    check::<DeleteTopicsRequest>(DeleteTopicsResponse::default().with_responses(vec![
        DeletableTopicResult::default().with_name(Some(topic("events"))).with_error_message(Some(text("gone"))),
    ]));
}

#[test]
fn every_api_the_client_speaks_has_a_shape_at_its_version() {
    for key in 0..100 {
        if let Some((api, version)) = version_of(key) {
            assert!(shape_of(key, version).is_some(), "{api} v{version}");
            assert!(shape_of(key, version + 1).is_none(), "{api} v{}", version + 1);
        }
    }
}

const TOPICS: Shape = Shape {
    fields: &[Field::Array(
        "topics",
        &Shape { fields: &[Field::Bytes("name"), Field::Int32s("replicas")], tags: &[(1, Field::Fixed("epoch", 8))] },
    )],
    tags: &[],
};

#[test]
fn a_length_past_the_bytes_left_is_refused_with_its_path() {
    // One topic named "a" whose replica array claims 1000 entries.
    let body = [2, 2, b'a', 0xe9, 0x07, 0, 0, 0, 0, 0];
    let error = walk(&TOPICS, &body).expect_err("too many replicas");
    assert_eq!(error, "`topics[0].replicas`: 1000 entries claimed with 5 bytes left");
    // 2³² − 2 topics, as the fuzzer's produce response claimed.
    let error = walk(&TOPICS, &[0xff, 0xff, 0xff, 0xff, 0x0f, 0]).expect_err("too many topics");
    assert_eq!(error, "`topics`: 4294967294 entries claimed with 1 bytes left");
    let error = walk(&TOPICS, &[2, 9, b'a']).expect_err("name cut short");
    assert_eq!(error, "`topics[0].name`: 8 bytes needed, 1 left");
}

#[test]
fn tagged_fields_are_walked_when_known_and_skipped_when_not() {
    // Topic "a", no replicas (null), then tags: 7 (unknown, 2 bytes) and 1 (epoch, 8 bytes).
    let mut body = vec![2, 2, b'a', 0, 2, 7, 2, 0xaa, 0xbb, 1, 8];
    body.extend_from_slice(&5i64.to_be_bytes());
    body.push(0);
    assert_eq!(walk(&TOPICS, &body), Ok(body.len()));

    // A known tag whose size is not its value's: kafka-protocol would read past it.
    let mut short = vec![2, 2, b'a', 0, 1, 1, 9];
    short.extend_from_slice(&[0; 9]);
    short.push(0);
    let error = walk(&TOPICS, &short).expect_err("size and value disagree");
    assert_eq!(error, "`topics[0].epoch`: tagged field 1 is 9 bytes but its value 8");
    let error = walk(&TOPICS, &[2, 2, b'a', 0, 1, 7, 50, 0]).expect_err("tag past the end");
    assert_eq!(error, "`topics[0]`: tagged field 7 claims 50 bytes with 1 left");
}

#[test]
fn a_varint_past_32_bits_is_refused() {
    let error = walk(&TOPICS, &[0x80, 0x80, 0x80, 0x80, 0x10]).expect_err("35 bits");
    assert_eq!(error, "`topics`: an unsigned varint longer than 32 bits");
    assert_eq!(walk(&TOPICS, &[0x81, 0x80, 0x80, 0x80, 0x00, 0]), Ok(6), "a varint of five bytes within 32 bits");
}
