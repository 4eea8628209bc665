//! The Yahoo Streaming Benchmark generator: a pure function of `(seed, partition, event index)`
//! in the JSON layout of the original generator. The ground truth its results are checked
//! against is counted from the same function by `sleet_workloads::ysb_check`.

use std::ops::Range;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use sleet_exec::RawRecords;
use sleet_monotask::EventWait;
use sleet_plan::YsbSourceSpec;

pub const CAMPAIGNS: usize = 100;
pub const ADS_PER_CAMPAIGN: usize = 10;
pub const WINDOW_MS: i64 = 10_000;
const USERS: u32 = 100;
const PAGES: u32 = 100;
const ADS: u32 = (CAMPAIGNS * ADS_PER_CAMPAIGN) as u32;
/// An oversized record is padded past the ysb plan's 4 KiB decoder limit.
const OVERSIZED_PADDING_BYTES: usize = 8 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadKind {
    /// Not valid JSON.
    Malformed,
    /// Valid JSON, but `event_time` is not an integer.
    WrongType,
    /// Valid JSON over the decoder's size limit.
    Oversized,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YsbEvent {
    pub user: u32,
    pub page: u32,
    pub ad: u32,
    pub ad_type: AdType,
    pub event_type: EventType,
    pub event_time_ms: i64,
    pub bad: Option<BadKind>,
}

/// The events' fields as the ysb plan decodes them; `event_time` is ms since the epoch.
pub fn event_schema() -> sleet_plan::Schema {
    use sleet_plan::{DataType, Field};
    let utf8 = |name: &str| Field::new(name, DataType::Utf8);
    sleet_plan::Schema::new(vec![
        utf8("user_id"),
        utf8("page_id"),
        utf8("ad_id"),
        utf8("ad_type"),
        utf8("event_type"),
        Field::new("event_time", DataType::Int64),
        utf8("ip_address"),
    ])
}

/// splitmix64's finalizer: a fast, well-mixed hash for deterministic pseudo-random values.
pub(crate) fn mix(mut value: u64) -> u64 {
    value = value.wrapping_add(0x9e37_79b9_7f4a_7c15);
    value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    value ^ (value >> 31)
}

fn uniform(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// Events per second of `partition`: the total rate split as evenly as integers allow.
pub fn partition_rate(spec: &YsbSourceSpec, partition: u32) -> u64 {
    let partitions = spec.partitions.max(1) as u64;
    spec.rate_per_s / partitions + u64::from((partition as u64) < spec.rate_per_s % partitions)
}

/// Event `k` of a partition is scheduled at `floor(k * 1000 / rate)` ms, so the events in
/// `[start, end)` are exactly `k ∈ [ceil(start * rate / 1000), ceil(end * rate / 1000))`.
pub fn event_range(spec: &YsbSourceSpec, partition: u32, start_ms: i64, end_ms: i64) -> Range<u64> {
    let rate = partition_rate(spec, partition) as u128;
    let first = |ms: i64| -> u64 { ((ms.max(0) as u128 * rate).div_ceil(1000)) as u64 };
    // An empty or reversed interval is the empty range at its start, so ranges of adjacent
    // intervals always meet.
    let start = first(start_ms);
    start..first(end_ms).max(start)
}

pub fn event(spec: &YsbSourceSpec, partition: u32, k: u64) -> YsbEvent {
    let rate = partition_rate(spec, partition).max(1) as u128;
    let base = mix(spec.seed ^ mix(partition as u64 ^ mix(k)));
    let second = mix(base);
    let bad = (uniform(second) < spec.bad_fraction).then(|| match mix(second) % 3 {
        0 => BadKind::Malformed,
        1 => BadKind::WrongType,
        _ => BadKind::Oversized,
    });
    YsbEvent {
        user: (base % USERS as u64) as u32,
        page: ((base >> 8) % PAGES as u64) as u32,
        ad: ((base >> 16) % ADS as u64) as u32,
        ad_type: AdType::ALL[((base >> 32) % 5) as usize],
        event_type: EventType::ALL[((base >> 40) % 3) as usize],
        event_time_ms: (k as u128 * 1000 / rate) as i64,
        bad,
    }
}

fn uuid(seed: u64, domain: u64, index: u64) -> String {
    let high = mix(seed ^ mix(domain << 32 | index));
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
            ads: (0..ADS as u64).map(|index| uuid(seed, 2, index)).collect(),
        }
    }

    pub fn ad_id(&self, ad: u32) -> &str {
        &self.ads[ad as usize]
    }

    pub fn campaign_of(&self, ad: u32) -> u32 {
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

/// Writes one partition's events as JSON records. Ids are formatted once, up front, so a
/// record is a handful of copies and one integer formatting.
pub struct YsbGenerator {
    spec: YsbSourceSpec,
    partition: u32,
    users: Vec<String>,
    pages: Vec<String>,
    campaigns: Campaigns,
}

impl YsbGenerator {
    pub fn new(spec: &YsbSourceSpec, partition: u32) -> Self {
        YsbGenerator {
            spec: spec.clone(),
            partition,
            users: (0..USERS as u64).map(|index| uuid(spec.seed, 3, index)).collect(),
            pages: (0..PAGES as u64).map(|index| uuid(spec.seed, 4, index)).collect(),
            campaigns: Campaigns::new(spec.seed),
        }
    }

    /// Appends every event of this partition scheduled in `[start_ms, end_ms)`; returns how many.
    /// Adds their wait for `end_ms`, the batch's close, to `out.event_wait`: the event times
    /// are at hand here, while the engine would have to decode every record to learn them.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        let range = event_range(&self.spec, self.partition, start_ms, end_ms);
        let count = range.end - range.start;
        out.data.reserve(count as usize * 260);
        out.offsets.reserve(count as usize);
        let mut time_sum_ms = 0i64;
        for k in range {
            let event = event(&self.spec, self.partition, k);
            time_sum_ms = time_sum_ms.wrapping_add(event.event_time_ms);
            self.write_event(&event, k, &mut out.data);
            out.finish_record();
        }
        let wait = EventWait::from_time_sum(end_ms, count, time_sum_ms);
        out.event_wait = Some(out.event_wait.map_or(wait, |before| before.merge(wait)));
        count
    }

    /// Whether this partition hands out rows instead of JSON (`YsbSourceSpec::pre_decoded`).
    pub fn pre_decoded(&self) -> bool {
        self.spec.pre_decoded
    }

    /// This partition's events scheduled in `[start_ms, end_ms)` as rows of `event_schema()`,
    /// the columns holding what the JSON records spell: the input of a job whose events are
    /// stored decoded. A bad event has no decoded form and is left out.
    pub fn generate_decoded(&self, start_ms: i64, end_ms: i64) -> RecordBatch {
        let range = event_range(&self.spec, self.partition, start_ms, end_ms);
        let count = (range.end - range.start) as usize;
        let text = |bytes_per_value: usize| StringBuilder::with_capacity(count, count * bytes_per_value);
        let (mut users, mut pages, mut ads) = (text(36), text(36), text(36));
        let (mut ad_types, mut event_types, mut addresses) = (text(16), text(8), text(7));
        let mut times = Int64Builder::with_capacity(count);
        for k in range {
            let event = event(&self.spec, self.partition, k);
            if event.bad.is_some() {
                continue;
            }
            users.append_value(&self.users[event.user as usize]);
            pages.append_value(&self.pages[event.page as usize]);
            ads.append_value(self.campaigns.ad_id(event.ad));
            ad_types.append_value(event.ad_type.as_str());
            event_types.append_value(event.event_type.as_str());
            times.append_value(event.event_time_ms);
            addresses.append_value("1.2.3.4");
        }
        let columns: Vec<ArrayRef> = vec![
            Arc::new(users.finish()),
            Arc::new(pages.finish()),
            Arc::new(ads.finish()),
            Arc::new(ad_types.finish()),
            Arc::new(event_types.finish()),
            Arc::new(times.finish()),
            Arc::new(addresses.finish()),
        ];
        let fields: Vec<Field> = event_schema()
            .fields
            .iter()
            .map(|field| Field::new(&field.name, sleet_exec::types::to_arrow_type(field.data_type), field.nullable))
            .collect();
        RecordBatch::try_new(Arc::new(Schema::new(fields)), columns).expect("the columns follow event_schema()")
    }

    fn write_event(&self, event: &YsbEvent, k: u64, out: &mut Vec<u8>) {
        let record_start = out.len();
        out.extend_from_slice(b"{\"user_id\": \"");
        out.extend_from_slice(self.users[event.user as usize].as_bytes());
        out.extend_from_slice(b"\", \"page_id\": \"");
        out.extend_from_slice(self.pages[event.page as usize].as_bytes());
        out.extend_from_slice(b"\", \"ad_id\": \"");
        out.extend_from_slice(self.campaigns.ad_id(event.ad).as_bytes());
        out.extend_from_slice(b"\", \"ad_type\": \"");
        out.extend_from_slice(event.ad_type.as_str().as_bytes());
        out.extend_from_slice(b"\", \"event_type\": \"");
        out.extend_from_slice(event.event_type.as_str().as_bytes());
        out.extend_from_slice(b"\", \"event_time\": \"");
        if event.bad == Some(BadKind::WrongType) {
            out.extend_from_slice(b"soon");
        } else {
            write_decimal(event.event_time_ms as u64, out);
        }
        out.extend_from_slice(b"\", \"ip_address\": \"1.2.3.4\"");
        if event.bad == Some(BadKind::Oversized) {
            out.extend_from_slice(b", \"padding\": \"");
            out.resize(out.len() + OVERSIZED_PADDING_BYTES, b'x');
            out.push(b'"');
        }
        out.push(b'}');
        if event.bad == Some(BadKind::Malformed) {
            // Cut the record short at a point that depends on the event, so the decoder meets
            // truncation at every position over a run, never a valid object.
            let length = out.len() - record_start;
            let keep = 1 + (mix(k ^ 0xdead) as usize % (length - 2));
            out.truncate(record_start + keep);
        }
    }
}

/// `value` in decimal; the generators' hot loops avoid `core::fmt`, which costs several
/// times more per number.
pub(crate) fn write_decimal(mut value: u64, out: &mut Vec<u8>) {
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

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn spec(rate_per_s: u64, partitions: u32, bad_fraction: f64) -> YsbSourceSpec {
        YsbSourceSpec { seed: 42, rate_per_s, partitions, bad_fraction, pre_decoded: false }
    }

    proptest! {
        #[test]
        fn ranges_partition_the_events_exactly(rate in 1u64..5_000_000, partitions in 1u32..9, start in 0i64..10_000_000_000_000, a in 0i64..5_000, b in 0i64..5_000) {
            let spec = spec(rate, partitions, 0.0);
            let (middle, end) = (start + a.min(b), start + a.max(b));
            for partition in 0..partitions {
                let left = event_range(&spec, partition, start, middle);
                let right = event_range(&spec, partition, middle, end);
                prop_assert_eq!(left.end, right.start, "adjacent ranges meet");
                let whole = event_range(&spec, partition, start, end);
                prop_assert_eq!(whole, left.start..right.end);
                let range = event_range(&spec, partition, start, end);
                if !range.is_empty() {
                    prop_assert!(event(&spec, partition, range.start).event_time_ms >= start);
                    prop_assert!(event(&spec, partition, range.end - 1).event_time_ms < end);
                }
            }
        }
    }

    #[test]
    fn partition_rates_sum_to_the_total_and_one_second_holds_one_second_of_events() {
        let spec = spec(1_000_003, 4, 0.0);
        let rates: Vec<u64> = (0..4).map(|p| partition_rate(&spec, p)).collect();
        assert_eq!(rates.iter().sum::<u64>(), 1_000_003);
        for (partition, rate) in rates.iter().enumerate() {
            let range = event_range(&spec, partition as u32, 1_700_000_000_000, 1_700_000_001_000);
            assert_eq!(range.end - range.start, *rate);
        }
    }

    fn generate(spec: &YsbSourceSpec, partition: u32, start: i64, end: i64) -> RawRecords {
        let mut out = RawRecords::new();
        let count = YsbGenerator::new(spec, partition).generate(start, end, &mut out);
        assert_eq!(count as usize, out.len());
        out
    }

    #[test]
    fn decoded_rows_are_what_the_decoder_makes_of_the_json() {
        // With bad records too: the decoder turns them into dead letters, the decoded
        // generator leaves them out, and the good rows agree column for column.
        for bad_fraction in [0.0, 0.05] {
            let spec = spec(5_000, 2, bad_fraction);
            let start = 1_700_000_000_000;
            let schema = event_schema();
            let names: Vec<String> = schema.fields.iter().map(|field| field.name.clone()).collect();
            let decoder = sleet_exec::json::JsonDecoder::new(&schema, &names, 4096).expect("decoder");
            let records = generate(&spec, 1, start, start + 2_000);
            let decoded = decoder.decode(&records);
            let rows = YsbGenerator::new(&spec, 1).generate_decoded(start, start + 2_000);
            // 2 500 events/s on this partition for 2 s.
            assert_eq!(records.len(), 5_000);
            assert_eq!(rows.num_rows(), 5_000 - decoded.dead_letters.len(), "bad fraction {bad_fraction}");
            assert_eq!(rows, decoded.batch, "bad fraction {bad_fraction}");
        }
    }

    #[test]
    fn a_stage_given_decoded_rows_computes_what_it_computes_from_json() {
        use sleet_exec::pipeline::{StageInputData, StagePipeline};
        use sleet_plan::{col, lit, plan_stages, PlanBuilder, SinkSpec, SourceSpec};
        // ysb's map side up to the lookup: the planner pushes a projection of three of the
        // seven fields into the decoder, so decoded rows must be cut down the same way.
        let spec = spec(5_000, 1, 0.0);
        let plan = PlanBuilder::source("ysb", SourceSpec::Ysb(spec.clone()))
            .decode_json(event_schema())
            .filter(col("event_type").eq(lit("view")))
            .project([col("ad_id"), col("event_time")])
            .sink(SinkSpec::Discard)
            .build()
            .expect("plan");
        let stage = plan_stages(&plan, true).expect("stages").stages.remove(0);
        let start = 1_700_000_000_000;
        let run = |input: StageInputData| {
            let mut pipeline = StagePipeline::new(&stage, &|_| unreachable!("no lookup")).expect("pipeline");
            let output = pipeline.run(&input, 0).expect("runs");
            (output.records_in, output.rows_out, output.sink_rows.expect("sink rows"))
        };
        let from_json = run(StageInputData::Raw(generate(&spec, 0, start, start + 1_000)));
        let rows = YsbGenerator::new(&spec, 0).generate_decoded(start, start + 1_000);
        assert_eq!(from_json.0, 5_000);
        assert_eq!(run(StageInputData::Decoded(rows)), from_json);
        // Rows that lack a column the decoder outputs are refused, naming it.
        let mut pipeline = StagePipeline::new(&stage, &|_| unreachable!("no lookup")).expect("pipeline");
        let rows = YsbGenerator::new(&spec, 0).generate_decoded(start, start + 1_000);
        let error = pipeline.run(&StageInputData::Decoded(rows.project(&[0, 1]).expect("two columns")), 0);
        let message = error.err().expect("refused").to_string();
        assert!(message.contains("no column `ad_id`"), "{message}");
    }

    #[test]
    fn generated_json_matches_the_event_function() {
        let spec = spec(5_000, 2, 0.05);
        let campaigns = Campaigns::new(spec.seed);
        let start = 1_700_000_000_000;
        let records = generate(&spec, 1, start, start + 2_000);
        let range = event_range(&spec, 1, start, start + 2_000);
        let (mut malformed, mut wrong_type, mut oversized) = (0, 0, 0);
        for (record, k) in records.iter().zip(range) {
            let expected = event(&spec, 1, k);
            let parsed: Result<serde_json::Value, _> = serde_json::from_slice(record);
            match expected.bad {
                Some(BadKind::Malformed) => {
                    assert!(parsed.is_err(), "a malformed record must not parse");
                    malformed += 1;
                }
                Some(BadKind::WrongType) => {
                    let value = parsed.expect("a wrong-type record is valid JSON");
                    assert!(value["event_time"].as_str().expect("string").parse::<i64>().is_err());
                    wrong_type += 1;
                }
                Some(BadKind::Oversized) => {
                    assert!(record.len() > 4096 && parsed.is_ok());
                    oversized += 1;
                }
                None => {
                    let value = parsed.expect("a good record is valid JSON");
                    assert_eq!(value["ad_id"], campaigns.ad_id(expected.ad));
                    assert_eq!(value["event_type"], expected.event_type.as_str());
                    assert_eq!(value["ad_type"], expected.ad_type.as_str());
                    assert_eq!(value["event_time"], expected.event_time_ms.to_string());
                    assert!(record.len() < 300, "about 250 bytes");
                    assert!(
                        std::str::from_utf8(record).expect("utf8").contains("\", \"page_id\": \""),
                        "original layout"
                    );
                }
            }
        }
        assert!(malformed > 0 && wrong_type > 0 && oversized > 0);
    }

    #[test]
    fn the_generator_measures_its_events_wait_for_the_batch_close() {
        // 1 000 events/s: one event per ms, at 100..=109 ms for the batch [100, 110), which
        // wait 10, 9, …, 1 ms for its close: 55 ms over 10 events.
        let spec = spec(1_000, 1, 0.0);
        let records = generate(&spec, 0, 100, 110);
        assert_eq!(records.event_wait, Some(EventWait { events: 10, wait_sum_ms: 55 }));
        assert_eq!(records.event_wait.and_then(|wait| wait.mean_us()), Some(5_500));
        let empty = generate(&spec, 0, 100, 100);
        assert_eq!(empty.event_wait.and_then(|wait| wait.mean_us()), None, "an empty batch measures nothing");
    }

    #[test]
    fn bad_fraction_is_about_right() {
        let spec = spec(100_000, 1, 0.01);
        let bad = event_range(&spec, 0, 0, 1_000).filter(|k| event(&spec, 0, *k).bad.is_some()).count();
        assert!((700..=1300).contains(&bad), "{bad} bad of 100000 at 1%");
        let views =
            event_range(&spec, 0, 0, 1_000).filter(|k| event(&spec, 0, *k).event_type == EventType::View).count();
        assert!((31_000..=35_700).contains(&views), "about a third are views: {views}");
    }

    #[test]
    fn campaigns_table_maps_ten_ads_to_each_campaign() {
        let table = Campaigns::new(9).to_record_batch();
        assert_eq!(table.num_rows(), 1000);
        let campaigns = table.column(1).as_any().downcast_ref::<StringArray>().expect("utf8");
        let distinct: std::collections::BTreeSet<&str> = campaigns.iter().flatten().collect();
        assert_eq!(distinct.len(), 100);
        assert_ne!(Campaigns::new(9).campaign_id(0), Campaigns::new(10).campaign_id(0), "ids follow the seed");
    }
}
