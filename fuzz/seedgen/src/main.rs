//! Writes `fuzz/seeds/<target>/*`: well-formed inputs for each fuzz target, made with the
//! engine's own encoders (and kafka-protocol's for what a broker sends), so the fuzzers start
//! from inputs that reach deep into each parser. Run from `fuzz/seedgen`: `cargo run`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{Field as ArrowField, Schema as ArrowSchema};
use bytes::{Bytes, BytesMut};
use kafka_protocol::messages::{
    fetch_response, metadata_response, produce_response, ApiKey, BrokerId, FetchResponse, MetadataResponse,
    ProduceResponse, ResponseHeader, TopicName,
};
use kafka_protocol::protocol::{Encodable, HeaderVersion, StrBytes};
use kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};
use sleet_clarity::{MonotaskKind, MonotaskRecord, Resource};
use sleet_kafka::batch_builder::{BatchBuilder, Codec, ProducerStamp};
use sleet_plan::*;
use sleet_block::encode_block;
use sleet_wire::*;

fn seeds_dir(target: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../seeds").join(target);
    std::fs::create_dir_all(&dir).expect("create the seeds directory");
    dir
}

fn write(target: &str, name: &str, bytes: &[u8]) {
    std::fs::write(seeds_dir(target).join(name), bytes).expect("write a seed");
}

fn json_decode() {
    // Config byte: every field nullable, limit 65536; projection: all five fields.
    let lines = [
        r#"{"name": "a", "time": 1, "score": 1.5, "ok": true, "payload": "p"}"#,
        "{\n\t\"ok\" :false ,\"score\":-2e1,\r\n \"time\":\"20\",\"name\":\"b\"}  ",
        r#"{"name": "caf\u00e9 \"q\" \\ \/ \n", "time": -9223372036854775808, "payload": null}"#,
        r#"{"name": "\ud83d\ude00 snow\u2744", "time": 2, "score": "3.25"}"#,
        r#"{"extra": {"deep": [1, {"x": null}], "s": "}"}, "name": "a", "n": -1.5e3, "time": 7, "t": true}"#,
        r#"{"name": "b", "time": 2, "time": 3}"#,
        r#"{"name": "b", "time": 2.5}"#,
        r#"{"x0": 1, "x15": null, "name": "w", "time": 0}"#,
    ];
    let seed = |config: u8, projection: u8| [vec![config, projection], lines.join("\n").into_bytes()].concat();
    write("json_decode", "all-nullable", &seed(0x1f, 0x1f));
    write("json_decode", "strict", &seed(0x00, 0x1f));
    write("json_decode", "wide", &seed(0x3f, 0xff));
    write("json_decode", "small-limit", &seed(0x9f, 0x03));
}

fn sample_block(rows: usize, with_nulls: bool) -> RecordBatch {
    let null_at = |row: usize| with_nulls && row % 3 == 1;
    let texts: Vec<Option<String>> = (0..rows).map(|row| (!null_at(row)).then(|| "é".repeat(row % 4))).collect();
    let ints: Vec<Option<i64>> = (0..rows).map(|row| (!null_at(row)).then_some(i64::MIN + row as i64)).collect();
    let floats: Vec<Option<f64>> = (0..rows).map(|row| (!null_at(row)).then_some(row as f64 / 3.0)).collect();
    let bools: Vec<Option<bool>> = (0..rows).map(|row| (!null_at(row)).then_some(row % 2 == 0)).collect();
    let bytes: Vec<Option<Vec<u8>>> = (0..rows).map(|row| (!null_at(row)).then(|| vec![row as u8; row % 5])).collect();
    let columns: Vec<(&str, ArrayRef)> = vec![
        ("utf8", Arc::new(StringArray::from(texts))),
        ("int64", Arc::new(Int64Array::from(ints))),
        ("float64", Arc::new(Float64Array::from(floats))),
        ("boolean", Arc::new(BooleanArray::from(bools))),
        ("binary", Arc::new(BinaryArray::from(bytes.iter().map(|value| value.as_deref()).collect::<Vec<_>>()))),
        ("plain", Arc::new(Int64Array::from_iter_values(0..rows as i64))),
    ];
    let fields: Vec<ArrowField> = columns
        .iter()
        .map(|(name, array)| ArrowField::new(*name, array.data_type().clone(), *name != "plain"))
        .collect();
    RecordBatch::try_new(Arc::new(ArrowSchema::new(fields)), columns.into_iter().map(|(_, array)| array).collect())
        .expect("a block")
}

fn block_codec() {
    for (rows, with_nulls) in [(0, false), (1, false), (5, true), (17, true)] {
        let mut bytes = vec![0u8];
        bytes.extend(encode_block(&sample_block(rows, with_nulls)).expect("encodes"));
        write("block_codec_roundtrip", &format!("raw-{rows}-{with_nulls}"), &bytes);
    }
    // Structured mode: arbitrary bytes shape the block.
    write(
        "block_codec_roundtrip",
        "structured",
        &[1, 5, 3, 4, b'n', b'a', b'm', b'e', 1, 2, 1, 0, 7, 7, 7, 7, 7, 7, 7, 7],
    );
}

fn report(started_at_us: i64) -> TaskReport {
    TaskReport {
        task: TaskId { job: 3, stage: StageId(1), partition: 7, batch: 123_456 },
        worker: 2,
        group: Some(99),
        outcome: TaskOutcome::Succeeded(TaskStats {
            source_range: Some(SourceRange::Time { start_ms: 1_790_000_000_000, end_ms: 1_790_000_000_010 }),
            records_in: 12,
            blocks: vec![BlockMeta { reduce_partition: 4, rows: 3, bytes: 96 }],
            window_latencies_ms: vec![5, -1],
            ..TaskStats::default()
        }),
        monotasks: vec![MonotaskRecord {
            kind: MonotaskKind::ALL[0],
            resource: Resource::ALL[0],
            bytes: 100,
            queued_at_us: started_at_us + 3,
            started_at_us: started_at_us + 10,
            finished_at_us: started_at_us + 50,
        }],
        started_at_us,
        finished_at_us: started_at_us + 60,
    }
}

fn frames() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let mut out = Vec::new();
        let hello = [b'S', b'L', b'E', b'T', 0, PROTOCOL_VERSION as u8, Role::Driver as u8];
        write_frame(&mut out, FrameKind::Hello, &hello).await.expect("frame");
        write("frame_decode", "hello", &out);

        let mut out = Vec::new();
        write_frame(&mut out, FrameKind::Hello, &hello).await.expect("frame");
        write_binary(&mut out, &WorkerToDriver::Heartbeat { worker: 4 }).await.expect("frame");
        let status =
            WorkerToDriver::Status(StatusBatch { registered: vec![], reports: vec![report(1_790_000_000_000_000)] });
        write_binary(&mut out, &status).await.expect("frame");
        write_binary(
            &mut out,
            &WorkerToDriver::Register {
                name: "w1".into(),
                shuffle_address: "127.0.0.1:1".into(),
                cores: 2,
                pid: 1,
                previous_driver: Some(5),
            },
        )
        .await
        .expect("frame");
        write_binary(&mut out, &DriverToWorker::Truncate { job: 1, last_batch: 9 }).await.expect("frame");
        write("frame_decode", "worker-driver", &out);

        let mut out = Vec::new();
        write_control(&mut out, &ClientRequest::Stop { job: 3 }).await.expect("frame");
        write_control(&mut out, &DriverToClient::Rejected { reason: "no".into() }).await.expect("frame");
        write_control(&mut out, &ClientRequest::Submit(Box::new(job(ysb_plan(2))))).await.expect("frame");
        write("frame_decode", "client", &out);

        let mut out = Vec::new();
        let block = BlockId { job: 1, stage: StageId(0), map_partition: 2, batch: 3, reduce_partition: 1 };
        write_binary(&mut out, &PeerRequest::Fetch { blocks: vec![block] }).await.expect("frame");
        let body = encode_block(&sample_block(5, true)).expect("encodes");
        write_data(&mut out, &FetchedBlock::Found { block, rows: 5 }, &body).await.expect("frame");
        write_data(&mut out, &FetchedBlock::Missing { block }, &[]).await.expect("frame");
        write("frame_decode", "peer", &out);
    });
}

fn owned(offset: i64, producer_id: i64, transactional: bool, control: bool) -> Record {
    Record {
        transactional,
        control,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch: if producer_id >= 0 { 0 } else { -1 },
        timestamp_type: TimestampType::Creation,
        offset,
        sequence: offset as i32,
        timestamp: 1_000 + offset,
        key: Some(Bytes::from(format!("k{offset}"))),
        value: Some(if control {
            Bytes::from_static(&[0, 0, 0, 0, 0, 0])
        } else {
            Bytes::from(format!("{{\"n\":{offset}}}"))
        }),
        headers: Default::default(),
    }
}

fn library_batch(records: &[Record], compression: Compression) -> Vec<u8> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, records.iter(), &RecordEncodeOptions { version: 2, compression })
        .expect("encode");
    buf.to_vec()
}

fn sleet_batch(codec: Codec, transactional: bool) -> Vec<u8> {
    let mut builder = BatchBuilder::new(codec);
    for index in 0..5 {
        builder.push(1_000 + index, Some(format!("k{index}").as_bytes()), format!("{{\"n\":{index}}}").as_bytes());
    }
    let mut out = Vec::new();
    builder.finish(ProducerStamp { producer_id: 7, producer_epoch: 0, base_sequence: 0, transactional }, &mut out);
    out
}

/// Flags (bit 0: fix CRCs), the length of the parameters, parameters for from = 0,
/// end = 300 and no aborted transaction, then `batches`.
fn record_batches_input(batches: &[u8]) -> Vec<u8> {
    // Parameters as `arbitrary` reads them: small offsets (bool false, i16 in range), none aborted.
    let mut input = vec![1u8, 6, 0, 2, 0, 0xff, 0, 0];
    input.extend_from_slice(batches);
    input
}

fn batches() -> Vec<(String, Vec<u8>)> {
    let values: Vec<Record> = (0..20).map(|offset| owned(offset, -1, false, false)).collect();
    let mut all = Vec::new();
    for (name, compression) in [
        ("none", Compression::None),
        ("lz4", Compression::Lz4),
        ("gzip", Compression::Gzip),
        ("snappy", Compression::Snappy),
    ] {
        all.push((format!("library-{name}"), library_batch(&values, compression)));
    }
    all.push(("sleet-lz4".into(), sleet_batch(Codec::Lz4, false)));
    all.push(("sleet-none-txn".into(), sleet_batch(Codec::None, true)));
    let mut txn: Vec<u8> = library_batch(&[owned(0, 5, true, false), owned(1, 5, true, false)], Compression::None);
    txn.extend(library_batch(&[owned(2, 5, true, true)], Compression::None));
    all.push(("transaction-and-marker".into(), txn));
    all
}

fn kafka_record_batches() {
    for (name, batch) in batches() {
        write("kafka_record_batches", &name, &record_batches_input(&batch));
    }
}

fn response<R: Encodable + HeaderVersion>(key: ApiKey, version: i16, response: &R) -> Vec<u8> {
    let mut out = BytesMut::new();
    ResponseHeader::default()
        .with_correlation_id(0)
        .encode(&mut out, R::header_version(version))
        .expect("header encodes");
    response.encode(&mut out, version).expect("response encodes");
    let _ = key;
    out.to_vec()
}

fn kafka_responses() {
    let version = |key: ApiKey| sleet_kafka::version_of(key as i16).expect("a version").1;
    let topic = || TopicName(StrBytes::from_static_str("events"));
    let metadata = MetadataResponse::default()
        .with_brokers(vec![metadata_response::MetadataResponseBroker::default()
            .with_node_id(BrokerId(1))
            .with_host(StrBytes::from_static_str("127.0.0.1"))
            .with_port(9092)])
        .with_topics(vec![metadata_response::MetadataResponseTopic::default()
            .with_name(Some(topic()))
            .with_partitions(vec![metadata_response::MetadataResponsePartition::default()
                .with_partition_index(0)
                .with_leader_id(BrokerId(1))])]);
    let mut bytes = vec![4u8];
    bytes.extend(response(ApiKey::Metadata, version(ApiKey::Metadata), &metadata));
    write("kafka_responses", "metadata", &bytes);

    let produce = ProduceResponse::default().with_responses(vec![produce_response::TopicProduceResponse::default()
        .with_name(topic())
        .with_partition_responses(vec![produce_response::PartitionProduceResponse::default()
            .with_index(0)
            .with_base_offset(42)])]);
    let mut bytes = vec![1u8];
    bytes.extend(response(ApiKey::Produce, version(ApiKey::Produce), &produce));
    write("kafka_responses", "produce", &bytes);

    for (name, batch) in batches() {
        let fetch = FetchResponse::default().with_responses(vec![fetch_response::FetchableTopicResponse::default()
            .with_topic(topic())
            .with_partitions(vec![fetch_response::PartitionData::default()
                .with_partition_index(0)
                .with_high_watermark(20)
                .with_records(Some(Bytes::from(batch)))])]);
        let mut bytes = vec![2u8];
        bytes.extend(response(ApiKey::Fetch, version(ApiKey::Fetch), &fetch));
        write("kafka_responses", &format!("fetch-{name}"), &bytes);
    }
}

fn ysb_plan(partitions: u32) -> Plan {
    let schema = Schema::new(vec![
        Field::new("user_id", DataType::Utf8),
        Field::new("ad_id", DataType::Utf8),
        Field::new("event_type", DataType::Utf8),
        Field::new("event_time", DataType::Int64),
    ]);
    PlanBuilder::source(
        "ysb",
        SourceSpec::Ysb(YsbSourceSpec {
            seed: 1,
            rate_per_s: 10,
            partitions: 3,
            bad_fraction: 0.0,
            pre_decoded: false,
        }),
    )
    .decode_json(schema)
    .filter(col("event_type").eq(lit("view")))
    .project([col("ad_id"), col("event_time")])
    .lookup("ad_id", TableSpec::YsbCampaigns { seed: 1 }, "ad_id", ["campaign_id"])
    .exchange(["campaign_id"], partitions)
    .window_aggregate(
        WindowSpec::tumbling("event_time", 10_000, 0),
        ["campaign_id"],
        [Aggregate::count("count")],
    )
    .sink(SinkSpec::Discard)
    .build()
    .expect("valid plan")
}

fn job(plan: Plan) -> JobFile {
    JobFile {
        plan,
        settings: JobSettings {
            batch_interval_ms: 100,
            duration_ms: Some(1_000),
            scheduler: SchedulerKind::Bsp,
            group_size: GroupSize::Fixed(10),
            ..JobSettings::default()
        },
    }
}

fn job_file() {
    write("job_file", "ysb", job(ysb_plan(2)).to_json().as_bytes());
    let numbers = SourceSpec::Numbers(NumbersSourceSpec { seed: 1, partitions: 4, numbers_per_batch: 1000, keys: 16 });
    let plan = PlanBuilder::source("numbers", numbers).sink(SinkSpec::Discard).build().expect("valid plan");
    let mut small = job(plan);
    small.settings.group_size = GroupSize::Auto;
    write("job_file", "numbers", small.to_json().as_bytes());
}

fn main() {
    json_decode();
    block_codec();
    frames();
    kafka_record_batches();
    kafka_responses();
    job_file();
    println!("seeds written to {}", seeds_dir("").display());
}
