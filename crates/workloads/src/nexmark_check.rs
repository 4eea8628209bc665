//! The exact results of Nexmark queries q0–q3, q5, q7 and q8 over the generator's events,
//! computed here in plain Rust with no sleet operator, for a job's output to be compared with.
//!
//! Definitions follow the published Nexmark queries (Beam's and Flink's nexmark suites), with
//! the choices their SQL leaves open made explicit on each function. Windows are aligned to
//! the epoch, as SQL's `TUMBLE` and `HOP` are: a 10 s window starts at a multiple of 10 s.
//! Results are over the events given: a window cut by the ends of the range counts only the
//! events inside it, so a caller comparing with a job compares the windows both saw whole.

use std::collections::{BTreeMap, BTreeSet};

use sleet_connectors::nexmark::NexmarkGenerator;
pub use sleet_connectors::nexmark::{Auction, Bid, Event, Person};
use sleet_plan::{NexmarkSourceSpec, NexmarkTable};

/// The size of q3's, q5's, q7's and q8's windows.
pub const WINDOW_MS: i64 = 10_000;
/// How far apart q5's hopping windows start.
pub const HOP_SLIDE_MS: i64 = 2_000;
/// q1's dollar-to-euro rate.
pub const DOLLAR_TO_EURO: f64 = 0.908;
/// q3's states, as the generator writes them (lower case; the published query spells them
/// `'OR'`, `'ID'`, `'CA'`, the Java generator's case).
pub const Q3_STATES: [&str; 3] = ["or", "id", "ca"];
pub const Q3_CATEGORY: i64 = 10;
pub const Q2_AUCTION_MODULUS: i64 = 123;

/// Every event of the stream (all kinds, whatever the spec's `tables`) timed in
/// `[start_ms, end_ms)` and among its first `max_events`, in event-number order: the single
/// sequence every partitioning of the spec splits.
pub fn events(spec: &NexmarkSourceSpec, start_ms: i64, end_ms: i64) -> Vec<Event> {
    let whole = NexmarkSourceSpec { partitions: 1, tables: NexmarkTable::ALL.to_vec(), ..spec.clone() };
    NexmarkGenerator::new(&whole, 0).events(start_ms, end_ms).into_iter().map(|(_, event)| event).collect()
}

fn window_start_ms(time_ms: i64, size_ms: i64) -> i64 {
    time_ms - time_ms.rem_euclid(size_ms)
}

fn bids(events: &[Event]) -> impl Iterator<Item = &Bid> {
    events.iter().filter_map(|event| match event {
        Event::Bid(bid) => Some(bid),
        _ => None,
    })
}

fn persons(events: &[Event]) -> impl Iterator<Item = &Person> {
    events.iter().filter_map(|event| match event {
        Event::Person(person) => Some(person),
        _ => None,
    })
}

fn auctions(events: &[Event]) -> impl Iterator<Item = &Auction> {
    events.iter().filter_map(|event| match event {
        Event::Auction(auction) => Some(auction),
        _ => None,
    })
}

/// A bid as its record has it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct BidRow {
    pub auction: i64,
    pub bidder: i64,
    pub price: i64,
    pub channel: String,
    pub url: String,
    pub date_time: i64,
    pub extra: String,
}

impl From<&Bid> for BidRow {
    fn from(bid: &Bid) -> BidRow {
        BidRow {
            auction: bid.auction as i64,
            bidder: bid.bidder as i64,
            price: bid.price as i64,
            channel: bid.channel.clone(),
            url: bid.url.clone(),
            date_time: bid.date_time as i64,
            extra: bid.extra.clone(),
        }
    }
}

/// q0, pass-through: every bid with all its fields, `SELECT * FROM bid`.
pub fn q0(events: &[Event]) -> Vec<BidRow> {
    let mut rows: Vec<BidRow> = bids(events).map(BidRow::from).collect();
    rows.sort();
    rows
}

#[derive(Debug, Clone, PartialEq, PartialOrd)]
pub struct Q1Row {
    pub auction: i64,
    pub bidder: i64,
    /// `price as f64 * 0.908`, the one IEEE product (see `q1`).
    pub price: f64,
    pub date_time: i64,
    pub extra: String,
}

/// q1, currency conversion: `SELECT auction, bidder, 0.908 * price AS price, date_time, extra
/// FROM bid`. The price is kept float64, `price as f64 * 0.908` rounded once to the nearest
/// double: sleet has no decimal type, and any engine evaluating the expression in float64
/// gets exactly these bits (multiplication commutes in IEEE 754, and every price is below
/// 2^53, so converting it is exact). Flink's `0.908 * price` is DECIMAL, exactly
/// `price · 908 / 1000`; the float64 here differs from that by at most about an ulp, so a
/// comparison with a decimal engine's output needs a relative tolerance of 1e-15.
pub fn q1(events: &[Event]) -> Vec<Q1Row> {
    let mut rows: Vec<Q1Row> = bids(events)
        .map(|bid| Q1Row {
            auction: bid.auction as i64,
            bidder: bid.bidder as i64,
            price: bid.price as f64 * DOLLAR_TO_EURO,
            date_time: bid.date_time as i64,
            extra: bid.extra.clone(),
        })
        .collect();
    rows.sort_by(|a, b| a.partial_cmp(b).expect("prices are finite"));
    rows
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q2Row {
    pub auction: i64,
    pub price: i64,
}

/// q2, selection: `SELECT auction, price FROM bid WHERE auction % 123 = 0`.
pub fn q2(events: &[Event]) -> Vec<Q2Row> {
    let mut rows: Vec<Q2Row> = bids(events)
        .filter(|bid| bid.auction as i64 % Q2_AUCTION_MODULUS == 0)
        .map(|bid| Q2Row { auction: bid.auction as i64, price: bid.price as i64 })
        .collect();
    rows.sort();
    rows
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q3Row {
    pub name: String,
    pub city: String,
    pub state: String,
    pub auction_id: i64,
    pub window_start_ms: i64,
}

/// q3, local item suggestion, as a windowed join: persons in Oregon, Idaho or California
/// (`Q3_STATES`) joined with auctions of category 10 on `auction.seller = person.id`, both
/// timed in the same 10 s tumbling window; one row per (person, auction) pair. The published
/// q3 joins the whole history (an unbounded join); the window bounds the state a streaming
/// join keeps, and a sleet job computes it with window operators alone.
pub fn q3(events: &[Event]) -> Vec<Q3Row> {
    let mut sellers: BTreeMap<(i64, i64), &Person> = BTreeMap::new();
    for person in persons(events).filter(|person| Q3_STATES.contains(&person.state.as_str())) {
        let window = window_start_ms(person.date_time as i64, WINDOW_MS);
        sellers.insert((person.id as i64, window), person);
    }
    let mut rows: Vec<Q3Row> = auctions(events)
        .filter(|auction| auction.category as i64 == Q3_CATEGORY)
        .filter_map(|auction| {
            let window = window_start_ms(auction.date_time as i64, WINDOW_MS);
            let person = sellers.get(&(auction.seller as i64, window))?;
            Some(Q3Row {
                name: person.name.clone(),
                city: person.city.clone(),
                state: person.state.clone(),
                auction_id: auction.id as i64,
                window_start_ms: window,
            })
        })
        .collect();
    rows.sort();
    rows
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q5Row {
    pub window_start_ms: i64,
    pub auction: i64,
    pub bid_count: i64,
}

/// q5, hot items: per hopping window of 10 s starting every 2 s, the bids counted per
/// auction, and the auctions whose count is the window's largest (ties all kept). A bid at
/// `t` is in the five windows starting at the multiples of 2 s in `(t − 10 s, t]`; a window
/// with no bid has no row.
pub fn q5(events: &[Event]) -> Vec<Q5Row> {
    let mut counts: BTreeMap<(i64, i64), i64> = BTreeMap::new();
    for bid in bids(events) {
        let time_ms = bid.date_time as i64;
        let mut start = window_start_ms(time_ms, HOP_SLIDE_MS);
        while start > time_ms - WINDOW_MS {
            *counts.entry((start, bid.auction as i64)).or_default() += 1;
            start -= HOP_SLIDE_MS;
        }
    }
    let mut largest: BTreeMap<i64, i64> = BTreeMap::new();
    for ((window, _), count) in &counts {
        let most = largest.entry(*window).or_default();
        *most = (*most).max(*count);
    }
    let mut rows: Vec<Q5Row> = counts
        .into_iter()
        .filter(|((window, _), count)| largest[window] == *count)
        .map(|((window_start_ms, auction), bid_count)| Q5Row { window_start_ms, auction, bid_count })
        .collect();
    rows.sort();
    rows
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q7Row {
    pub window_start_ms: i64,
    pub auction: i64,
    pub price: i64,
    pub bidder: i64,
    pub date_time: i64,
    pub extra: String,
}

/// q7, highest bid: per 10 s tumbling window, the bids in it whose price is the window's
/// largest (ties all kept). Flink's SQL matches bids by `date_time BETWEEN end − 10 s AND
/// end`, which also admits a bid of the next window timed exactly at the end; here a bid
/// counts only for its own window.
pub fn q7(events: &[Event]) -> Vec<Q7Row> {
    let mut largest: BTreeMap<i64, i64> = BTreeMap::new();
    for bid in bids(events) {
        let most = largest.entry(window_start_ms(bid.date_time as i64, WINDOW_MS)).or_insert(i64::MIN);
        *most = (*most).max(bid.price as i64);
    }
    let mut rows: Vec<Q7Row> = bids(events)
        .filter_map(|bid| {
            let window = window_start_ms(bid.date_time as i64, WINDOW_MS);
            (largest[&window] == bid.price as i64).then(|| Q7Row {
                window_start_ms: window,
                auction: bid.auction as i64,
                price: bid.price as i64,
                bidder: bid.bidder as i64,
                date_time: bid.date_time as i64,
                extra: bid.extra.clone(),
            })
        })
        .collect();
    rows.sort();
    rows
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Q8Row {
    pub person_id: i64,
    pub name: String,
    pub window_start_ms: i64,
}

/// q8, monitor new users: the persons who opened an auction in the 10 s tumbling window they
/// joined in, `person.id = auction.seller`, both windows the same; one row per (person, name,
/// window) however many auctions, as the published query groups both sides by window first.
pub fn q8(events: &[Event]) -> Vec<Q8Row> {
    let sellers: BTreeSet<(i64, i64)> = auctions(events)
        .map(|auction| (auction.seller as i64, window_start_ms(auction.date_time as i64, WINDOW_MS)))
        .collect();
    let rows: BTreeSet<Q8Row> = persons(events)
        .filter_map(|person| {
            let window = window_start_ms(person.date_time as i64, WINDOW_MS);
            sellers.contains(&(person.id as i64, window)).then(|| Q8Row {
                person_id: person.id as i64,
                name: person.name.clone(),
                window_start_ms: window,
            })
        })
        .collect();
    rows.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: usize, state: &str, date_time: u64) -> Event {
        Event::Person(Person {
            id,
            name: format!("p{id}"),
            email_address: String::new(),
            credit_card: String::new(),
            city: "bend".into(),
            state: state.into(),
            date_time,
            extra: String::new(),
        })
    }

    fn auction(id: usize, seller: usize, category: usize, date_time: u64) -> Event {
        Event::Auction(Auction {
            id,
            item_name: String::new(),
            description: String::new(),
            initial_bid: 1,
            reserve: 2,
            date_time,
            expires: date_time + 1,
            seller,
            category,
            extra: String::new(),
        })
    }

    fn bid(auction: usize, price: usize, date_time: u64) -> Event {
        Event::Bid(Bid {
            auction,
            bidder: 7,
            price,
            channel: "c".into(),
            url: "u".into(),
            date_time,
            extra: String::new(),
        })
    }

    #[test]
    fn q0_to_q2_pass_convert_and_select_bids() {
        let events = [bid(246, 1_000, 5), person(1, "or", 6), bid(247, 3, 7), bid(0, 10, 8)];
        assert_eq!(
            q0(&events).iter().map(|row| (row.auction, row.price)).collect::<Vec<_>>(),
            [(0, 10), (246, 1_000), (247, 3)]
        );
        let converted: Vec<f64> = q1(&events).iter().map(|row| row.price).collect();
        assert_eq!(converted, [10.0 * 0.908, 1_000.0 * 0.908, 3.0 * 0.908]);
        assert!((converted[1] - 908.0).abs() < 1e-9);
        assert_eq!(q2(&events), [Q2Row { auction: 0, price: 10 }, Q2Row { auction: 246, price: 1_000 }]);
    }

    #[test]
    fn q3_joins_sellers_in_the_states_with_category_10_auctions_of_the_same_window() {
        let events = [
            person(1, "or", 10_001),
            person(2, "wa", 10_002),
            person(3, "ca", 19_999),
            auction(100, 1, 10, 15_000), // joins 1
            auction(101, 2, 10, 15_000), // wrong state
            auction(102, 1, 11, 15_000), // wrong category
            auction(103, 3, 10, 20_000), // next window
            auction(104, 3, 10, 19_999), // joins 3
            auction(105, 1, 10, 16_000), // joins 1 again
        ];
        let rows: Vec<(i64, i64)> = q3(&events).iter().map(|row| (row.auction_id, row.window_start_ms)).collect();
        assert_eq!(q3(&events)[0].name, "p1");
        assert_eq!(rows, [(100, 10_000), (105, 10_000), (104, 10_000)]);
    }

    #[test]
    fn q5_keeps_every_auction_tied_for_the_most_bids_per_hopping_window() {
        // A bid at 1 s lies in the windows starting at -8 s … 0 s; at 3 s, -6 s … 2 s; at 11 s,
        // 2 s … 10 s.
        let events = [bid(1, 5, 1_000), bid(1, 5, 3_000), bid(2, 5, 3_000), bid(2, 5, 11_000), bid(3, 5, 11_000)];
        let rows: Vec<(i64, i64, i64)> =
            q5(&events).iter().map(|row| (row.window_start_ms, row.auction, row.bid_count)).collect();
        assert_eq!(
            rows,
            [
                (-8_000, 1, 1),
                (-6_000, 1, 2),
                (-4_000, 1, 2),
                (-2_000, 1, 2),
                (0, 1, 2),
                (2_000, 2, 2),
                (4_000, 2, 1),
                (4_000, 3, 1),
                (6_000, 2, 1),
                (6_000, 3, 1),
                (8_000, 2, 1),
                (8_000, 3, 1),
                (10_000, 2, 1),
                (10_000, 3, 1),
            ]
        );
    }

    #[test]
    fn q7_keeps_the_bids_at_each_windows_highest_price() {
        let events = [bid(1, 50, 1_000), bid(2, 70, 2_000), bid(3, 70, 9_999), bid(4, 90, 10_000), bid(5, 10, 12_000)];
        let rows: Vec<(i64, i64)> = q7(&events).iter().map(|row| (row.window_start_ms, row.auction)).collect();
        assert_eq!(rows, [(0, 2), (0, 3), (10_000, 4)]);
    }

    #[test]
    fn q8_names_each_person_selling_in_the_window_they_joined_once() {
        let events = [
            person(1, "or", 1_000),
            person(2, "wa", 2_000),
            person(3, "id", 9_000),
            auction(100, 1, 10, 3_000),
            auction(101, 1, 12, 4_000),
            auction(102, 3, 10, 10_500),
            auction(103, 9, 10, 5_000),
        ];
        assert_eq!(q8(&events), [Q8Row { person_id: 1, name: "p1".into(), window_start_ms: 0 }]);
    }

    #[test]
    fn the_ground_truth_events_are_the_single_partition_stream() {
        let spec =
            NexmarkSourceSpec { partitions: 3, tables: vec![NexmarkTable::Bid], ..NexmarkSourceSpec::new(1_000) };
        let all = events(&spec, 1_000, 2_000);
        assert!(all.len().abs_diff(10_000) <= 10, "a second at 10 000 events/s: {}", all.len());
        let persons = all.iter().filter(|event| matches!(event, Event::Person(_))).count();
        assert_eq!(persons, all.len().div_ceil(50), "every kind, though the spec emits bids alone");
        let q8_rows = q8(&all);
        assert!(!q8_rows.is_empty(), "the hot seller sells in the window it joins in");
    }
}
