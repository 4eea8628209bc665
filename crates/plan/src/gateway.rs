//! The home-gateway generator's description: gateways reporting traffic counters about once a
//! period, some readings delivered late, in one of three client encodings. The generator
//! (`sleet_connectors::gateway`) is a pure function of this spec, a partition and a delivery
//! time range; its ground truth is `sleet_workloads::gateway_check`.

use serde::{Deserialize, Serialize};

/// How a gateway reports its traffic since its previous reading.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayEncoding {
    /// Bytes since the gateway started, a 32-bit interface counter wrapping to 0 at 2^32.
    #[default]
    Cumulative,
    /// Bytes since the gateway's previous reading.
    Counter,
    /// Bytes per second since the gateway's previous reading.
    Rate,
}

impl GatewayEncoding {
    pub const ALL: [GatewayEncoding; 3] =
        [GatewayEncoding::Cumulative, GatewayEncoding::Counter, GatewayEncoding::Rate];

    pub fn as_str(self) -> &'static str {
        match self {
            GatewayEncoding::Cumulative => "cumulative",
            GatewayEncoding::Counter => "counter",
            GatewayEncoding::Rate => "rate",
        }
    }
}

/// A gateway's encoding is what the `increments` operator decodes it with.
impl From<GatewayEncoding> for crate::ReadingEncoding {
    fn from(encoding: GatewayEncoding) -> Self {
        match encoding {
            GatewayEncoding::Cumulative => crate::ReadingEncoding::Cumulative,
            GatewayEncoding::Counter => crate::ReadingEncoding::Counter,
            GatewayEncoding::Rate => crate::ReadingEncoding::Rate,
        }
    }
}

/// How a reading is written as bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GatewayFormat {
    /// One object per record: `{"gateway_id": …, "date": …, "ipTx": …, "ipRx": …}`.
    #[default]
    Json,
    /// Avro's single-object encoding with the schema `schemas/gateway.avsc` (the same four
    /// fields, `date` a long, `ipTx` and `ipRx` doubles), read by `decode_avro`.
    Avro,
}

impl GatewayFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            GatewayFormat::Json => "json",
            GatewayFormat::Avro => "avro",
        }
    }
}

/// `gateways` gateways, each reporting every `report_interval_ms` ± `jitter_ms` of simulated
/// time from `start_ms` on (until `stop_ms`, if given). Simulated time runs `speedup` times
/// faster than the batches' wall-clock time, and equals it at `start_ms`: the batch range
/// `[a, b)` delivers the readings whose simulated delivery time falls in
/// `[start + (a − start)·speedup, start + (b − start)·speedup)`. A job on this source should
/// start its batches at `start_ms`, or it misses the gateways' first readings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GatewaySourceSpec {
    pub seed: u64,
    pub gateways: u32,
    /// A gateway's readings all go to the partition Kafka's default partitioner picks for its
    /// id, so this source and a topic written by `sleet gen gateway` hold the same records.
    pub partitions: u32,
    #[serde(default)]
    pub encoding: GatewayEncoding,
    #[serde(default)]
    pub format: GatewayFormat,
    /// Simulated time (ms since the epoch) before every gateway's first reading.
    pub start_ms: i64,
    /// Gateways take no reading at or after this simulated time; the readings before it are
    /// all delivered by `stop_ms + max_delay_ms`. Without it they report for ever.
    #[serde(default)]
    pub stop_ms: Option<i64>,
    #[serde(default = "default_speedup")]
    pub speedup: u32,
    #[serde(default = "default_report_interval_ms")]
    pub report_interval_ms: i64,
    /// Below half the report interval, so a gateway's readings keep their order in event time.
    #[serde(default = "default_jitter_ms")]
    pub jitter_ms: i64,
    /// Share of readings delivered late, each by up to `max_delay_ms` of simulated time.
    #[serde(default = "default_late_fraction")]
    pub late_fraction: f64,
    #[serde(default = "default_max_delay_ms")]
    pub max_delay_ms: i64,
}

pub fn default_speedup() -> u32 {
    1
}

pub fn default_report_interval_ms() -> i64 {
    60_000
}

pub fn default_jitter_ms() -> i64 {
    20_000
}

pub fn default_late_fraction() -> f64 {
    0.02
}

pub fn default_max_delay_ms() -> i64 {
    120_000
}

impl GatewaySourceSpec {
    /// The simulated time of the wall-clock instant `wall_ms` (saturating far from the start).
    pub fn simulated_ms(&self, wall_ms: i64) -> i64 {
        let elapsed = (wall_ms as i128 - self.start_ms as i128) * self.speedup.max(1) as i128;
        (self.start_ms as i128 + elapsed).clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// The first wall-clock instant whose simulated time is at least `simulated_ms`.
    pub fn wall_ms(&self, simulated_ms: i64) -> i64 {
        let elapsed = simulated_ms as i128 - self.start_ms as i128;
        let wall = self.start_ms as i128
            + elapsed.div_euclid(self.speedup.max(1) as i128)
            + i128::from(elapsed.rem_euclid(self.speedup.max(1) as i128) != 0);
        wall.clamp(i64::MIN as i128, i64::MAX as i128) as i64
    }

    /// Simulated time by which every reading has been delivered, if the gateways stop.
    pub fn drained_ms(&self) -> Option<i64> {
        self.stop_ms.map(|stop| stop.saturating_add(self.max_delay_ms))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(speedup: u32) -> GatewaySourceSpec {
        GatewaySourceSpec {
            seed: 1,
            gateways: 1,
            partitions: 1,
            encoding: GatewayEncoding::Counter,
            format: GatewayFormat::Json,
            start_ms: 1_000,
            stop_ms: None,
            speedup,
            report_interval_ms: default_report_interval_ms(),
            jitter_ms: default_jitter_ms(),
            late_fraction: 0.0,
            max_delay_ms: 0,
        }
    }

    #[test]
    fn simulated_time_runs_speedup_times_faster_from_the_start() {
        let spec = spec(60);
        assert_eq!(spec.simulated_ms(1_000), 1_000);
        assert_eq!(spec.simulated_ms(2_000), 61_000);
        assert_eq!(spec.simulated_ms(999), 940);
        for simulated in [1_000, 1_001, 1_059, 1_060, 61_000, 61_001, 500] {
            let wall = spec.wall_ms(simulated);
            assert!(spec.simulated_ms(wall) >= simulated, "{simulated}");
            assert!(spec.simulated_ms(wall - 1) < simulated, "{simulated}");
        }
    }
}
