//! `connector = 'generator'`: the built-in workloads as tables, so a query runs with no
//! outside service. `kind` picks the generator; its options are the fields of its source spec.

use sleet_plan::{
    DataType, GatewayEncoding, GatewayFormat, GatewaySourceSpec, NexmarkSourceSpec, NexmarkTable, SourceSpec,
    YsbSourceSpec,
};

use crate::catalog::{Column, Connector, Format};
use crate::error::SqlError;
use crate::options::TableOptions;
use crate::SqlOptions;

/// The schema the gateway generator's Avro records are written with, relative to where the
/// job is submitted from (the repository's root holds it).
pub const GATEWAY_AVRO_SCHEMA: &str = "schemas/gateway.avsc";

pub fn generator_of(
    options: &mut TableOptions,
    columns: &[Column],
    context: &SqlOptions,
) -> Result<(Connector, Format), SqlError> {
    let (kind, kind_at) = options.take_required("kind")?;
    let max_record_bytes = options
        .take_parsed("max_record_bytes", "a whole number of bytes")?
        .unwrap_or_else(sleet_plan::node::default_max_record_bytes);
    let json = Format::Json { max_record_bytes };
    let seed: Option<u64> = options.take_parsed("seed", "a whole number")?;
    let seed_given = seed.is_some();
    let seed = seed.unwrap_or(1);
    match kind.to_ascii_lowercase().as_str() {
        "ysb" => {
            let spec = YsbSourceSpec {
                seed,
                rate_per_s: options.take_parsed("rate", "events per second, a whole number")?.unwrap_or(200_000),
                partitions: partitions(options)?,
                bad_fraction: options.take_parsed("bad_fraction", "a share between 0 and 1")?.unwrap_or(0.0),
                pre_decoded: false,
            };
            options.finish(
                "generator (ysb)",
                &["connector", "kind", "seed", "rate", "partitions", "bad_fraction", "max_record_bytes"],
            )?;
            Ok((Connector::Generator(SourceSpec::Ysb(spec)), json))
        }
        "ysb_campaigns" => {
            let expected = ["ad_id", "campaign_id"];
            let declared: Vec<&str> = columns.iter().map(|column| column.name.as_str()).collect();
            if declared != expected || columns.iter().any(|column| column.data_type != DataType::Utf8) {
                return Err(SqlError::invalid(
                    options.at(),
                    format!(
                        "table `{}`: the ysb campaigns table has the columns (ad_id VARCHAR, campaign_id VARCHAR)",
                        options.table()
                    ),
                ));
            }
            options.finish("generator (ysb_campaigns)", &["connector", "kind", "seed"])?;
            Ok((Connector::YsbCampaigns { seed }, json))
        }
        "gateway" => {
            let encoding = match options.take("encoding") {
                None => GatewayEncoding::default(),
                Some((text, at)) => GatewayEncoding::ALL
                    .into_iter()
                    .find(|encoding| encoding.as_str().eq_ignore_ascii_case(&text))
                    .ok_or_else(|| {
                        options.bad("encoding", at, format!("'{text}' is not cumulative, counter or rate"))
                    })?,
            };
            let format = match options.take("format") {
                None => GatewayFormat::Json,
                Some((text, at)) => match text.to_ascii_lowercase().as_str() {
                    "json" => GatewayFormat::Json,
                    "avro" => GatewayFormat::Avro,
                    _ => return Err(options.bad("format", at, format!("'{text}' is not json or avro"))),
                },
            };
            let decode = match format {
                GatewayFormat::Json => json,
                GatewayFormat::Avro => Format::Avro {
                    schema_path: options
                        .take("avro.schema")
                        .map_or_else(|| GATEWAY_AVRO_SCHEMA.to_string(), |(path, _)| path),
                    max_record_bytes,
                },
            };
            let mut spec = GatewaySourceSpec {
                seed,
                gateways: options.take_parsed("gateways", "a whole number")?.unwrap_or(200),
                partitions: partitions(options)?,
                encoding,
                format,
                start_ms: options.take_parsed("start_ms", "ms since the epoch")?.unwrap_or(context.start_ms),
                stop_ms: options.take_parsed("stop_ms", "ms since the epoch")?,
                speedup: options.take_parsed("speedup", "a whole number ≥ 1")?.unwrap_or(1),
                report_interval_ms: sleet_plan::gateway::default_report_interval_ms(),
                jitter_ms: sleet_plan::gateway::default_jitter_ms(),
                late_fraction: options.take_parsed("late_fraction", "a share between 0 and 1")?.unwrap_or(0.02),
                max_delay_ms: sleet_plan::gateway::default_max_delay_ms(),
            };
            if let Some(interval) = options.take_parsed("report_interval_ms", "a whole number of ms")? {
                spec.report_interval_ms = interval;
            }
            if let Some(jitter) = options.take_parsed("jitter_ms", "a whole number of ms")? {
                spec.jitter_ms = jitter;
            }
            if let Some(delay) = options.take_parsed("max_delay_ms", "a whole number of ms")? {
                spec.max_delay_ms = delay;
            }
            options.finish(
                "generator (gateway)",
                &[
                    "connector",
                    "kind",
                    "seed",
                    "gateways",
                    "partitions",
                    "encoding",
                    "format",
                    "avro.schema",
                    "start_ms",
                    "stop_ms",
                    "speedup",
                    "report_interval_ms",
                    "jitter_ms",
                    "late_fraction",
                    "max_delay_ms",
                    "max_record_bytes",
                ],
            )?;
            Ok((Connector::Generator(SourceSpec::Gateway(spec)), decode))
        }
        "nexmark" => {
            if seed_given {
                return Err(options.bad(
                    "seed",
                    options.at(),
                    "the Nexmark model has no seed: its stream is fixed by its parameters",
                ));
            }
            let mut spec = NexmarkSourceSpec::new(
                options.take_parsed("start_ms", "ms since the epoch")?.unwrap_or(context.start_ms),
            );
            if let Some(rate) = options.take_parsed("rate", "events per second, a whole number")? {
                spec.rate_per_s = rate;
            }
            spec.partitions = partitions(options)?;
            if let Some((tables, at)) = options.take("tables") {
                let mut chosen = Vec::new();
                for name in tables.split(',') {
                    let table = NexmarkTable::ALL
                        .into_iter()
                        .find(|table| table.as_str().eq_ignore_ascii_case(name.trim()))
                        .ok_or_else(|| {
                            options.bad("tables", at, format!("'{}' is not person, auction or bid", name.trim()))
                        })?;
                    chosen.push(table);
                }
                spec.tables = chosen;
            }
            spec.max_events = options.take_parsed("max_events", "a whole number of events")?;
            let model: [(&str, &mut u32); 5] = [
                ("active_people", &mut spec.active_people),
                ("in_flight_auctions", &mut spec.in_flight_auctions),
                ("hot_seller_ratio", &mut spec.hot_seller_ratio),
                ("hot_auction_ratio", &mut spec.hot_auction_ratio),
                ("hot_bidder_ratio", &mut spec.hot_bidder_ratio),
            ];
            for (option, field) in model {
                if let Some(value) = options.take_parsed(option, "a whole number ≥ 1")? {
                    *field = value;
                }
            }
            options.finish(
                "generator (nexmark)",
                &[
                    "connector",
                    "kind",
                    "start_ms",
                    "rate",
                    "partitions",
                    "tables",
                    "max_events",
                    "active_people",
                    "in_flight_auctions",
                    "hot_seller_ratio",
                    "hot_auction_ratio",
                    "hot_bidder_ratio",
                    "max_record_bytes",
                ],
            )?;
            Ok((Connector::Generator(SourceSpec::Nexmark(spec)), json))
        }
        other => Err(options.bad(
            "kind",
            kind_at,
            format!("unknown generator '{other}' (sleet has ysb, ysb_campaigns, gateway, nexmark)"),
        )),
    }
}

fn partitions(options: &mut TableOptions) -> Result<u32, SqlError> {
    Ok(options.take_parsed("partitions", "a whole number ≥ 1")?.unwrap_or(2))
}
