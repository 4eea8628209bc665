//! The Nexmark generator: persons, auctions and bids of an online auction, drawn by the
//! `nexmark` crate (RisingWave's port of the Beam/Flink generator, the events published Nexmark
//! figures use); a pure function of `(spec, partition, event-time range)`. The ground truth its
//! queries are checked against is computed from the same events by
//! `sleet_workloads::nexmark_check`.
//!
//! ```text
//!  event n ── kind:  n mod 50 → 0 person, 1..=3 auction, 4..=49 bid   (the 1 : 3 : 46 mix)
//!          ── time:  start_ms + n · 1000 / rate_per_s, rounded by the crate (non-decreasing in n)
//!          ── data:  the crate's event n (its random draws are seeded by n alone)
//!  partition p of P: events p, p + P, p + 2P, … (the crate's offset / step split)
//!  batch [a, b):     events n with a ≤ time(n) < b, found by bisection on time(n)
//! ```
//!
//! A kind left out of `tables` is skipped without being drawn; the others keep the numbers,
//! ids and times they have in the full stream.

use std::ops::Range;

use nexmark::config::{NexmarkConfig, RateShape};
pub use nexmark::event::{Auction, Bid, Event, Person};
use nexmark::EventGenerator;
use serde::Serialize;
use sleet_exec::RawRecords;
use sleet_monotask::EventWait;
use sleet_plan::{NexmarkSourceSpec, NexmarkTable};

/// The stream ends here at the latest: even at 1 event/s the crate's time of this event stays
/// below `u64::MAX` ms after any start, where its arithmetic would overflow.
pub const EVENT_NUMBER_MAX: u64 = 1 << 53;

/// The crate's configuration for the spec: one timeline (`num_event_generators` 1, which
/// sleet's partitions split by offset and step), a constant rate, events in order.
pub fn generator_config(spec: &NexmarkSourceSpec) -> NexmarkConfig {
    let rate = usize::try_from(spec.rate_per_s).unwrap_or(usize::MAX);
    NexmarkConfig {
        active_people: spec.active_people as usize,
        in_flight_auctions: spec.in_flight_auctions as usize,
        hot_seller_ratio: spec.hot_seller_ratio as usize,
        hot_auction_ratio: spec.hot_auction_ratio as usize,
        hot_bidder_ratio: spec.hot_bidder_ratio as usize,
        out_of_order_group_size: 1,
        first_event_id: 0,
        first_event_number: 0,
        base_time: spec.start_ms.max(0) as u64,
        num_event_generators: 1,
        rate_shape: RateShape::Square,
        first_rate: rate,
        next_rate: rate,
        us_per_unit: 1_000_000,
        ..NexmarkConfig::default()
    }
}

/// The kind of event `event_number`, from the model's proportions, without drawing it.
pub fn table_of(config: &NexmarkConfig, event_number: u64) -> NexmarkTable {
    let denominator = (config.person_proportion + config.auction_proportion + config.bid_proportion) as u64;
    let rest = event_number % denominator;
    if rest < config.person_proportion as u64 {
        NexmarkTable::Person
    } else if rest < (config.person_proportion + config.auction_proportion) as u64 {
        NexmarkTable::Auction
    } else {
        NexmarkTable::Bid
    }
}

pub fn table_of_event(event: &Event) -> NexmarkTable {
    match event {
        Event::Person(_) => NexmarkTable::Person,
        Event::Auction(_) => NexmarkTable::Auction,
        Event::Bid(_) => NexmarkTable::Bid,
    }
}

pub fn date_time_ms(event: &Event) -> i64 {
    event.timestamp() as i64
}

/// The crate's generator moved to any event number: its offset is set by value, so a cursor
/// holds it and moves it on each seek.
struct Cursor(Option<EventGenerator>);

impl Cursor {
    fn new(config: &NexmarkConfig) -> Cursor {
        Cursor(Some(EventGenerator::new(config.clone())))
    }

    fn seek(&mut self, event_number: u64) -> &mut EventGenerator {
        let generator = self.0.take().expect("a cursor always holds its generator");
        self.0.insert(generator.with_offset(event_number))
    }

    fn time_ms(&mut self, event_number: u64) -> i64 {
        let time_ms = self.seek(event_number.min(EVENT_NUMBER_MAX)).timestamp();
        i64::try_from(time_ms).unwrap_or(i64::MAX)
    }

    fn draw(&mut self, event_number: u64) -> Event {
        self.seek(event_number).next().expect("the generator never ends")
    }

    /// The first event number whose time is at least `time_ms`. Times never decrease with
    /// the event number (each step of the crate's float arithmetic is monotone), so bisection
    /// finds it.
    fn first_at(&mut self, spec: &NexmarkSourceSpec, time_ms: i64) -> u64 {
        if time_ms <= spec.start_ms {
            return 0;
        }
        let elapsed_ms = (time_ms - spec.start_ms) as u128;
        let estimate = (elapsed_ms * u128::from(spec.rate_per_s) / 1_000).min(u128::from(EVENT_NUMBER_MAX)) as u64;
        let (mut low, mut high) = (0u64, (estimate + 1).min(EVENT_NUMBER_MAX));
        while self.time_ms(high) < time_ms {
            if high == EVENT_NUMBER_MAX {
                return EVENT_NUMBER_MAX;
            }
            low = high;
            high = high.saturating_mul(2).min(EVENT_NUMBER_MAX);
        }
        // Invariant: time(low) < time_ms unless low is 0, and time(high) ≥ time_ms.
        while high - low > 1 {
            let middle = low + (high - low) / 2;
            if self.time_ms(middle) >= time_ms {
                high = middle;
            } else {
                low = middle;
            }
        }
        if self.time_ms(low) >= time_ms {
            low
        } else {
            high
        }
    }
}

/// The numbers of the stream's events (all partitions, all kinds) timed in
/// `[start_ms, end_ms)`, within the first `max_events`.
pub fn event_range(spec: &NexmarkSourceSpec, start_ms: i64, end_ms: i64) -> Range<u64> {
    event_range_with(&mut Cursor::new(&generator_config(spec)), spec, start_ms, end_ms)
}

fn event_range_with(cursor: &mut Cursor, spec: &NexmarkSourceSpec, start_ms: i64, end_ms: i64) -> Range<u64> {
    let limit = spec.max_events.unwrap_or(EVENT_NUMBER_MAX).min(EVENT_NUMBER_MAX);
    let start = cursor.first_at(spec, start_ms).min(limit);
    // An empty or reversed interval is the empty range at its start, so the ranges of
    // adjacent intervals always meet.
    start..cursor.first_at(spec, end_ms).min(limit).max(start)
}

/// The event time of event `event_number` (whether the stream reaches it or not).
pub fn event_time_ms(spec: &NexmarkSourceSpec, event_number: u64) -> i64 {
    Cursor::new(&generator_config(spec)).time_ms(event_number)
}

/// How many events of `events` are of a kind in `tables`, without drawing them.
pub fn emitted_count(spec: &NexmarkSourceSpec, events: Range<u64>) -> u64 {
    let config = generator_config(spec);
    let denominator = (config.person_proportion + config.auction_proportion + config.bid_proportion) as u64;
    let per_cycle: u64 = (0..denominator).filter(|n| spec.emits(table_of(&config, *n))).count() as u64;
    let whole = |end: u64| {
        let partial = (0..end % denominator).filter(|n| spec.emits(table_of(&config, *n))).count() as u64;
        end / denominator * per_cycle + partial
    };
    whole(events.end) - whole(events.start.min(events.end))
}

/// One record as JSON: a flat object tagged by `event_type`, fields under Nexmark's names in
/// snake case, times as ms since the epoch. Kinds share a name only where its type is the
/// same, so one schema, the union of all fields (`record_schema`), decodes every record.
#[derive(Serialize)]
#[serde(tag = "event_type", rename_all = "snake_case")]
enum Record<'a> {
    Person {
        id: i64,
        name: &'a str,
        email_address: &'a str,
        credit_card: &'a str,
        city: &'a str,
        state: &'a str,
        date_time: i64,
        extra: &'a str,
    },
    Auction {
        id: i64,
        item_name: &'a str,
        description: &'a str,
        initial_bid: i64,
        reserve: i64,
        date_time: i64,
        expires: i64,
        seller: i64,
        category: i64,
        extra: &'a str,
    },
    Bid {
        auction: i64,
        bidder: i64,
        price: i64,
        channel: &'a str,
        url: &'a str,
        date_time: i64,
        extra: &'a str,
    },
}

impl<'a> From<&'a Event> for Record<'a> {
    fn from(event: &'a Event) -> Record<'a> {
        match event {
            Event::Person(person) => Record::Person {
                id: person.id as i64,
                name: &person.name,
                email_address: &person.email_address,
                credit_card: &person.credit_card,
                city: &person.city,
                state: &person.state,
                date_time: person.date_time as i64,
                extra: &person.extra,
            },
            Event::Auction(auction) => Record::Auction {
                id: auction.id as i64,
                item_name: &auction.item_name,
                description: &auction.description,
                initial_bid: auction.initial_bid as i64,
                reserve: auction.reserve as i64,
                date_time: auction.date_time as i64,
                expires: auction.expires as i64,
                seller: auction.seller as i64,
                category: auction.category as i64,
                extra: &auction.extra,
            },
            Event::Bid(bid) => Record::Bid {
                auction: bid.auction as i64,
                bidder: bid.bidder as i64,
                price: bid.price as i64,
                channel: &bid.channel,
                url: &bid.url,
                date_time: bid.date_time as i64,
                extra: &bid.extra,
            },
        }
    }
}

pub fn write_json(event: &Event, out: &mut Vec<u8>) {
    match event {
        // Bids are 46 events in 50, and the only kind q0–q2 read: written by hand, byte for
        // byte as serde_json writes `Record::Bid`, where serde_json scanned each string a
        // byte at a time for characters to escape (a tenth of a worker's time in q0).
        Event::Bid(bid) => write_bid(bid, out),
        _ => serde_json::to_writer(out, &Record::from(event)).expect("writing JSON to memory cannot fail"),
    }
}

fn write_bid(bid: &Bid, out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"event_type":"bid","auction":"#);
    write_number(out, bid.auction as i64);
    out.extend_from_slice(br#","bidder":"#);
    write_number(out, bid.bidder as i64);
    out.extend_from_slice(br#","price":"#);
    write_number(out, bid.price as i64);
    out.extend_from_slice(br#","channel":"#);
    write_text(out, &bid.channel);
    out.extend_from_slice(br#","url":"#);
    write_text(out, &bid.url);
    out.extend_from_slice(br#","date_time":"#);
    write_number(out, bid.date_time as i64);
    out.extend_from_slice(br#","extra":"#);
    write_text(out, &bid.extra);
    out.push(b'}');
}

fn write_number(out: &mut Vec<u8>, number: i64) {
    serde_json::to_writer(out, &number).expect("writing JSON to memory cannot fail");
}

/// A JSON string: as it is when nothing in it needs escaping (checked over the whole text
/// without branching, which the compiler vectorizes), else through serde_json.
fn write_text(out: &mut Vec<u8>, text: &str) {
    let escapes = text.bytes().fold(false, |escapes, byte| escapes | (byte < 0x20) | (byte == b'"') | (byte == b'\\'));
    if escapes {
        serde_json::to_writer(out, text).expect("writing JSON to memory cannot fail");
    } else {
        out.reserve(text.len() + 2);
        out.push(b'"');
        out.extend_from_slice(text.as_bytes());
        out.push(b'"');
    }
}

/// The fields every record decodes to: `event_type`, then the union of the three kinds'
/// fields, each nullable since a record has only its own kind's.
pub fn record_schema() -> sleet_plan::Schema {
    use sleet_plan::{DataType, Field, Schema};
    let text = [
        "name",
        "email_address",
        "credit_card",
        "city",
        "state",
        "extra",
        "item_name",
        "description",
        "channel",
        "url",
    ];
    let numbers =
        ["id", "date_time", "initial_bid", "reserve", "expires", "seller", "category", "auction", "bidder", "price"];
    let mut fields = vec![Field::new("event_type", DataType::Utf8)];
    fields.extend(text.iter().map(|name| Field::new(*name, DataType::Utf8).nullable()));
    fields.extend(numbers.iter().map(|name| Field::new(*name, DataType::Int64).nullable()));
    Schema::new(fields)
}

/// One partition of the stream.
pub struct NexmarkGenerator {
    spec: NexmarkSourceSpec,
    config: NexmarkConfig,
    partition: u32,
}

impl NexmarkGenerator {
    pub fn new(spec: &NexmarkSourceSpec, partition: u32) -> Self {
        assert!(partition < spec.partitions.max(1), "partition {partition} of {}", spec.partitions);
        NexmarkGenerator { spec: spec.clone(), config: generator_config(spec), partition }
    }

    /// Calls `visit(event number, event)` for this partition's events timed in
    /// `[start_ms, end_ms)` whose kind is in `tables`, in event-number order.
    pub fn for_each_event(&self, start_ms: i64, end_ms: i64, visit: &mut dyn FnMut(u64, Event)) {
        let mut cursor = Cursor::new(&self.config);
        let events = event_range_with(&mut cursor, &self.spec, start_ms, end_ms);
        let step = u64::from(self.spec.partitions.max(1));
        let behind = (u64::from(self.partition) + step - events.start % step) % step;
        let mut event_number = events.start + behind;
        while event_number < events.end {
            if self.spec.emits(table_of(&self.config, event_number)) {
                visit(event_number, cursor.draw(event_number));
            }
            event_number += step;
        }
    }

    pub fn events(&self, start_ms: i64, end_ms: i64) -> Vec<(u64, Event)> {
        let mut events = Vec::new();
        self.for_each_event(start_ms, end_ms, &mut |event_number, event| events.push((event_number, event)));
        events
    }

    /// Appends this partition's records timed in `[start_ms, end_ms)`; returns how many. Adds
    /// their wait for `end_ms`, the batch's close, to `out.event_wait`.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        let (mut count, mut time_sum_ms) = (0u64, 0i64);
        self.for_each_event(start_ms, end_ms, &mut |_, event| {
            time_sum_ms = time_sum_ms.wrapping_add(date_time_ms(&event));
            write_json(&event, &mut out.data);
            out.finish_record();
            count += 1;
        });
        let wait = EventWait::from_time_sum(end_ms, count, time_sum_ms);
        out.event_wait = Some(out.event_wait.map_or(wait, |before| before.merge(wait)));
        count
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use arrow_array::Array;
    use proptest::prelude::*;

    use super::*;

    const START_MS: i64 = 1_700_000_000_000;

    fn spec(partitions: u32, rate_per_s: u64) -> NexmarkSourceSpec {
        NexmarkSourceSpec { partitions, rate_per_s, ..NexmarkSourceSpec::new(START_MS) }
    }

    fn records(generator: &NexmarkGenerator, start_ms: i64, end_ms: i64) -> Vec<Vec<u8>> {
        let mut out = RawRecords::new();
        let count = generator.generate(start_ms, end_ms, &mut out);
        assert_eq!(count as usize, out.len());
        out.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn bids_are_written_as_serde_json_writes_them() {
        let generator = NexmarkGenerator::new(&spec(1, 50_000), 0);
        let mut events = Vec::new();
        generator.for_each_event(START_MS, START_MS + 1_000, &mut |_, event| events.push(event));
        let awkward = Bid {
            auction: 7,
            bidder: 9,
            price: 12,
            channel: "quote \" and backslash \\".into(),
            url: "tab\tnewline\n\u{1}é€".into(),
            date_time: 1_700_000_000_000,
            extra: String::new(),
        };
        events.push(Event::Bid(awkward));
        let bids = events.iter().filter(|event| matches!(event, Event::Bid(_))).count();
        assert!(bids > 40_000, "{bids} bids");
        for event in &events {
            let mut by_hand = Vec::new();
            write_json(event, &mut by_hand);
            let by_serde = serde_json::to_vec(&Record::from(event)).expect("JSON");
            assert_eq!(String::from_utf8_lossy(&by_hand), String::from_utf8_lossy(&by_serde));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        #[test]
        fn a_range_split_anywhere_gives_the_records_of_the_whole(
            partitions in 1u32..4,
            rate_per_s in 1u64..20_000,
            offset in -1_000i64..5_000,
            a in 0i64..1_500,
            b in 0i64..1_500,
        ) {
            let spec = spec(partitions, rate_per_s);
            let start = START_MS + offset;
            let (middle, end) = (start + a.min(b), start + a.max(b));
            for partition in 0..partitions {
                let generator = NexmarkGenerator::new(&spec, partition);
                let mut split = records(&generator, start, middle);
                split.extend(records(&generator, middle, end));
                prop_assert_eq!(split, records(&generator, start, end));
            }
        }

        #[test]
        fn the_partitions_together_hold_the_single_partition_stream(
            partitions in 2u32..5,
            rate_per_s in 1u64..20_000,
            length_ms in 0i64..1_500,
        ) {
            let whole = NexmarkGenerator::new(&spec(1, rate_per_s), 0).events(START_MS, START_MS + length_ms);
            let mut union = Vec::new();
            for partition in 0..partitions {
                let generator = NexmarkGenerator::new(&spec(partitions, rate_per_s), partition);
                for (event_number, event) in generator.events(START_MS, START_MS + length_ms) {
                    prop_assert_eq!(event_number % u64::from(partitions), u64::from(partition));
                    union.push((event_number, event));
                }
            }
            union.sort_by_key(|(event_number, _)| *event_number);
            prop_assert_eq!(union, whole);
        }
    }

    #[test]
    fn a_batch_holds_exactly_the_events_timed_in_it() {
        let spec = spec(1, 3_000);
        let generator = NexmarkGenerator::new(&spec, 0);
        let (start, end) = (START_MS - 500, START_MS + 2_000);
        let numbers: Vec<u64> = generator.events(start, end).iter().map(|(event_number, _)| *event_number).collect();
        let timed_in: Vec<u64> = (0..7_000).filter(|n| (start..end).contains(&event_time_ms(&spec, *n))).collect();
        assert_eq!(numbers, timed_in);
        assert_eq!(numbers.first(), Some(&0), "none before the start, the first at it");
        assert!(numbers.len().abs_diff(6_000) <= 2, "3 events per ms: {}", numbers.len());
        for (event_number, event) in generator.events(START_MS + 10, START_MS + 11) {
            assert_eq!(date_time_ms(&event), START_MS + 10);
            assert_eq!(date_time_ms(&event), event_time_ms(&spec, event_number));
        }
    }

    #[test]
    fn the_event_mix_over_fifty_thousand_events_is_one_to_three_to_forty_six() {
        let spec = NexmarkSourceSpec { max_events: Some(50_000), ..spec(1, 1_000_000) };
        let events = NexmarkGenerator::new(&spec, 0).events(START_MS, START_MS + 3_600_000);
        assert_eq!(events.len(), 50_000);
        let count = |table| events.iter().filter(|(_, event)| table_of_event(event) == table).count();
        assert_eq!(
            (count(NexmarkTable::Person), count(NexmarkTable::Auction), count(NexmarkTable::Bid)),
            (1_000, 3_000, 46_000)
        );
        let config = generator_config(&spec);
        assert!(events.iter().all(|(event_number, event)| table_of(&config, *event_number) == table_of_event(event)));
        assert_eq!(emitted_count(&spec, 0..50_000), 50_000);
    }

    #[test]
    fn tables_left_out_are_drawn_but_not_emitted() {
        let full = NexmarkGenerator::new(&spec(2, 10_000), 1).events(START_MS, START_MS + 1_000);
        for tables in [vec![NexmarkTable::Bid], vec![NexmarkTable::Person, NexmarkTable::Auction]] {
            let spec = NexmarkSourceSpec { tables: tables.clone(), ..spec(2, 10_000) };
            let chosen = NexmarkGenerator::new(&spec, 1).events(START_MS, START_MS + 1_000);
            let expected: Vec<(u64, Event)> =
                full.iter().filter(|(_, event)| tables.contains(&table_of_event(event))).cloned().collect();
            assert_eq!(chosen, expected);
            let events = event_range(&spec, START_MS, START_MS + 1_000);
            assert_eq!(emitted_count(&spec, events.clone()), {
                let partition_0 = NexmarkGenerator::new(&spec, 0).events(START_MS, START_MS + 1_000).len();
                (partition_0 + chosen.len()) as u64
            });
        }
    }

    /// Ids follow the model: persons and auctions numbered in order from 1000, each auction
    /// by a person who exists or is at most the model's lead (10) ahead, each bid on an
    /// auction at most 10 ahead of the newest and no more than the in-flight count behind,
    /// and the hot seller, auction and bidder exist.
    #[test]
    fn ids_and_times_follow_the_model() {
        let spec = spec(1, 50_000);
        let events = NexmarkGenerator::new(&spec, 0).events(START_MS, START_MS + 2_000);
        assert!(events.len().abs_diff(100_000) <= 50, "{} events in 2 s at 50 000/s", events.len());
        let (mut persons, mut auctions) = (BTreeSet::new(), BTreeSet::new());
        let (mut newest_person, mut newest_auction) = (999usize, 999usize);
        let mut previous_time = START_MS;
        let (mut hot_auction_bids, mut bids) = (0, 0);
        for (_, event) in &events {
            assert!(date_time_ms(event) >= previous_time, "times never decrease");
            previous_time = date_time_ms(event);
            match event {
                Event::Person(person) => {
                    assert_eq!(person.id, newest_person + 1);
                    newest_person = person.id;
                    persons.insert(person.id);
                    assert!(["az", "ca", "id", "or", "wa", "wy"].contains(&person.state.as_str()));
                }
                Event::Auction(auction) => {
                    assert_eq!(auction.id, newest_auction + 1);
                    newest_auction = auction.id;
                    auctions.insert(auction.id);
                    assert!(auction.seller <= newest_person + 10, "seller {} ahead", auction.seller);
                    assert!((10..15).contains(&auction.category));
                    assert!(auction.expires > auction.date_time && auction.reserve >= auction.initial_bid);
                }
                Event::Bid(bid) => {
                    bids += 1;
                    assert!(bid.auction <= newest_auction + 10, "auction {} ahead", bid.auction);
                    assert!(bid.auction + 100 >= newest_auction, "auction {} behind", bid.auction);
                    assert!(bid.bidder <= newest_person + 10, "bidder {} ahead", bid.bidder);
                    assert!(bid.auction >= 1000 && bid.bidder >= 1000);
                    let hot = (newest_auction - 1000) / 100 * 100 + 1000;
                    if bid.auction == hot {
                        assert!(auctions.contains(&hot), "the hot auction exists");
                        hot_auction_bids += 1;
                    }
                }
            }
        }
        // Half the bids go to the hot auction by rule, a few more by chance.
        let share = hot_auction_bids as f64 / bids as f64;
        assert!((0.45..0.6).contains(&share), "hot auction share {share}");
        assert_eq!(persons.len(), events.len().div_ceil(50));
    }

    #[test]
    fn records_decode_with_the_union_schema() {
        let schema = record_schema();
        let names: Vec<String> = schema.fields.iter().map(|field| field.name.clone()).collect();
        let decoder = sleet_exec::json::JsonDecoder::new(&schema, &names, 4096).expect("decoder");
        let generator = NexmarkGenerator::new(&spec(1, 10_000), 0);
        let mut out = RawRecords::new();
        generator.generate(START_MS, START_MS + 500, &mut out);
        let decoded = decoder.decode(&out);
        assert!(decoded.dead_letters.is_empty(), "{:?}", decoded.dead_letters.first());
        let events = generator.events(START_MS, START_MS + 500);
        assert_eq!(decoded.batch.num_rows(), events.len());
        let column = |name: &str| decoded.batch.column(schema.index_of(name).expect("a field")).clone();
        let (kinds, times, prices, names) =
            (column("event_type"), column("date_time"), column("price"), column("name"));
        let kinds = kinds.as_any().downcast_ref::<arrow_array::StringArray>().expect("utf8");
        let times = times.as_any().downcast_ref::<arrow_array::Int64Array>().expect("int64");
        let prices = prices.as_any().downcast_ref::<arrow_array::Int64Array>().expect("int64");
        let names = names.as_any().downcast_ref::<arrow_array::StringArray>().expect("utf8");
        for (row, (_, event)) in events.iter().enumerate() {
            assert_eq!(kinds.value(row), table_of_event(event).as_str());
            assert_eq!(times.value(row), date_time_ms(event));
            match event {
                Event::Bid(bid) => assert_eq!(prices.value(row), bid.price as i64),
                Event::Person(person) => assert_eq!(names.value(row), person.name),
                Event::Auction(_) => assert!(prices.is_null(row) && names.is_null(row)),
            }
        }
    }
}
