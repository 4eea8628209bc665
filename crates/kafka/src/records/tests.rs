use bytes::{Bytes, BytesMut};
use kafka_protocol::records::{
    Compression, Record as OwnedRecord, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};

use super::*;

fn owned(offset: i64, value: &[u8], producer_id: i64, transactional: bool, control: bool) -> OwnedRecord {
    OwnedRecord {
        transactional,
        control,
        delete_horizon: false,
        partition_leader_epoch: 0,
        producer_id,
        producer_epoch: if producer_id >= 0 { 0 } else { -1 },
        timestamp_type: TimestampType::Creation,
        offset,
        // The library batches records together only while offset − sequence stays the same.
        sequence: offset as i32,
        timestamp: 1_000 + offset,
        key: Some(Bytes::from(format!("k{offset}"))),
        value: Some(Bytes::copy_from_slice(value)),
        headers: Default::default(),
    }
}

fn encode(records: &[OwnedRecord], compression: Compression) -> Vec<u8> {
    let mut buf = BytesMut::new();
    RecordBatchEncoder::encode(&mut buf, records.iter(), &RecordEncodeOptions { version: 2, compression })
        .expect("encode");
    buf.to_vec()
}

fn read_all(data: &[u8], from: i64, end: i64, aborted: Vec<(i64, i64)>) -> (Vec<(i64, Vec<u8>)>, Parsed) {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let parsed = parse_batches(data, from, end, &mut AbortedTransactions::new(aborted), &mut scratch, &mut |record| {
        assert_eq!(record.timestamp, 1_000 + record.offset);
        assert_eq!(record.key, Some(format!("k{}", record.offset).as_bytes()));
        out.push((record.offset, record.value.expect("value").to_vec()))
    })
    .expect("parse");
    (out, parsed)
}

fn values(range: std::ops::Range<i64>) -> Vec<OwnedRecord> {
    range.map(|offset| owned(offset, format!("{{\"n\":{offset}}}").as_bytes(), -1, false, false)).collect()
}

#[test]
fn every_codec_gives_back_the_records_encoded() {
    for compression in [Compression::None, Compression::Lz4, Compression::Gzip, Compression::Snappy] {
        let records = values(100..150);
        let (read, parsed) = read_all(&encode(&records, compression), 100, i64::MAX, vec![]);
        assert_eq!(read.len(), 50, "{compression:?}");
        assert_eq!(read[7], (107, b"{\"n\":107}".to_vec()), "{compression:?}");
        assert_eq!(parsed, Parsed { next_offset: 150, records: 50 });
    }
}

#[test]
fn a_range_reads_exactly_its_offsets_even_inside_a_compressed_batch() {
    let mut data = encode(&values(0..40), Compression::Lz4);
    data.extend(encode(&values(40..80), Compression::Lz4));
    let (read, parsed) = read_all(&data, 25, 55, vec![]);
    assert_eq!(read.iter().map(|(offset, _)| *offset).collect::<Vec<_>>(), (25..55).collect::<Vec<_>>());
    assert_eq!(parsed.next_offset, 55);
}

#[test]
fn a_batch_cut_off_by_the_fetch_limit_is_left_for_the_next_fetch() {
    let mut data = encode(&values(0..10), Compression::None);
    let second = encode(&values(10..20), Compression::None);
    data.extend_from_slice(&second[..second.len() - 3]);
    let (read, parsed) = read_all(&data, 0, i64::MAX, vec![]);
    assert_eq!(read.len(), 10);
    assert_eq!(parsed.next_offset, 10);
}

#[test]
fn corruption_is_an_error_not_a_wrong_record() {
    let mut data = encode(&values(0..10), Compression::None);
    let last = data.len() - 2;
    data[last] ^= 0x40;
    let mut scratch = Vec::new();
    let error = parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut scratch, &mut |_| {})
        .expect_err("corrupt batch");
    assert!(error.contains("CRC"), "{error}");
}

/// Found by the `kafka_record_batches` fuzz target: a gzip or snappy batch whose header claims
/// 2³¹ − 1 records. kafka-protocol's decoder, which read these batches then, reserved them all
/// up front, some 200 GB, and the failed allocation aborted the process; read here, the batch
/// is an error once its real records run out.
#[test]
fn a_record_count_past_the_batch_is_an_error_not_an_abort() {
    for compression in [Compression::None, Compression::Lz4, Compression::Gzip, Compression::Snappy] {
        let mut data = encode(&values(0..10), compression);
        data[57..61].copy_from_slice(&i32::MAX.to_be_bytes());
        let crc = crc32c::crc32c(&data[21..]);
        data[17..21].copy_from_slice(&crc.to_be_bytes());
        let mut scratch = Vec::new();
        let error = parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut scratch, &mut |_| {})
            .expect_err("more records claimed than carried");
        assert!(error.contains("cut short"), "{compression:?}: {error}");
    }
}

/// A negative count cannot describe records; read as "none", it would skip the batch's records
/// and move past their offsets as if they had been read.
#[test]
fn a_negative_record_count_is_an_error_not_an_empty_batch() {
    let mut data = encode(&values(0..10), Compression::None);
    data[57..61].copy_from_slice(&(-3i32).to_be_bytes());
    let crc = crc32c::crc32c(&data[21..]);
    data[17..21].copy_from_slice(&crc.to_be_bytes());
    let mut emitted = 0;
    let mut scratch = Vec::new();
    let error =
        parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut scratch, &mut |_| emitted += 1)
            .expect_err("a negative record count");
    assert!(error.contains("-3"), "{error}");
    assert_eq!(emitted, 0);
}

/// `data` with its first batch's base offset and last offset delta replaced, CRC fixed.
fn with_offsets(mut data: Vec<u8>, base_offset: i64, last_offset_delta: i32) -> Vec<u8> {
    data[0..8].copy_from_slice(&base_offset.to_be_bytes());
    data[23..27].copy_from_slice(&last_offset_delta.to_be_bytes());
    let crc = crc32c::crc32c(&data[21..]);
    data[17..21].copy_from_slice(&crc.to_be_bytes());
    data
}

/// Found by the `kafka_record_batches` fuzz target, in this crate's parser and then in
/// kafka-protocol's (which read gzip and snappy batches then): offsets near `i64::MAX`
/// overflowed (a panic with overflow checks, records silently skipped and a negative next
/// offset without). A batch or record past the last offset is an error; a batch ending
/// exactly at it is read, whatever the codec.
#[test]
fn offsets_at_the_end_of_the_range_do_not_overflow() {
    let parse = |data: &[u8]| {
        let mut read = Vec::new();
        let parsed =
            parse_batches(data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut Vec::new(), &mut |record| {
                read.push(record.offset)
            });
        parsed.map(|parsed| (parsed, read))
    };
    for compression in [Compression::None, Compression::Lz4, Compression::Gzip, Compression::Snappy] {
        let batch = encode(&values(0..10), compression);
        let error = parse(&with_offsets(batch.clone(), i64::MAX - 5, 9)).expect_err("the batch ends past i64::MAX");
        assert!(error.contains("ends past the offsets"), "{compression:?}: {error}");
        let error = parse(&with_offsets(batch.clone(), i64::MAX - 5, 0)).expect_err("a record past i64::MAX");
        assert!(error.contains("offset overflows"), "{compression:?}: {error}");
        let (parsed, read) = parse(&with_offsets(batch, i64::MAX - 9, 9)).expect("ends at i64::MAX");
        assert_eq!(parsed, Parsed { next_offset: i64::MAX, records: 9 }, "{compression:?}");
        assert_eq!(read, (i64::MAX - 9..i64::MAX).collect::<Vec<_>>(), "{compression:?}");
    }
}

/// A control batch as the broker writes one for a transaction's end: key = version 0 and
/// the marker type, value = version + coordinator epoch.
fn marker(offset: i64, producer_id: i64, commit: bool) -> Vec<u8> {
    let mut record = owned(offset, &[0, 0, 0, 0, 0, 0], producer_id, true, true);
    record.key = Some(Bytes::from(vec![0, 0, 0, u8::from(commit)]));
    encode(&[record], Compression::None)
}

/// Found by the `kafka_record_batches` fuzz target: a snappy batch without Kafka's framing
/// whose raw header claims 2.6 GB uncompressed; kafka-protocol's decoder, which read snappy
/// batches then, zero-filled that much before decompressing a byte.
#[test]
fn a_snappy_batch_claiming_gigabytes_is_an_error() {
    let mut data = encode(&values(0..1), Compression::None);
    data.truncate(61);
    data[22] = (data[22] & !0x07) | 2;
    // Raw snappy: the uncompressed length as a varint, then a literal of one byte.
    data.extend_from_slice(&[0xff, 0xff, 0xff, 0xe1, 0x09, 0x00, b'x']);
    let length = (data.len() - 12) as i32;
    data[8..12].copy_from_slice(&length.to_be_bytes());
    let crc = crc32c::crc32c(&data[21..]);
    data[17..21].copy_from_slice(&crc.to_be_bytes());
    let error = parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::default(), &mut Vec::new(), &mut |_| {})
        .expect_err("a bomb");
    assert!(error.contains("claims"), "{error}");
}

#[test]
fn read_committed_skips_aborted_transactions_and_markers() {
    let committed: Vec<_> = (0..3).map(|offset| owned(offset, b"yes", 7, true, false)).collect();
    let aborted: Vec<_> = (4..6).map(|offset| owned(offset, b"no", 8, true, false)).collect();
    let mut data = encode(&committed, Compression::None);
    data.extend(marker(3, 7, true));
    data.extend(encode(&aborted, Compression::None));
    data.extend(marker(6, 8, false));
    data.extend(encode(&[owned(7, b"plain", -1, false, false)], Compression::None));
    let mut read = Vec::new();
    let mut scratch = Vec::new();
    let parsed =
        parse_batches(&data, 0, i64::MAX, &mut AbortedTransactions::new(vec![(8, 4)]), &mut scratch, &mut |r| {
            read.push((r.offset, r.value.expect("value").to_vec()))
        })
        .expect("parse");
    assert_eq!(read.iter().map(|(offset, _)| *offset).collect::<Vec<_>>(), vec![0, 1, 2, 7]);
    assert!(read.iter().all(|(_, value)| value != b"no"));
    // Markers take offsets: the position moves past them although no record is handed out.
    assert_eq!(parsed, Parsed { next_offset: 8, records: 4 });
}

proptest::proptest! {
    #[test]
    fn any_split_into_ranges_reads_every_record_once(cuts in proptest::collection::vec(0i64..200, 0..6)) {
        let mut data = Vec::new();
        for start in (0..200).step_by(37) {
            data.extend(encode(&values(start..(start + 37).min(200)), Compression::Lz4));
        }
        let mut bounds: Vec<i64> = cuts;
        bounds.push(0);
        bounds.push(200);
        bounds.sort_unstable();
        let mut seen = Vec::new();
        for pair in bounds.windows(2) {
            let (read, parsed) = read_all(&data, pair[0], pair[1], vec![]);
            proptest::prop_assert!(parsed.next_offset == pair[1] || pair[0] == pair[1]);
            seen.extend(read.into_iter().map(|(offset, _)| offset));
        }
        proptest::prop_assert_eq!(seen, (0..200).collect::<Vec<_>>());
    }
}
