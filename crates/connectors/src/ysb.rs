//! The Yahoo Streaming Benchmark generator: a pure function of `(seed, partition, event index)`,
//! the JSON layout of the original generator, and the ground truth counted from the same
//! function without going through JSON.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;

use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use sleet_exec::RawRecords;
use sleet_plan::YsbSourceSpec;

pub const CAMPAIGNS: usize = 100;
pub const ADS_PER_CAMPAIGN: usize = 10;
pub const WINDOW_MS: i64 = 10_000;
const USERS: u32 = 100;
const PAGES: u32 = 100;
const ADS: u32 = (CAMPAIGNS * ADS_PER_CAMPAIGN) as u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AdType {
    Banner,
    Modal,
    SponsoredSearch,
    Mail,
    Mobile,
}

impl AdType {
    const ALL: [AdType; 5] = [AdType::Banner, AdType::Modal, AdType::SponsoredSearch, AdType::Mail, AdType::Mobile];

    pub fn as_str(self) -> &'static str {
        match self {
            AdType::Banner => "banner",
            AdType::Modal => "modal",
            AdType::SponsoredSearch => "sponsored-search",
            AdType::Mail => "mail",
            AdType::Mobile => "mobile",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    View,
    Click,
    Purchase,
}

impl EventType {
    const ALL: [EventType; 3] = [EventType::View, EventType::Click, EventType::Purchase];

    pub fn as_str(self) -> &'static str {
        match self {
            EventType::View => "view",
            EventType::Click => "click",
            EventType::Purchase => "purchase",
        }
    }
}

/// How a bad record is bad; each must land in the dead-letter output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BadKind {
    /// Not valid JSON.
    Malformed,
    /// Valid JSON, but `event_time` is not an integer.
    WrongType,
    /// Valid JSON over the decoder's size limit.
    Oversized,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct YsbEvent {
    pub user: u32,
    pub page: u32,
    pub ad: u32,
    pub ad_type: AdType,
    pub event_type: EventType,
    pub event_time_ms: i64,
    pub bad: Option<BadKind>,
}

/// Added to the state per step of splitmix64; also spaces event indexes apart in `event_hash`.
const GOLDEN_GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

/// splitmix64's finalizer: a fast, well-mixed hash for deterministic pseudo-random values.
fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(GOLDEN_GAMMA);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

/// A uniform value in `[0, 1)` from the top 53 bits of `hash`.
fn uniform(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// A uniform index in `0..n` from 32 bits of hash (multiply-high rather than `%`, so the bias
/// is below 2^-32 · n instead of depending on how `n` divides a power of two).
fn index_below(bits: u32, n: u32) -> u32 {
    ((u64::from(bits) * u64::from(n)) >> 32) as u32
}

/// The seed of one partition's event sequence; distinct partitions get unrelated sequences.
fn partition_stream(seed: u64, partition: u32) -> u64 {
    mix(seed ^ mix(u64::from(partition) ^ 0x7973_625f_7061_7274))
}

/// Event `k` of a stream is the `k`-th output of splitmix64 started at the stream's seed, so
/// any event is reachable in O(1) without generating its predecessors.
fn event_hash(stream: u64, k: u64) -> u64 {
    mix(stream.wrapping_add(k.wrapping_mul(GOLDEN_GAMMA)))
}

/// Events per second of `partition`: the total rate split as evenly as integers allow.
pub fn partition_rate(spec: &YsbSourceSpec, partition: u32) -> u64 {
    let partitions = u64::from(spec.partitions.max(1));
    spec.rate_per_s / partitions + u64::from(u64::from(partition) < spec.rate_per_s % partitions)
}

/// `floor(k * 1000 / rate)`; 64-bit arithmetic unless `k * 1000` overflows it, which only a
/// rate of millions of events per second per partition reaches, thousands of years after 1970.
fn event_time_ms(k: u64, rate: u64) -> i64 {
    debug_assert!(rate > 0);
    match k.checked_mul(1000) {
        Some(scaled) => (scaled / rate) as i64,
        None => (u128::from(k) * 1000 / u128::from(rate)) as i64,
    }
}

/// Event `k` of a partition is scheduled at `floor(k * 1000 / rate)` ms since the Unix epoch,
/// so the events in `[start, end)` are exactly `k ∈ [ceil(start * rate / 1000),
/// ceil(end * rate / 1000))`. Negative times are clamped to 0 (no event precedes the epoch);
/// an empty or reversed interval, or a partition with rate 0, has no events.
pub fn event_range(spec: &YsbSourceSpec, partition: u32, start_ms: i64, end_ms: i64) -> Range<u64> {
    let rate = u128::from(partition_rate(spec, partition));
    if rate == 0 || end_ms <= start_ms {
        return 0..0;
    }
    let first = |ms: i64| -> u64 { (ms.max(0) as u128 * rate).div_ceil(1000) as u64 };
    first(start_ms)..first(end_ms)
}

/// Event `k` of `partition`: a pure function of the spec, the partition and `k`.
pub fn event(spec: &YsbSourceSpec, partition: u32, k: u64) -> YsbEvent {
    let rate = partition_rate(spec, partition).max(1);
    event_of_stream(partition_stream(spec.seed, partition), rate, spec.bad_fraction, k).0
}

/// The event and the hash its damage (for a malformed event) is drawn from. Each attribute
/// takes its own 32 bits of hash, so attributes are independent of each other.
fn event_of_stream(stream: u64, rate: u64, bad_fraction: f64, k: u64) -> (YsbEvent, u64) {
    let first = event_hash(stream, k);
    let second = mix(first);
    let third = mix(second);
    // The 15 (ad type, event type) pairs are equally likely, so each marginal is uniform.
    let kind = index_below((second >> 32) as u32, 15);
    // `uniform` reads the top 53 bits of `third`; the kind of damage takes the low 11.
    let bad = (uniform(third) < bad_fraction).then(|| match index_below((third as u32) << 21, 3) {
        0 => BadKind::Malformed,
        1 => BadKind::WrongType,
        _ => BadKind::Oversized,
    });
    let event = YsbEvent {
        user: index_below(first as u32, USERS),
        page: index_below((first >> 32) as u32, PAGES),
        ad: index_below(second as u32, ADS),
        ad_type: AdType::ALL[(kind % 5) as usize],
        event_type: EventType::ALL[(kind / 5) as usize],
        event_time_ms: event_time_ms(k, rate),
        bad,
    };
    (event, third)
}

/// A UUID-shaped id (8-4-4-4-12 lowercase hex) derived from the seed; `domain` keeps
/// campaigns, ads, users and pages apart.
fn uuid(seed: u64, domain: u64, index: u64) -> String {
    let high = mix(seed ^ mix((domain << 32) | index));
    let low = mix(high ^ 0x5bd1_e995);
    let hex = format!("{high:016x}{low:016x}");
    format!("{}-{}-{}-{}-{}", &hex[0..8], &hex[8..12], &hex[12..16], &hex[16..20], &hex[20..32])
}

/// The ad → campaign table: 100 campaigns of 10 ads; ad `a` belongs to campaign `a / 10`.
#[derive(Debug, Clone)]
pub struct Campaigns {
    campaigns: Vec<String>,
    ads: Vec<String>,
}

impl Campaigns {
    pub fn new(seed: u64) -> Self {
        Campaigns {
            campaigns: (0..CAMPAIGNS as u64).map(|index| uuid(seed, 1, index)).collect(),
            ads: (0..u64::from(ADS)).map(|index| uuid(seed, 2, index)).collect(),
        }
    }

    /// Panics if `ad` is not below 1000: ads are indexes the generator made, never input.
    pub fn ad_id(&self, ad: u32) -> &str {
        &self.ads[ad as usize]
    }

    pub fn campaign_of(&self, ad: u32) -> u32 {
        assert!(ad < ADS, "ad index {ad} out of range");
        ad / ADS_PER_CAMPAIGN as u32
    }

    pub fn campaign_id(&self, campaign: u32) -> &str {
        &self.campaigns[campaign as usize]
    }

    pub fn to_record_batch(&self) -> RecordBatch {
        let ads: StringArray = self.ads.iter().map(|ad| Some(ad.as_str())).collect();
        let campaigns: StringArray = (0..ADS).map(|ad| Some(self.campaign_id(self.campaign_of(ad)))).collect();
        let schema = Schema::new(vec![
            Field::new("ad_id", DataType::Utf8, false),
            Field::new("campaign_id", DataType::Utf8, false),
        ]);
        RecordBatch::try_new(Arc::new(schema), vec![Arc::new(ads) as ArrayRef, Arc::new(campaigns) as ArrayRef])
            .expect("the campaigns table is well formed")
    }
}

/// Writes one partition's events as JSON records. Every record is four precomputed fragments,
/// one integer and a constant tail, copied straight into the output buffer:
///
/// ```text
/// {"user_id": "<user>", "page_id": "   user fragment (100)
/// <page>", "ad_id": "                  page fragment (100)
/// <ad>", "ad_type": "                  ad fragment (1000)
/// <type>", "event_type": "<type>", "event_time": "   type fragment (15)
/// <ms>", "ip_address": "1.2.3.4"}      formatted per record, constant tail
/// ```
pub struct YsbGenerator {
    spec: YsbSourceSpec,
    partition: u32,
    stream: u64,
    rate: u64,
    user_fragments: Vec<Vec<u8>>,
    page_fragments: Vec<Vec<u8>>,
    ad_fragments: Vec<Vec<u8>>,
    type_fragments: Vec<Vec<u8>>,
}

/// An oversized record is padded to this size, twice the ysb plan's 4 KiB decoder limit.
const OVERSIZED_RECORD_BYTES: usize = 8 * 1024;
/// Keys whose `:` a malformed record may lose, found by this pattern after the key.
const KEY_END: &[u8] = b"\": \"";
const KEYS: usize = 7;
/// Space reserved per record up front; good records are about 280 bytes.
const RECORD_BYTES_TYPICAL: usize = 288;
/// A caller asking for a very long range still gets correct output; it just grows the buffer
/// as it goes instead of reserving for all of it at once.
const RESERVE_RECORDS_MAX: u64 = 1 << 20;

impl YsbGenerator {
    pub fn new(spec: &YsbSourceSpec, partition: u32) -> Self {
        let fragments = |domain: u64, count: u32, prefix: &str, suffix: &str| -> Vec<Vec<u8>> {
            (0..u64::from(count))
                .map(|index| format!("{prefix}{}{suffix}", uuid(spec.seed, domain, index)).into_bytes())
                .collect()
        };
        let campaigns = Campaigns::new(spec.seed);
        let type_fragments = (0..15)
            .map(|kind| {
                let (ad_type, event_type) = (AdType::ALL[kind % 5], EventType::ALL[kind / 5]);
                format!("{}\", \"event_type\": \"{}\", \"event_time\": \"", ad_type.as_str(), event_type.as_str())
                    .into_bytes()
            })
            .collect();
        YsbGenerator {
            spec: spec.clone(),
            partition,
            stream: partition_stream(spec.seed, partition),
            rate: partition_rate(spec, partition),
            user_fragments: fragments(3, USERS, "{\"user_id\": \"", "\", \"page_id\": \""),
            page_fragments: fragments(4, PAGES, "", "\", \"ad_id\": \""),
            ad_fragments: (0..ADS)
                .map(|ad| format!("{}\", \"ad_type\": \"", campaigns.ad_id(ad)).into_bytes())
                .collect(),
            type_fragments,
        }
    }

    /// Appends the JSON record of every event of this partition in `[start_ms, end_ms)` to
    /// `out`; returns the count appended.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        let range = event_range(&self.spec, self.partition, start_ms, end_ms);
        let count = range.end - range.start;
        let reserve = count.min(RESERVE_RECORDS_MAX) as usize;
        out.data.reserve(reserve * RECORD_BYTES_TYPICAL);
        out.offsets.reserve(reserve);
        for k in range {
            let (event, damage) = event_of_stream(self.stream, self.rate, self.spec.bad_fraction, k);
            self.write_event(&event, damage, &mut out.data);
            out.finish_record();
        }
        count
    }

    fn write_event(&self, event: &YsbEvent, damage: u64, out: &mut Vec<u8>) {
        let record_start = out.len();
        out.extend_from_slice(&self.user_fragments[event.user as usize]);
        out.extend_from_slice(&self.page_fragments[event.page as usize]);
        out.extend_from_slice(&self.ad_fragments[event.ad as usize]);
        let kind = event.event_type as usize * 5 + event.ad_type as usize;
        out.extend_from_slice(&self.type_fragments[kind]);
        if event.bad == Some(BadKind::WrongType) {
            out.extend_from_slice(b"soon");
        } else {
            write_decimal(event.event_time_ms as u64, out);
        }
        out.extend_from_slice(b"\", \"ip_address\": \"1.2.3.4\"");
        match event.bad {
            None | Some(BadKind::WrongType) => out.push(b'}'),
            Some(BadKind::Oversized) => {
                out.extend_from_slice(b", \"padding\": \"");
                let padded_end = record_start + OVERSIZED_RECORD_BYTES - 2;
                assert!(out.len() < padded_end, "a good record is far below the oversized size");
                out.resize(padded_end, b'x');
                out.extend_from_slice(b"\"}");
            }
            Some(BadKind::Malformed) => {
                out.push(b'}');
                damage_record(out, record_start, mix(damage));
            }
        }
    }
}

/// Makes the complete record at `out[record_start..]` invalid JSON, in one of two ways the
/// hash picks: cut it short at any point (a prefix of an object never closes it), or drop the
/// `:` after one of its keys. Over a run the decoder meets every truncation point.
fn damage_record(out: &mut Vec<u8>, record_start: usize, hash: u64) {
    let length = out.len() - record_start;
    if hash & 1 == 0 {
        let keep = 1 + ((hash >> 1) % (length as u64 - 1)) as usize;
        out.truncate(record_start + keep);
        return;
    }
    let key = ((hash >> 1) % KEYS as u64) as usize;
    let key_end = out[record_start..]
        .windows(KEY_END.len())
        .enumerate()
        .filter(|(_, window)| *window == KEY_END)
        .nth(key)
        .map(|(offset, _)| record_start + offset)
        .expect("every key of a record is followed by `\": \"`");
    out.remove(key_end + 1);
}

/// Decimal digits of `value`, written by hand: `format!` per record would cost more than the
/// rest of the record together.
fn write_decimal(mut value: u64, out: &mut Vec<u8>) {
    let mut digits = [0u8; 20];
    let mut position = digits.len();
    loop {
        position -= 1;
        digits[position] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[position..]);
}

/// Good view events per (campaign id, window start) over all partitions in `[start, end)`,
/// counted from `event()` directly so it shares no code with the engine's operators.
pub fn ground_truth(spec: &YsbSourceSpec, start_ms: i64, end_ms: i64) -> BTreeMap<(String, i64), u64> {
    let campaigns = Campaigns::new(spec.seed);
    let mut counts: BTreeMap<(u32, i64), u64> = BTreeMap::new();
    for partition in 0..spec.partitions {
        for k in event_range(spec, partition, start_ms, end_ms) {
            let event = event(spec, partition, k);
            if event.bad.is_none() && event.event_type == EventType::View {
                let window = event.event_time_ms.div_euclid(WINDOW_MS) * WINDOW_MS;
                *counts.entry((campaigns.campaign_of(event.ad), window)).or_default() += 1;
            }
        }
    }
    counts
        .into_iter()
        .map(|((campaign, window), count)| ((campaigns.campaign_id(campaign).to_string(), window), count))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeSet, HashMap};

    use proptest::prelude::*;

    use super::*;

    fn spec(rate_per_s: u64, partitions: u32, bad_fraction: f64) -> YsbSourceSpec {
        YsbSourceSpec { seed: 42, rate_per_s, partitions, bad_fraction }
    }

    const NOV_2023_MS: i64 = 1_700_000_000_000;

    proptest! {
        #[test]
        fn ranges_partition_the_events_exactly(
            rate in 0u64..5_000_000,
            partitions in 1u32..9,
            start in 0i64..10_000_000_000_000,
            a in 0i64..5_000,
            b in 0i64..5_000,
        ) {
            let spec = spec(rate, partitions, 0.0);
            let (middle, end) = (start + a.min(b), start + a.max(b));
            for partition in 0..partitions {
                let left = event_range(&spec, partition, start, middle);
                let right = event_range(&spec, partition, middle, end);
                let whole = event_range(&spec, partition, start, end);
                if !left.is_empty() && !right.is_empty() {
                    prop_assert_eq!(left.end, right.start, "adjacent ranges meet");
                }
                prop_assert_eq!(whole.end - whole.start, (left.end - left.start) + (right.end - right.start));
                if whole.is_empty() {
                    continue;
                }
                // Tight at both ends: the range's events are inside, its neighbours outside.
                prop_assert!(event(&spec, partition, whole.start).event_time_ms >= start);
                prop_assert!(event(&spec, partition, whole.end - 1).event_time_ms < end);
                if whole.start > 0 {
                    prop_assert!(event(&spec, partition, whole.start - 1).event_time_ms < start);
                }
                prop_assert!(event(&spec, partition, whole.end).event_time_ms >= end);
            }
        }

        #[test]
        fn one_second_holds_the_partition_rate(rate in 0u64..5_000_000, partitions in 1u32..9, second in 0i64..2_000_000_000) {
            let spec = spec(rate, partitions, 0.0);
            let mut total = 0;
            for partition in 0..partitions {
                let range = event_range(&spec, partition, second * 1000, second * 1000 + 1000);
                prop_assert_eq!(range.end - range.start, partition_rate(&spec, partition));
                total += partition_rate(&spec, partition);
            }
            prop_assert_eq!(total, rate, "partition rates sum to the total");
        }
    }

    #[test]
    fn partition_rates_split_the_remainder_over_the_first_partitions() {
        let check = |rate: u64, partitions: u32, expected: &[u64]| {
            let spec = spec(rate, partitions, 0.0);
            let rates: Vec<u64> = (0..partitions).map(|partition| partition_rate(&spec, partition)).collect();
            assert_eq!(rates, expected, "rate {rate} over {partitions} partitions");
        };
        check(1_000_003, 4, &[250_001, 250_001, 250_001, 250_000]);
        check(2, 3, &[1, 1, 0]);
        check(9, 1, &[9]);
        check(0, 2, &[0, 0]);
    }

    #[test]
    fn empty_and_reversed_intervals_have_no_events() {
        let spec = spec(1_000, 1, 0.0);
        assert!(event_range(&spec, 0, 5_000, 5_000).is_empty());
        assert!(event_range(&spec, 0, 5_000, 4_000).is_empty());
        assert_eq!(event_range(&spec, 0, -1_000, 1), 0..1, "nothing before the epoch");
    }

    #[test]
    fn enum_order_matches_the_attribute_tables() {
        for (index, ad_type) in AdType::ALL.iter().enumerate() {
            assert_eq!(*ad_type as usize, index);
        }
        for (index, event_type) in EventType::ALL.iter().enumerate() {
            assert_eq!(*event_type as usize, index);
        }
    }

    fn generate(spec: &YsbSourceSpec, partition: u32, start: i64, end: i64) -> RawRecords {
        let mut out = RawRecords::new();
        let count = YsbGenerator::new(spec, partition).generate(start, end, &mut out);
        assert_eq!(count as usize, out.len());
        out
    }

    /// A record that should decode, parsed; panics naming the record if it does not.
    fn parse(record: &[u8]) -> serde_json::Value {
        serde_json::from_slice(record).unwrap_or_else(|error| panic!("{error}: {}", String::from_utf8_lossy(record)))
    }

    #[test]
    fn generated_json_matches_the_event_function() {
        let spec = spec(20_000, 2, 0.05);
        let generator = YsbGenerator::new(&spec, 1);
        let campaigns = Campaigns::new(spec.seed);
        let id = |fragments: &[Vec<u8>], index: u32, skip: usize| -> String {
            String::from_utf8(fragments[index as usize][skip..skip + 36].to_vec()).expect("ascii")
        };
        let (start, end) = (NOV_2023_MS, NOV_2023_MS + 2_000);
        let records = generate(&spec, 1, start, end);
        let mut seen: HashMap<Option<BadKind>, usize> = HashMap::new();
        for (record, k) in records.iter().zip(event_range(&spec, 1, start, end)) {
            let expected = event(&spec, 1, k);
            *seen.entry(expected.bad).or_default() += 1;
            let text = String::from_utf8_lossy(record);
            match expected.bad {
                Some(BadKind::Malformed) => {
                    let parsed = serde_json::from_slice::<serde_json::Value>(record);
                    assert!(parsed.is_err(), "a malformed record parsed: {text}");
                }
                Some(BadKind::WrongType) => {
                    let value = parse(record);
                    let time = value["event_time"].as_str().expect("event_time is a string");
                    assert!(time.parse::<i64>().is_err(), "event_time {time} is an integer");
                }
                Some(BadKind::Oversized) => {
                    assert!(record.len() > 4096, "{} bytes is not oversized", record.len());
                    assert_eq!(parse(record)["ad_id"], campaigns.ad_id(expected.ad));
                }
                None => {
                    let value = parse(record);
                    let expected_value = serde_json::json!({
                        "user_id": id(&generator.user_fragments, expected.user, 13),
                        "page_id": id(&generator.page_fragments, expected.page, 0),
                        "ad_id": campaigns.ad_id(expected.ad),
                        "ad_type": expected.ad_type.as_str(),
                        "event_type": expected.event_type.as_str(),
                        "event_time": expected.event_time_ms.to_string(),
                        "ip_address": "1.2.3.4",
                    });
                    assert_eq!(value, expected_value, "record {text}");
                    assert!(record.len() < 300, "about 250 bytes: {text}");
                    assert!(
                        text.starts_with("{\"user_id\": \"") && text.contains("\", \"page_id\": \""),
                        "layout: {text}"
                    );
                }
            }
        }
        for kind in [None, Some(BadKind::Malformed), Some(BadKind::WrongType), Some(BadKind::Oversized)] {
            assert!(seen.get(&kind).copied().unwrap_or(0) > 0, "no {kind:?} event in the sample");
        }
    }

    #[test]
    fn malformed_records_are_cut_or_lose_a_colon() {
        let spec = spec(200_000, 1, 1.0);
        let (mut cut, mut colonless) = (0, 0);
        for (record, k) in generate(&spec, 0, 0, 1_000).iter().zip(0..) {
            if event(&spec, 0, k).bad != Some(BadKind::Malformed) {
                continue;
            }
            assert!(serde_json::from_slice::<serde_json::Value>(record).is_err());
            if record.ends_with(b"}") {
                colonless += 1;
                assert_eq!(record.iter().filter(|byte| **byte == b':').count(), KEYS - 1);
            } else {
                cut += 1;
            }
        }
        assert!(cut > 10_000 && colonless > 10_000, "cut {cut}, colonless {colonless}");
    }

    #[test]
    fn attributes_are_about_uniform_and_the_bad_fraction_about_right() {
        let spec = spec(100_000, 1, 0.01);
        let events: Vec<YsbEvent> = event_range(&spec, 0, 0, 1_000).map(|k| event(&spec, 0, k)).collect();
        let count = |predicate: &dyn Fn(&YsbEvent) -> bool| events.iter().filter(|event| predicate(event)).count();
        let check = |name: &str, found: usize, expected: usize, tolerance: usize| {
            assert!(found.abs_diff(expected) <= tolerance, "{name}: {found}, expected {expected} ± {tolerance}");
        };
        check("bad", count(&|event| event.bad.is_some()), 1_000, 300);
        check("views", count(&|event| event.event_type == EventType::View), 33_333, 1_000);
        check("mail ads", count(&|event| event.ad_type == AdType::Mail), 20_000, 800);
        check("user 7", count(&|event| event.user == 7), 1_000, 200);
        check("page 99", count(&|event| event.page == 99), 1_000, 200);
        check("ads below 500", count(&|event| event.ad < 500), 50_000, 1_000);
        check("bad and oversized", count(&|event| event.bad == Some(BadKind::Oversized)), 333, 120);
    }

    #[test]
    fn partitions_and_seeds_give_different_events() {
        let attributes = |seed: u64, partition: u32| -> Vec<(u32, u32, u32)> {
            let spec = YsbSourceSpec { seed, ..spec(1_000, 2, 0.0) };
            (0..50).map(|k| event(&spec, partition, k)).map(|event| (event.user, event.page, event.ad)).collect()
        };
        assert_ne!(attributes(1, 0), attributes(1, 1));
        assert_ne!(attributes(1, 0), attributes(2, 0));
        assert_eq!(attributes(1, 0), attributes(1, 0));
    }

    #[test]
    fn ground_truth_equals_a_count_over_parsed_json() {
        let spec = spec(3_000, 3, 0.02);
        let campaigns = Campaigns::new(spec.seed);
        let campaign_of_ad: HashMap<String, String> = (0..ADS)
            .map(|ad| (campaigns.ad_id(ad).to_string(), campaigns.campaign_id(campaigns.campaign_of(ad)).to_string()))
            .collect();
        let (start, end) = (NOV_2023_MS + 5_000, NOV_2023_MS + 27_000);
        let mut counted: BTreeMap<(String, i64), u64> = BTreeMap::new();
        for partition in 0..3 {
            for record in generate(&spec, partition, start, end).iter() {
                // The same rules the ysb plan's decoder applies: size limit, valid JSON, an
                // integer event time.
                if record.len() > 4096 {
                    continue;
                }
                let Ok(value) = serde_json::from_slice::<serde_json::Value>(record) else { continue };
                let Some(Ok(time)) = value["event_time"].as_str().map(str::parse::<i64>) else { continue };
                if value["event_type"] == "view" {
                    let ad = value["ad_id"].as_str().expect("ad_id is a string");
                    let campaign = campaign_of_ad[ad].clone();
                    *counted.entry((campaign, time.div_euclid(WINDOW_MS) * WINDOW_MS)).or_default() += 1;
                }
            }
        }
        assert!(counted.keys().any(|(_, window)| *window == NOV_2023_MS + 20_000), "spans three windows");
        assert_eq!(ground_truth(&spec, start, end), counted);
    }

    #[test]
    fn campaigns_table_maps_ten_ads_to_each_campaign() {
        let campaigns = Campaigns::new(9);
        let table = campaigns.to_record_batch();
        assert_eq!(table.num_rows(), 1000);
        let ads = table.column(0).as_any().downcast_ref::<StringArray>().expect("utf8");
        let owners = table.column(1).as_any().downcast_ref::<StringArray>().expect("utf8");
        let mut per_campaign: BTreeMap<&str, usize> = BTreeMap::new();
        for (ad, owner) in ads.iter().zip(owners.iter()) {
            *per_campaign.entry(owner.expect("non-null")).or_default() += 1;
            let ad = ad.expect("non-null");
            let index = (0..ADS).find(|index| campaigns.ad_id(*index) == ad).expect("a known ad");
            assert_eq!(owner, Some(campaigns.campaign_id(campaigns.campaign_of(index))));
        }
        assert_eq!(per_campaign.len(), CAMPAIGNS);
        assert!(per_campaign.values().all(|ads| *ads == ADS_PER_CAMPAIGN));
        let distinct_ads: BTreeSet<&str> = ads.iter().flatten().collect();
        assert_eq!(distinct_ads.len(), 1000);
        assert_ne!(Campaigns::new(9).campaign_id(0), Campaigns::new(10).campaign_id(0), "ids follow the seed");
    }

    #[test]
    fn ids_are_lowercase_uuids() {
        let id = uuid(5, 1, 0);
        let groups: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(groups, [8, 4, 4, 4, 12], "{id}");
        assert!(id.chars().all(|c| c == '-' || c.is_ascii_digit() || ('a'..='f').contains(&c)), "{id}");
    }
}
