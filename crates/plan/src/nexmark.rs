//! The Nexmark generator's description: an online auction's persons, auctions and bids, the
//! events the published Nexmark figures are measured on. The generator
//! (`sleet_connectors::nexmark`) is a pure function of this spec, a partition and an event-time
//! range; its ground truth is `sleet_workloads::nexmark_check`.

use serde::{Deserialize, Serialize};

/// The three kinds of Nexmark event, each a table of the benchmark's queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NexmarkTable {
    Person,
    Auction,
    Bid,
}

impl NexmarkTable {
    pub const ALL: [NexmarkTable; 3] = [NexmarkTable::Person, NexmarkTable::Auction, NexmarkTable::Bid];

    /// The record's `event_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            NexmarkTable::Person => "person",
            NexmarkTable::Auction => "auction",
            NexmarkTable::Bid => "bid",
        }
    }
}

/// Nexmark's one event stream, from `start_ms` on at `rate_per_s` events per second over all
/// partitions, in the model's mix (1 person : 3 auctions : 46 bids). Event `n` (from 0) goes
/// to partition `n mod partitions`; a batch of `[a, b)` holds the events whose `date_time`
/// falls in it. Only the kinds in `tables` are emitted, but every event is drawn, so ids and
/// times are those of the full stream whatever the choice.
///
/// Nexmark has no seed: the stream is fixed by the model's parameters, of which these are the
/// ones worth varying; the rest keep the generator's defaults (those of the published runs).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NexmarkSourceSpec {
    /// Event time (ms since the epoch) of event 0. A job on this source should start its
    /// batches here, or it misses the first events.
    pub start_ms: i64,
    #[serde(default = "default_rate_per_s")]
    pub rate_per_s: u64,
    #[serde(default = "default_partitions")]
    pub partitions: u32,
    #[serde(default = "default_tables")]
    pub tables: Vec<NexmarkTable>,
    /// The stream ends after this many events (Nexmark's `events.num`); without it, never.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_events: Option<u64>,
    /// People recent enough to sell or bid.
    #[serde(default = "default_active_people")]
    pub active_people: u32,
    /// Auctions open at any time, on average.
    #[serde(default = "default_in_flight_auctions")]
    pub in_flight_auctions: u32,
    /// `r`: one auction in `r` is by a random active person, the rest by the hot seller.
    #[serde(default = "default_hot_seller_ratio")]
    pub hot_seller_ratio: u32,
    /// `r`: one bid in `r` is on a random open auction, the rest on the hot auction.
    #[serde(default = "default_hot_auction_ratio")]
    pub hot_auction_ratio: u32,
    /// `r`: one bid in `r` is by a random active person, the rest by the hot bidder.
    #[serde(default = "default_hot_bidder_ratio")]
    pub hot_bidder_ratio: u32,
}

pub fn default_rate_per_s() -> u64 {
    10_000
}

pub fn default_partitions() -> u32 {
    1
}

pub fn default_tables() -> Vec<NexmarkTable> {
    NexmarkTable::ALL.to_vec()
}

pub fn default_active_people() -> u32 {
    1_000
}

pub fn default_in_flight_auctions() -> u32 {
    100
}

pub fn default_hot_seller_ratio() -> u32 {
    4
}

pub fn default_hot_auction_ratio() -> u32 {
    2
}

pub fn default_hot_bidder_ratio() -> u32 {
    4
}

impl NexmarkSourceSpec {
    /// The stream from `start_ms` with every other field at its default.
    pub fn new(start_ms: i64) -> NexmarkSourceSpec {
        NexmarkSourceSpec {
            start_ms,
            rate_per_s: default_rate_per_s(),
            partitions: default_partitions(),
            tables: default_tables(),
            max_events: None,
            active_people: default_active_people(),
            in_flight_auctions: default_in_flight_auctions(),
            hot_seller_ratio: default_hot_seller_ratio(),
            hot_auction_ratio: default_hot_auction_ratio(),
            hot_bidder_ratio: default_hot_bidder_ratio(),
        }
    }

    pub fn emits(&self, table: NexmarkTable) -> bool {
        self.tables.contains(&table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_naming_only_its_start_takes_the_defaults() {
        let spec: NexmarkSourceSpec = serde_json::from_str(r#"{"start_ms": 5}"#).expect("parses");
        assert_eq!(spec, NexmarkSourceSpec::new(5));
        let bids: NexmarkSourceSpec = serde_json::from_str(r#"{"start_ms": 5, "tables": ["bid"]}"#).expect("parses");
        assert!(bids.emits(NexmarkTable::Bid) && !bids.emits(NexmarkTable::Person));
        let text = serde_json::to_string(&spec).expect("serializes");
        assert_eq!(serde_json::from_str::<NexmarkSourceSpec>(&text).expect("round trip"), spec);
    }
}
