//! The worker's resource limits for experiments (`--net-bandwidth`, `--disk-bandwidth`,
//! `--sync-writes`, and `--no-monotask-records` for measuring what recording costs): the flags, their parser, and the arguments a local cluster passes on to
//! each worker process it starts.

/// Flags shared by `sleet worker` and the benchmarks that start workers.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct WorkerLimits {
    /// Limit on the bytes per second each worker moves over the network, all on one link: the
    /// shuffle blocks it fetches and the reads and writes of network sources and sinks (Kafka),
    /// for engineering a network-bound run: 4M, 500K, 1G or a bare number of bytes; K, M and
    /// G are powers of 1000 [default: no limit].
    #[arg(long, value_parser = bytes_per_s)]
    pub net_bandwidth: Option<u64>,
    /// Limit on the bytes per second each worker writes to its disk (sink writes,
    /// checkpoints, dead letters), for engineering a disk-bound run; same units as
    /// --net-bandwidth [default: no limit].
    #[arg(long, value_parser = bytes_per_s)]
    pub disk_bandwidth: Option<u64>,
    /// Sync every sink write on the disk to the device (fsync) before it counts as done.
    #[arg(long)]
    pub sync_writes: bool,
    /// Reports carry no monotask records: the driver has nothing to model and results no
    /// cpu breakdown or clarity section. Only for measuring what recording costs.
    #[arg(long)]
    pub no_monotask_records: bool,
}

impl WorkerLimits {
    /// The `sleet worker` arguments that set these limits.
    pub fn worker_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(rate) = self.net_bandwidth {
            args.extend(["--net-bandwidth".to_string(), rate.to_string()]);
        }
        if let Some(rate) = self.disk_bandwidth {
            args.extend(["--disk-bandwidth".to_string(), rate.to_string()]);
        }
        if self.sync_writes {
            args.push("--sync-writes".to_string());
        }
        if self.no_monotask_records {
            args.push("--no-monotask-records".to_string());
        }
        args
    }

    /// The limits for a result's config: `null` where there is none.
    pub fn config_json(&self) -> serde_json::Value {
        serde_json::json!({
            "net_bandwidth_bytes_per_s": self.net_bandwidth,
            "disk_bandwidth_bytes_per_s": self.disk_bandwidth,
            "sync_writes": self.sync_writes,
            "monotask_records": !self.no_monotask_records,
        })
    }
}

/// Parses `4M`, `4MB/s`, `500k`, `1G` or `123456` into bytes per second (decimal units).
pub fn bytes_per_s(text: &str) -> Result<u64, String> {
    let trimmed = text.trim();
    let without_rate = trimmed.strip_suffix("/s").unwrap_or(trimmed);
    let split = without_rate.find(|c: char| !c.is_ascii_digit() && c != '.').unwrap_or(without_rate.len());
    let (number, unit) = without_rate.split_at(split);
    let value: f64 = number.parse().map_err(|_| {
        format!("`{trimmed}` is not a bandwidth: expected bytes per second, such as 4M, 500K or 1000000")
    })?;
    let multiplier = match unit.trim().to_ascii_uppercase().trim_end_matches('B') {
        "" => 1.0,
        "K" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        _ => return Err(format!("`{unit}` in `{trimmed}` is not a unit: use K, M or G (powers of 1000)")),
    };
    let rate = value * multiplier;
    if !rate.is_finite() || rate < 1.0 || rate > u64::MAX as f64 / 2.0 {
        return Err(format!("`{trimmed}` is out of range: a bandwidth is at least 1 byte per second"));
    }
    Ok(rate.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Result<u64, &str>) {
        let got = bytes_per_s(text);
        match expected {
            Ok(rate) => assert_eq!(got, Ok(rate), "{text}"),
            Err(part) => assert!(got.as_ref().is_err_and(|error| error.contains(part)), "{text}: {got:?}"),
        }
    }

    #[test]
    fn bandwidths_parse_with_decimal_units() {
        check("1000", Ok(1000));
        check("4M", Ok(4_000_000));
        check("4MB/s", Ok(4_000_000));
        check("2.5k", Ok(2_500));
        check("1G", Ok(1_000_000_000));
        check("fast", Err("not a bandwidth"));
        check("4T", Err("not a unit"));
        check("0", Err("at least 1 byte"));
    }

    #[test]
    fn limits_become_worker_arguments() {
        let limits = WorkerLimits {
            net_bandwidth: Some(4_000_000),
            disk_bandwidth: None,
            sync_writes: true,
            no_monotask_records: false,
        };
        assert_eq!(limits.worker_args(), ["--net-bandwidth", "4000000", "--sync-writes"]);
        assert!(WorkerLimits::default().worker_args().is_empty());
    }
}
