//! The home-gateway generator: gateways reporting their traffic about once a minute, some
//! readings delivered late, in one of three client encodings; a pure function of
//! `(spec, partition, delivery time range)`. The ground truth its results are checked against
//! is summed from the same functions by `sleet_workloads::gateway_check`.
//!
//! Every value is computed from its gateway and reading index alone, so any time range is
//! made without making the past:
//!
//! ```text
//!  gateway g ── profile(seed, g): phase, tx/rx base rate, weekday factors, counter offsets
//!  reading i ── hash(profile, i): date_i = first + i·interval ± jitter, delay (late share)
//!  traffic   ── unwrapped_i = offset + U(date_i) − U(date_0) + noise_i − noise_0
//!               U(t) = ∫ rate, a per-weekday constant, in closed form over whole weeks
//!               bytes_i = unwrapped_i − unwrapped_{i−1}  (0 for the first reading)
//!  encodings ── cumulative: unwrapped_i mod 2^32 · counter: bytes_i · rate: bytes_i / Δt
//! ```
//!
//! The noise is below a tenth of the traffic of the shortest possible interval at the lowest
//! rate, so `bytes_i` is never negative; rates are bounded so that it stays below 2^32.

use sleet_exec::RawRecords;
use sleet_kafka::partitioner::murmur2_partition;
use sleet_monotask::EventWait;
use sleet_plan::{GatewayEncoding, GatewayFormat, GatewaySourceSpec};

use crate::ysb::{mix, write_decimal};

/// A UTC day: a reading counts towards day `date_ms div DAY_MS`.
pub const DAY_MS: i64 = 86_400_000;
/// The 32-bit interface counter of the cumulative encoding wraps here.
pub const COUNTER_MODULUS: u64 = 1 << 32;
/// Base rates in bytes per second, drawn log-uniformly per gateway and direction. With the
/// weekday factor (at most 1.7) and the longest interval (below 10 minutes, as the report
/// interval is at most 5), the fastest gateway's traffic over one interval stays below 2^32.
const TX_RATE_RANGE: (u64, u64) = (1_000, 1_000_000);
const RX_RATE_RANGE: (u64, u64) = (4_000, 4_000_000);
/// A gateway's rate on each weekday, in percent of its base rate.
const WEEKDAY_PERCENT_RANGE: (u64, u64) = (30, 170);
/// `U(t)` is kept in bytes · ms / s · percent, divided once at the end.
const INTEGRAL_DIVISOR: i128 = 1_000 * 100;

const DOMAIN_PROFILE: u64 = 0x6761_7465_7761_7931;
const DOMAIN_LATE: u64 = 0x11;
const DOMAIN_DELAY: u64 = 0x12;
const DOMAIN_TX_NOISE: u64 = 0x13;
const DOMAIN_RX_NOISE: u64 = 0x14;

/// `gw-000042`: zero-padded, so up to a million gateways string order is numeric order.
pub fn gateway_id(gateway: u32) -> String {
    format!("gw-{gateway:06}")
}

/// The partition Kafka's default partitioner gives the gateway's id, which keys its records.
pub fn gateway_partition(spec: &GatewaySourceSpec, gateway: u32) -> u32 {
    murmur2_partition(gateway_id(gateway).as_bytes(), spec.partitions)
}

pub fn day_of(date_ms: i64) -> i64 {
    date_ms.div_euclid(DAY_MS)
}

/// One direction of a gateway's traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Direction {
    base_bytes_per_s: u64,
    /// The counter's value at the gateway's first reading, so counters wrap early in a run.
    counter_offset: u32,
    /// Noise is drawn from `0..noise_limit` bytes per reading.
    noise_limit: u64,
    noise_domain: u64,
}

/// What stays the same over a gateway's life, drawn from `(seed, gateway)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    hash: u64,
    /// Reading `i` is due at `first_due_ms + i · report_interval_ms`, then jittered; at least
    /// a jitter after the start, so no reading predates it.
    first_due_ms: i64,
    weekday_percent: [u64; 7],
    tx: Direction,
    rx: Direction,
}

fn uniform(hash: u64) -> f64 {
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

fn log_uniform(hash: u64, (low, high): (u64, u64)) -> u64 {
    let value = (low as f64) * ((high as f64) / (low as f64)).powf(uniform(hash));
    (value as u64).clamp(low, high)
}

pub fn profile(spec: &GatewaySourceSpec, gateway: u32) -> Profile {
    let hash = mix(mix(spec.seed ^ DOMAIN_PROFILE) ^ u64::from(gateway));
    let draw = |salt: u64| mix(hash ^ salt);
    let interval = spec.report_interval_ms.max(1);
    let phase = (draw(1) % interval as u64) as i64;
    let mut weekday_percent = [0; 7];
    for (day, percent) in weekday_percent.iter_mut().enumerate() {
        let (low, high) = WEEKDAY_PERCENT_RANGE;
        *percent = low + draw(10 + day as u64) % (high - low + 1);
    }
    // The shortest gap between two readings, and the least traffic it carries at the lowest
    // weekday rate; noise stays below a tenth of that (`bytes_i` ≥ 0, see the module docs).
    let gap_min_ms = (interval - 2 * spec.jitter_ms).max(1) as u64;
    let direction = |base_bytes_per_s: u64, offset_salt: u64, noise_domain: u64| Direction {
        base_bytes_per_s,
        counter_offset: (draw(offset_salt) >> 32) as u32,
        noise_limit: (base_bytes_per_s * gap_min_ms / 10_000).max(1),
        noise_domain,
    };
    Profile {
        hash,
        first_due_ms: spec.start_ms + spec.jitter_ms + phase,
        weekday_percent,
        tx: direction(log_uniform(draw(2), TX_RATE_RANGE), 4, DOMAIN_TX_NOISE),
        rx: direction(log_uniform(draw(3), RX_RATE_RANGE), 5, DOMAIN_RX_NOISE),
    }
}

/// One direction's traffic as of one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Traffic {
    /// Bytes since the gateway's previous reading; 0 for its first.
    pub bytes: u64,
    /// The 32-bit counter of bytes since the gateway started.
    pub counter: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reading {
    pub gateway: u32,
    /// The gateway's `index`-th reading (from 0).
    pub index: u64,
    /// Event time, simulated ms since the epoch.
    pub date_ms: i64,
    /// When it reaches the transport: `date_ms`, or later by up to `max_delay_ms` if late.
    pub delivery_ms: i64,
    /// The event time of the gateway's reading before, none for its first.
    pub previous_date_ms: Option<i64>,
    pub tx: Traffic,
    pub rx: Traffic,
}

impl Reading {
    /// `(ipTx, ipRx)` as the client encoding writes them.
    pub fn encoded(&self, encoding: GatewayEncoding) -> (f64, f64) {
        let value = |traffic: Traffic| match (encoding, self.previous_date_ms) {
            (GatewayEncoding::Cumulative, _) => f64::from(traffic.counter),
            (GatewayEncoding::Counter, _) => traffic.bytes as f64,
            (GatewayEncoding::Rate, None) => 0.0,
            (GatewayEncoding::Rate, Some(previous)) => {
                traffic.bytes as f64 * 1_000.0 / (self.date_ms - previous) as f64
            }
        };
        (value(self.tx), value(self.rx))
    }
}

fn reading_hash(profile: &Profile, index: u64) -> u64 {
    mix(profile.hash ^ mix(index))
}

/// The event time of reading `index` (whether the gateway still reports then or not).
pub fn date_ms(spec: &GatewaySourceSpec, profile: &Profile, index: u64) -> i64 {
    let jitter_span = 2 * spec.jitter_ms as u64 + 1;
    let jitter = (reading_hash(profile, index) % jitter_span) as i64 - spec.jitter_ms;
    profile.first_due_ms + index as i64 * spec.report_interval_ms + jitter
}

/// How long reading `index` takes to arrive: 0, or for a `late_fraction` share of readings
/// 1..=`max_delay_ms`.
pub fn delay_ms(spec: &GatewaySourceSpec, profile: &Profile, index: u64) -> i64 {
    let hash = reading_hash(profile, index);
    if spec.max_delay_ms <= 0 || uniform(mix(hash ^ DOMAIN_LATE)) >= spec.late_fraction {
        return 0;
    }
    1 + (mix(hash ^ DOMAIN_DELAY) % spec.max_delay_ms as u64) as i64
}

/// Whether the gateway takes reading `index` at all (it stops at `stop_ms`).
pub fn exists(spec: &GatewaySourceSpec, profile: &Profile, index: u64) -> bool {
    spec.stop_ms.is_none_or(|stop| date_ms(spec, profile, index) < stop)
}

/// `∫₀ᵗ rate` in bytes · ms / s · percent: whole weeks at once, then the days of the last.
fn rate_integral(profile: &Profile, direction: &Direction, t_ms: i64) -> i128 {
    let day = t_ms.div_euclid(DAY_MS) as i128;
    let into_day = t_ms.rem_euclid(DAY_MS) as i128;
    let (weeks, weekday) = (day.div_euclid(7), day.rem_euclid(7) as usize);
    let percent = &profile.weekday_percent;
    let week: i128 = percent.iter().map(|percent| *percent as i128).sum();
    let days_before: i128 = percent[..weekday].iter().map(|percent| *percent as i128).sum();
    let today = percent[weekday] as i128;
    direction.base_bytes_per_s as i128 * ((weeks * week + days_before) * DAY_MS as i128 + today * into_day)
}

/// Bytes the direction has carried by reading `index`, from an origin shared by all its
/// readings (not wrapped, may be negative; only differences mean anything).
fn carried(spec: &GatewaySourceSpec, profile: &Profile, direction: &Direction, index: u64) -> i128 {
    let noise = mix(reading_hash(profile, index) ^ direction.noise_domain) % direction.noise_limit;
    rate_integral(profile, direction, date_ms(spec, profile, index)) / INTEGRAL_DIVISOR + noise as i128
}

fn traffic(spec: &GatewaySourceSpec, profile: &Profile, direction: &Direction, index: u64) -> Traffic {
    let now = carried(spec, profile, direction, index);
    let since_start = now - carried(spec, profile, direction, 0);
    let bytes = if index == 0 { 0 } else { now - carried(spec, profile, direction, index - 1) };
    assert!(
        (0..COUNTER_MODULUS as i128).contains(&bytes) && since_start >= 0,
        "gateway traffic out of bounds: {bytes} bytes over one interval"
    );
    let counter = (direction.counter_offset as i128 + since_start).rem_euclid(COUNTER_MODULUS as i128);
    Traffic { bytes: bytes as u64, counter: counter as u32 }
}

/// Reading `index` of `gateway` in full.
pub fn reading(spec: &GatewaySourceSpec, profile: &Profile, gateway: u32, index: u64) -> Reading {
    let date_ms = date_ms(spec, profile, index);
    Reading {
        gateway,
        index,
        date_ms,
        delivery_ms: date_ms + delay_ms(spec, profile, index),
        previous_date_ms: index.checked_sub(1).map(|previous| self::date_ms(spec, profile, previous)),
        tx: traffic(spec, profile, &profile.tx, index),
        rx: traffic(spec, profile, &profile.rx, index),
    }
}

/// Calls `visit(index, delivery_ms)` for every reading of the gateway delivered in
/// `[start_ms, end_ms)` of simulated time, in index order. Only the indices whose due time
/// (± jitter, + the longest delay) can reach into the range are looked at.
pub fn for_each_delivered(
    spec: &GatewaySourceSpec,
    profile: &Profile,
    start_ms: i64,
    end_ms: i64,
    visit: &mut dyn FnMut(u64, i64),
) {
    if start_ms >= end_ms {
        return;
    }
    let interval = spec.report_interval_ms as i128;
    let (first_due, jitter) = (profile.first_due_ms as i128, spec.jitter_ms as i128);
    let earliest = start_ms as i128 - jitter - spec.max_delay_ms.max(0) as i128 - first_due;
    let first = (earliest.div_euclid(interval) + i128::from(earliest.rem_euclid(interval) != 0)).max(0);
    let mut past_last = (end_ms as i128 - 1 + jitter - first_due).div_euclid(interval) + 1;
    if let Some(stop) = spec.stop_ms {
        past_last = past_last.min((stop as i128 - 1 + jitter - first_due).div_euclid(interval) + 1);
    }
    for index in first..past_last {
        let index = index as u64;
        if !exists(spec, profile, index) {
            continue;
        }
        let delivery = date_ms(spec, profile, index) + delay_ms(spec, profile, index);
        if (start_ms..end_ms).contains(&delivery) {
            visit(index, delivery);
        }
    }
}

struct Member {
    gateway: u32,
    id: String,
    profile: Profile,
}

/// One partition's gateways, with their ids and profiles made once.
pub struct GatewayGenerator {
    spec: GatewaySourceSpec,
    members: Vec<Member>,
}

impl GatewayGenerator {
    pub fn new(spec: &GatewaySourceSpec, partition: u32) -> Self {
        let members = (0..spec.gateways)
            .map(|gateway| (gateway, gateway_id(gateway)))
            .filter(|(_, id)| murmur2_partition(id.as_bytes(), spec.partitions.max(1)) == partition)
            .map(|(gateway, id)| Member { gateway, id, profile: profile(spec, gateway) })
            .collect();
        GatewayGenerator { spec: spec.clone(), members }
    }

    pub fn gateways(&self) -> impl Iterator<Item = u32> + '_ {
        self.members.iter().map(|member| member.gateway)
    }

    /// This partition's readings delivered in `[start_ms, end_ms)` of simulated time, in
    /// delivery order, ties by gateway then index: a range split anywhere gives the same
    /// readings in the same order.
    pub fn readings(&self, start_ms: i64, end_ms: i64) -> Vec<(usize, Reading)> {
        let mut due = Vec::new();
        for (position, member) in self.members.iter().enumerate() {
            for_each_delivered(&self.spec, &member.profile, start_ms, end_ms, &mut |index, delivery| {
                due.push((delivery, member.gateway, index, position));
            });
        }
        due.sort_unstable();
        due.into_iter()
            .map(|(_, gateway, index, position)| {
                (position, reading(&self.spec, &self.members[position].profile, gateway, index))
            })
            .collect()
    }

    /// Appends the records delivered in `[start_ms, end_ms)` of simulated time; with `keys`,
    /// each record's gateway id too. Returns how many.
    pub fn generate_simulated(
        &self,
        start_ms: i64,
        end_ms: i64,
        out: &mut RawRecords,
        mut keys: Option<&mut Vec<String>>,
    ) -> u64 {
        let readings = self.readings(start_ms, end_ms);
        for (position, reading) in &readings {
            let id = &self.members[*position].id;
            self.write(reading, id, &mut out.data);
            out.finish_record();
            if let Some(keys) = keys.as_deref_mut() {
                keys.push(id.clone());
            }
        }
        readings.len() as u64
    }

    /// A batch of wall-clock range `[start_ms, end_ms)`: the readings delivered in its
    /// simulated range. Adds their wait for `end_ms`, the batch's close, to `out.event_wait`,
    /// measured from their delivery (when a live transport would have handed them over).
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        let readings = self.readings(self.spec.simulated_ms(start_ms), self.spec.simulated_ms(end_ms));
        let mut delivery_sum_ms = 0i64;
        for (position, reading) in &readings {
            delivery_sum_ms = delivery_sum_ms.wrapping_add(self.spec.wall_ms(reading.delivery_ms));
            self.write(reading, &self.members[*position].id, &mut out.data);
            out.finish_record();
        }
        let count = readings.len() as u64;
        let wait = EventWait::from_time_sum(end_ms, count, delivery_sum_ms);
        out.event_wait = Some(out.event_wait.map_or(wait, |before| before.merge(wait)));
        count
    }

    fn write(&self, reading: &Reading, id: &str, out: &mut Vec<u8>) {
        match self.spec.format {
            GatewayFormat::Json => write_json(reading, id, self.spec.encoding, out),
            GatewayFormat::Avro => write_avro(reading, id, self.spec.encoding, out),
        }
    }
}

/// `{"gateway_id":"gw-000042","date":1700000000000,"ipTx":1234,"ipRx":56.25}`. Counter and
/// cumulative values are whole numbers below 2^53, written without a fraction; a rate is
/// written as the shortest decimal that reads back as the same f64.
pub fn write_json(reading: &Reading, id: &str, encoding: GatewayEncoding, out: &mut Vec<u8>) {
    use std::io::Write;
    let (tx, rx) = reading.encoded(encoding);
    out.extend_from_slice(b"{\"gateway_id\":\"");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"\",\"date\":");
    write_decimal(reading.date_ms as u64, out);
    for (name, value) in [(&b",\"ipTx\":"[..], tx), (&b",\"ipRx\":"[..], rx)] {
        out.extend_from_slice(name);
        if encoding == GatewayEncoding::Rate {
            write!(out, "{value}").expect("writing to a Vec cannot fail");
        } else {
            write_decimal(value as u64, out);
        }
    }
    out.push(b'}');
}

/// `schemas/gateway.avsc`, parsed once.
pub fn avro_schema() -> &'static sleet_avro::RecordSchema {
    static SCHEMA: std::sync::OnceLock<sleet_avro::RecordSchema> = std::sync::OnceLock::new();
    SCHEMA.get_or_init(|| {
        sleet_avro::RecordSchema::parse(sleet_avro::GATEWAY_SCHEMA).expect("the shipped gateway schema parses")
    })
}

/// The reading as one single-object Avro record of `schemas/gateway.avsc`: the values
/// `write_json` writes, the counters as doubles (exact below 2^53, as in JSON).
pub fn write_avro(reading: &Reading, id: &str, encoding: GatewayEncoding, out: &mut Vec<u8>) {
    use sleet_avro::Value;
    let (tx, rx) = reading.encoded(encoding);
    let values = [Value::String(id), Value::Long(reading.date_ms), Value::Double(tx), Value::Double(rx)];
    avro_schema().encode_single_object(&values, out).expect("a reading has the gateway schema's four fields");
}

/// The fields a gateway record decodes to.
pub fn record_schema() -> sleet_plan::Schema {
    use sleet_plan::{DataType, Field, Schema};
    Schema::new(vec![
        Field::new("gateway_id", DataType::Utf8),
        Field::new("date", DataType::Int64),
        Field::new("ipTx", DataType::Float64),
        Field::new("ipRx", DataType::Float64),
    ])
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use proptest::prelude::*;

    use super::*;

    const START_MS: i64 = 1_700_000_000_000;

    fn spec(gateways: u32, partitions: u32, late_fraction: f64, max_delay_ms: i64) -> GatewaySourceSpec {
        GatewaySourceSpec {
            seed: 7,
            gateways,
            partitions,
            encoding: GatewayEncoding::Cumulative,
            format: GatewayFormat::Json,
            start_ms: START_MS,
            stop_ms: None,
            speedup: 1,
            report_interval_ms: 60_000,
            jitter_ms: 20_000,
            late_fraction,
            max_delay_ms,
        }
    }

    fn records(generator: &GatewayGenerator, start_ms: i64, end_ms: i64) -> (Vec<Vec<u8>>, Vec<String>) {
        let (mut out, mut keys) = (RawRecords::new(), Vec::new());
        let count = generator.generate_simulated(start_ms, end_ms, &mut out, Some(&mut keys));
        assert_eq!(count as usize, out.len());
        (out.iter().map(<[u8]>::to_vec).collect(), keys)
    }

    proptest! {
        #[test]
        fn a_range_split_anywhere_gives_the_records_of_the_whole(
            seed in 0u64..1_000,
            gateways in 1u32..40,
            late in 0.0f64..0.5,
            max_delay_ms in 0i64..300_000,
            offset in 0i64..3_600_000,
            a in 0i64..900_000,
            b in 0i64..900_000,
        ) {
            let spec = GatewaySourceSpec { seed, stop_ms: Some(START_MS + 2_000_000), ..spec(gateways, 2, late, max_delay_ms) };
            let start = START_MS + offset;
            let (middle, end) = (start + a.min(b), start + a.max(b));
            for partition in 0..2 {
                let generator = GatewayGenerator::new(&spec, partition);
                let (mut left, mut left_keys) = records(&generator, start, middle);
                let (right, right_keys) = records(&generator, middle, end);
                left.extend(right);
                left_keys.extend(right_keys);
                prop_assert_eq!((left, left_keys), records(&generator, start, end));
            }
        }

        #[test]
        fn readings_arrive_within_max_delay_of_the_gateways_newest(
            seed in 0u64..1_000,
            late in 0.0f64..1.0,
            max_delay_ms in 0i64..600_000,
        ) {
            let spec = GatewaySourceSpec { seed, ..spec(30, 1, late, max_delay_ms) };
            let generator = GatewayGenerator::new(&spec, 0);
            let mut newest: BTreeMap<u32, i64> = BTreeMap::new();
            let mut previous_delivery = i64::MIN;
            for (_, reading) in generator.readings(START_MS, START_MS + 3_600_000) {
                prop_assert!(reading.delivery_ms >= previous_delivery, "in delivery order");
                previous_delivery = reading.delivery_ms;
                let delay = reading.delivery_ms - reading.date_ms;
                prop_assert!((0..=max_delay_ms).contains(&delay), "delay {}", delay);
                let newest = newest.entry(reading.gateway).or_insert(i64::MIN);
                prop_assert!(reading.date_ms >= newest.saturating_sub(max_delay_ms));
                *newest = (*newest).max(reading.date_ms);
            }
        }
    }

    #[test]
    fn gateways_go_to_the_partition_murmur2_gives_their_id_once_each() {
        let spec = spec(500, 3, 0.0, 0);
        let mut seen = BTreeSet::new();
        for partition in 0..3 {
            let generator = GatewayGenerator::new(&spec, partition);
            for gateway in generator.gateways() {
                assert_eq!(murmur2_partition(gateway_id(gateway).as_bytes(), 3), partition);
                assert!(seen.insert(gateway), "gateway {gateway} in two partitions");
            }
            let (_, keys) = records(&generator, START_MS, START_MS + 600_000);
            assert!(keys.iter().all(|key| murmur2_partition(key.as_bytes(), 3) == partition));
        }
        assert_eq!(seen.len(), 500);
    }

    #[test]
    fn every_reading_before_the_stop_is_delivered_once_by_the_drain() {
        let stop = START_MS + 3 * 3_600_000;
        let spec = GatewaySourceSpec { stop_ms: Some(stop), ..spec(50, 2, 0.1, 120_000) };
        let drained = spec.drained_ms().expect("stops");
        let mut delivered = BTreeSet::new();
        for partition in 0..2 {
            let generator = GatewayGenerator::new(&spec, partition);
            // Ranges of uneven length, some empty.
            let mut from = START_MS - 1_000;
            let mut step = 1;
            while from < drained + 1_000 {
                for (_, reading) in generator.readings(from, from + step) {
                    assert!(delivered.insert((reading.gateway, reading.index)), "{reading:?} twice");
                }
                from += step;
                step = (step * 7 + 3) % 400_000;
            }
        }
        // Independently: reading i exists while its date is before the stop.
        let mut expected = BTreeSet::new();
        let mut late = 0;
        for gateway in 0..50 {
            let profile = profile(&spec, gateway);
            let mut previous = None;
            for index in 0.. {
                let reading = reading(&spec, &profile, gateway, index);
                if reading.date_ms >= stop {
                    break;
                }
                assert!(reading.date_ms >= START_MS, "no reading before the start");
                if let Some(previous) = previous {
                    let gap = reading.date_ms - previous;
                    assert!((20_000..=100_000).contains(&gap), "gap {gap}");
                }
                previous = Some(reading.date_ms);
                late += usize::from(reading.delivery_ms > reading.date_ms);
                expected.insert((gateway, index));
            }
        }
        assert_eq!(delivered, expected);
        let share = late as f64 / expected.len() as f64;
        assert!((0.06..0.14).contains(&share), "late share {share} at 10%");
    }

    #[test]
    fn a_gateways_first_reading_carries_no_traffic_and_counters_wrap() {
        let spec = spec(200, 1, 0.0, 0);
        let mut wrapped = 0;
        for gateway in 0..200 {
            let profile = profile(&spec, gateway);
            let first = reading(&spec, &profile, gateway, 0);
            assert_eq!((first.tx.bytes, first.rx.bytes), (0, 0));
            assert_eq!(first.previous_date_ms, None);
            assert_eq!(first.encoded(GatewayEncoding::Counter), (0.0, 0.0));
            assert_eq!(first.encoded(GatewayEncoding::Rate), (0.0, 0.0));
            // A day of readings: the counter moves by each interval's bytes, modulo 2^32.
            let mut previous = first;
            for index in 1..1_440 {
                let next = reading(&spec, &profile, gateway, index);
                for (before, after) in [(previous.tx, next.tx), (previous.rx, next.rx)] {
                    assert_eq!(after.counter, before.counter.wrapping_add(after.bytes as u32));
                    wrapped += usize::from(after.counter < before.counter);
                }
                previous = next;
            }
        }
        assert!(wrapped > 100, "counters wrapped {wrapped} times in a day of 200 gateways");
    }

    #[test]
    fn records_decode_to_the_encoded_values() {
        let schema = record_schema();
        let names: Vec<String> = schema.fields.iter().map(|field| field.name.clone()).collect();
        let decoder = sleet_exec::json::JsonDecoder::new(&schema, &names, 1024).expect("decoder");
        for encoding in GatewayEncoding::ALL {
            let spec = GatewaySourceSpec { encoding, ..spec(20, 1, 0.05, 120_000) };
            let generator = GatewayGenerator::new(&spec, 0);
            let mut out = RawRecords::new();
            generator.generate_simulated(START_MS, START_MS + 3_600_000, &mut out, None);
            let decoded = decoder.decode(&out);
            assert!(decoded.dead_letters.is_empty(), "{encoding:?}: {:?}", decoded.dead_letters.first());
            let readings = generator.readings(START_MS, START_MS + 3_600_000);
            assert_eq!(decoded.batch.num_rows(), readings.len());
            let column = |index: usize| decoded.batch.column(index).clone();
            let ids = column(0);
            let ids = ids.as_any().downcast_ref::<arrow_array::StringArray>().expect("utf8");
            let dates = column(1);
            let dates = dates.as_any().downcast_ref::<arrow_array::Int64Array>().expect("int64");
            let (tx, rx) = (column(2), column(3));
            let tx = tx.as_any().downcast_ref::<arrow_array::Float64Array>().expect("f64");
            let rx = rx.as_any().downcast_ref::<arrow_array::Float64Array>().expect("f64");
            for (row, (_, reading)) in readings.iter().enumerate() {
                assert_eq!(ids.value(row), gateway_id(reading.gateway));
                assert_eq!(dates.value(row), reading.date_ms);
                assert_eq!((tx.value(row), rx.value(row)), reading.encoded(encoding), "{encoding:?} row {row}");
            }
        }
    }

    #[test]
    fn a_wall_clock_batch_holds_speedup_times_its_length_of_simulated_time() {
        let spec = GatewaySourceSpec { speedup: 60, ..spec(100, 1, 0.02, 120_000) };
        let generator = GatewayGenerator::new(&spec, 0);
        let mut by_wall = RawRecords::new();
        for batch in 0..100 {
            generator.generate(START_MS + batch * 100, START_MS + (batch + 1) * 100, &mut by_wall);
        }
        let mut by_simulated = RawRecords::new();
        generator.generate_simulated(START_MS, START_MS + 10_000 * 60, &mut by_simulated, None);
        assert_eq!(by_wall.data, by_simulated.data);
        // About 100 gateways × 10 simulated minutes, less the first reading's phase and the
        // late ones not yet delivered.
        assert!((800..=1_000).contains(&by_wall.len()), "{}", by_wall.len());
        let wait = by_wall.event_wait.expect("measured");
        assert_eq!(wait.events, by_wall.len() as u64);
    }
}
