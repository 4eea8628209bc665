//! A source's options; its output is always one column of raw records.

use super::columns::option;
use crate::error::{NodeRef, PlanError};
use crate::gateway::GatewaySourceSpec;
use crate::nexmark::NexmarkSourceSpec;
use crate::node::{EventTimeSource, KafkaStart, SourceSpec};
use crate::schema::{DataType, Field, Schema};

pub(super) fn check(at: &NodeRef, spec: &SourceSpec) -> Result<Schema, PlanError> {
    match spec {
        SourceSpec::Ysb(ysb) => {
            if ysb.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if !(0.0..=1.0).contains(&ysb.bad_fraction) {
                return Err(option(at, "bad_fraction", "must be between 0 and 1"));
            }
        }
        SourceSpec::Numbers(numbers) => {
            if numbers.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if numbers.numbers_per_batch == 0 {
                return Err(option(at, "numbers_per_batch", "must be at least 1"));
            }
            if numbers.keys == 0 {
                return Err(option(at, "keys", "must be at least 1"));
            }
        }
        SourceSpec::Kafka(kafka) => {
            if kafka.brokers.split(',').all(|broker| broker.trim().is_empty()) {
                return Err(option(at, "brokers", "must name at least one host:port"));
            }
            if kafka.topic.is_empty() {
                return Err(option(at, "topic", "must not be empty"));
            }
            if kafka.max_records_per_partition_per_batch == 0 {
                return Err(option(at, "max_records_per_partition_per_batch", "must be at least 1"));
            }
            if let KafkaStart::Offsets(offsets) = &kafka.start {
                if kafka.partitions != 0 && offsets.len() != kafka.partitions as usize {
                    let found = offsets.len();
                    return Err(option(
                        at,
                        "start",
                        &format!("names {found} offsets for {} partitions", kafka.partitions),
                    ));
                }
                if let Some(negative) = offsets.iter().find(|offset| **offset < 0) {
                    return Err(option(at, "start", &format!("offset {negative} is negative")));
                }
            }
            if let EventTimeSource::RecordTimestamp(column) = &kafka.event_time {
                if column.is_empty() {
                    return Err(option(at, "event_time", "record_timestamp needs a column name"));
                }
            }
        }
        SourceSpec::Gateway(gateway) => check_gateway(at, gateway)?,
        SourceSpec::Nexmark(nexmark) => check_nexmark(at, nexmark)?,
        SourceSpec::Files(files) => {
            if files.path.is_empty() {
                return Err(option(at, "path", "must not be empty"));
            }
            if files.max_records_per_partition_per_batch == 0 {
                return Err(option(at, "max_records_per_partition_per_batch", "must be at least 1"));
            }
        }
    }
    Ok(Schema::new(vec![Field::new("value", DataType::Binary)]))
}

fn check_gateway(at: &NodeRef, gateway: &GatewaySourceSpec) -> Result<(), PlanError> {
    if gateway.partitions == 0 {
        return Err(option(at, "partitions", "must be at least 1"));
    }
    if gateway.gateways == 0 {
        return Err(option(at, "gateways", "must be at least 1"));
    }
    if gateway.speedup == 0 {
        return Err(option(at, "speedup", "must be at least 1"));
    }
    if gateway.start_ms < 0 {
        return Err(option(at, "start_ms", "must not be before the epoch"));
    }
    if gateway.stop_ms.is_some_and(|stop| stop < gateway.start_ms) {
        return Err(option(at, "stop_ms", "must not be before start_ms"));
    }
    // Five minutes at most, so the fastest gateway's traffic over its longest interval stays
    // below 2^32 bytes, the most a wrapping 32-bit counter can tell apart.
    if !(1..=300_000).contains(&gateway.report_interval_ms) {
        return Err(option(at, "report_interval_ms", "must be between 1 ms and 5 minutes"));
    }
    // Readings a whole interval apart with less than half an interval of jitter each way
    // never overtake one another in event time.
    if gateway.jitter_ms < 0 || 2 * gateway.jitter_ms >= gateway.report_interval_ms {
        return Err(option(at, "jitter_ms", "must be at least 0 and below half of report_interval_ms"));
    }
    if !(0.0..=1.0).contains(&gateway.late_fraction) {
        return Err(option(at, "late_fraction", "must be between 0 and 1"));
    }
    if !(0..=86_400_000).contains(&gateway.max_delay_ms) {
        return Err(option(at, "max_delay_ms", "must be between 0 and one day"));
    }
    Ok(())
}

fn check_nexmark(at: &NodeRef, nexmark: &NexmarkSourceSpec) -> Result<(), PlanError> {
    if nexmark.partitions == 0 {
        return Err(option(at, "partitions", "must be at least 1"));
    }
    if nexmark.start_ms < 0 {
        return Err(option(at, "start_ms", "must not be before the epoch"));
    }
    if nexmark.rate_per_s == 0 {
        return Err(option(at, "rate_per_s", "must be at least 1"));
    }
    if nexmark.tables.is_empty() {
        return Err(option(at, "tables", "must name at least one of person, auction, bid"));
    }
    let ratios = [
        ("active_people", nexmark.active_people),
        ("in_flight_auctions", nexmark.in_flight_auctions),
        ("hot_seller_ratio", nexmark.hot_seller_ratio),
        ("hot_auction_ratio", nexmark.hot_auction_ratio),
        ("hot_bidder_ratio", nexmark.hot_bidder_ratio),
    ];
    if let Some((name, _)) = ratios.iter().find(|(_, value)| *value == 0) {
        return Err(option(at, name, "must be at least 1"));
    }
    Ok(())
}
