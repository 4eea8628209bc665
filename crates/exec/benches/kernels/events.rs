//! Inputs shaped like ysb's: 36-character ids, 100 campaigns of 10 ads, three event types.
//! Made here rather than by the connectors' generator, which depends on this crate.

use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use sleet_exec::RawRecords;

pub const CAMPAIGNS: u64 = 100;
const ADS_PER_CAMPAIGN: u64 = 10;
const EVENT_TYPES: [&str; 3] = ["view", "click", "purchase"];
const AD_TYPES: [&str; 5] = ["banner", "modal", "sponsored-search", "mail", "mobile"];

/// splitmix64's finalizer: cheap, well-mixed pseudo-random values from an index.
pub fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// A uuid-shaped id, as ysb's ids are.
pub fn id(domain: u64, index: u64) -> String {
    let (high, low) = (mix(domain << 32 | index), mix(!(domain << 32 | index)));
    let hex = format!("{high:016x}{low:016x}");
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// `count` JSON events, one record each, spread over 100 ms of event time.
pub fn json_events(count: u64) -> RawRecords {
    events(count, false)
}

/// The same events without their event time, which comes beside each record as its
/// timestamp, as a Kafka source with `event_time: record_timestamp` hands it over.
pub fn json_events_timestamped(count: u64) -> RawRecords {
    events(count, true)
}

fn events(count: u64, time_beside: bool) -> RawRecords {
    let mut records = RawRecords::with_capacity(count as usize, count as usize * 260);
    for k in 0..count {
        let hash = mix(k);
        let time = 1_700_000_000_000 + (k * 100 / count) as i64;
        let time_field = if time_beside { String::new() } else { format!("\"event_time\": \"{time}\", ") };
        let event = format!(
            "{{\"user_id\": \"{}\", \"page_id\": \"{}\", \"ad_id\": \"{}\", \"ad_type\": \"{}\", \
             \"event_type\": \"{}\", {time_field}\"ip_address\": \"1.2.3.4\"}}",
            id(3, hash % 1000),
            id(4, (hash >> 10) % 1000),
            id(2, (hash >> 20) % (CAMPAIGNS * ADS_PER_CAMPAIGN)),
            AD_TYPES[((hash >> 32) % 5) as usize],
            EVENT_TYPES[((hash >> 40) % 3) as usize],
        );
        records.push(event.as_bytes());
        if time_beside {
            records.timestamps.push(time);
        }
    }
    records
}

/// The rows a ysb map task groups: a campaign id and an event time, `rows` of them in one
/// 10 s window.
pub fn campaign_rows(rows: u64) -> RecordBatch {
    let campaigns: StringArray = (0..rows).map(|row| Some(id(1, mix(row) % CAMPAIGNS))).collect();
    let times: Int64Array = (0..rows).map(|row| 1_700_000_000_000 + (row * 100 / rows) as i64).collect();
    RecordBatch::try_from_iter([
        ("campaign_id", Arc::new(campaigns) as ArrayRef),
        ("event_time", Arc::new(times) as ArrayRef),
    ])
    .expect("two columns of one length")
}
