//! The scheduling micro-benchmarks' source: per batch and partition, a fixed count of
//! pseudo-random numbers summed per key, a pure function of `(seed, partition, batch start)`.
//! The sums its results are checked against come from the same function
//! (`sleet_workloads::shuffle_check`).
//!
//! Each partition has keys of its own (`keys` of them: partition `p` owns keys
//! `p·keys .. (p+1)·keys`), so with one key per partition a map task's sum travels to exactly
//! one reduce partition, and with more keys it spreads over several.

use sleet_exec::RawRecords;
use sleet_plan::{DataType, Field, NumbersSourceSpec, Schema};

use crate::ysb::{mix, write_decimal};

/// Numbers are drawn from `0..NUMBER_LIMIT`.
pub const NUMBER_LIMIT: i64 = 1000;

/// The schema that decodes a numbers record.
pub fn record_schema() -> Schema {
    Schema::new(vec![
        Field::new("key", DataType::Utf8),
        Field::new("sum", DataType::Int64),
        Field::new("time", DataType::Int64),
    ])
}

/// `k000`, `k001`, …: zero-padded so that, up to 1000 keys, string order is numeric order.
pub fn key_name(key: u32) -> String {
    format!("k{key:03}")
}

/// Everything a batch's numbers share, hashed once so that each number costs one mix.
fn batch_hash(spec: &NumbersSourceSpec, partition: u32, start_ms: i64) -> u64 {
    mix(mix(mix(spec.seed) ^ u64::from(partition)) ^ start_ms as u64)
}

fn number_in_batch(batch_hash: u64, index: u32) -> i64 {
    // Scaling the top 32 bits into `0..NUMBER_LIMIT` costs one multiply where a modulo costs
    // several; its bias (below 10^-6) is invisible to any benchmark or test.
    (((mix(batch_hash ^ u64::from(index)) >> 32) * NUMBER_LIMIT as u64) >> 32) as i64
}

/// The name of key `key_index` (`0..keys`) of `partition`.
pub fn partition_key_name(spec: &NumbersSourceSpec, partition: u32, key_index: u32) -> String {
    key_name(partition * spec.keys + key_index)
}

/// Number `index` of the batch starting at `start_ms` on `partition`, in `0..1000`. It belongs
/// to the partition's key `index % keys`.
pub fn number(spec: &NumbersSourceSpec, partition: u32, start_ms: i64, index: u32) -> i64 {
    number_in_batch(batch_hash(spec, partition, start_ms), index)
}

/// Writes one partition's batches as JSON records, one per key.
pub struct NumbersGenerator {
    spec: NumbersSourceSpec,
    partition: u32,
}

impl NumbersGenerator {
    pub fn new(spec: &NumbersSourceSpec, partition: u32) -> Self {
        assert!(spec.keys > 0 && spec.numbers_per_batch > 0, "validation rejects a numbers source with nothing to sum");
        NumbersGenerator { spec: spec.clone(), partition }
    }

    /// Appends the batch `[start_ms, end_ms)` of this partition: one record per key that
    /// received a number, in key order, each `{"key": "k003", "sum": 12345, "time": <start_ms>}`.
    /// Returns how many records. The work depends on the spec only, never on the range's
    /// length, so a task's compute stays fixed whatever the batch interval.
    pub fn generate(&self, start_ms: i64, end_ms: i64, out: &mut RawRecords) -> u64 {
        if start_ms >= end_ms {
            return 0;
        }
        let batch_hash = batch_hash(&self.spec, self.partition, start_ms);
        // Bounded by `numbers_per_batch`, not `keys`, so a huge `keys` costs no memory.
        // One key at a time, its numbers summed in a register: a running total kept in memory
        // would make every addition wait for the previous store.
        let key_count = self.spec.keys.min(self.spec.numbers_per_batch);
        let sums: Vec<i64> = (0..key_count)
            .map(|key_index| {
                (key_index..self.spec.numbers_per_batch)
                    .step_by(self.spec.keys as usize)
                    .map(|index| number_in_batch(batch_hash, index))
                    .sum()
            })
            .collect();
        out.data.reserve(sums.len() * 48);
        out.offsets.reserve(sums.len());
        let first_key = self.partition * self.spec.keys;
        for (key_index, sum) in sums.iter().enumerate() {
            let key = first_key + key_index as u32;
            write_record(key, *sum, start_ms, &mut out.data);
            out.finish_record();
        }
        sums.len() as u64
    }
}

/// `{"key": "k003", "sum": 12345, "time": <start_ms>}`, the key named as `key_name` names it.
fn write_record(key: u32, sum: i64, start_ms: i64, out: &mut Vec<u8>) {
    let (Ok(sum), Ok(start_ms)) = (u64::try_from(sum), u64::try_from(start_ms)) else {
        panic!("sums of numbers in 0..{NUMBER_LIMIT} and batch starts after 1970 are never negative");
    };
    out.extend_from_slice(b"{\"key\": \"k");
    for padding in [100, 10] {
        if key < padding {
            out.push(b'0');
        }
    }
    write_decimal(u64::from(key), out);
    out.extend_from_slice(b"\", \"sum\": ");
    write_decimal(sum, out);
    out.extend_from_slice(b", \"time\": ");
    write_decimal(start_ms, out);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    const START_MS: i64 = 1_700_000_000_000;

    fn spec(numbers_per_batch: u32, keys: u32) -> NumbersSourceSpec {
        NumbersSourceSpec { seed: 42, partitions: 4, numbers_per_batch, keys }
    }

    fn generate(spec: &NumbersSourceSpec, partition: u32, start_ms: i64, end_ms: i64) -> RawRecords {
        let mut out = RawRecords::new();
        let count = NumbersGenerator::new(spec, partition).generate(start_ms, end_ms, &mut out);
        assert_eq!(count as usize, out.len(), "the return value counts the records appended");
        out
    }

    /// Sums per key read back from the generated JSON; panics on a record of any other shape.
    fn parse_sums(records: &RawRecords, start_ms: i64) -> BTreeMap<String, i64> {
        let mut sums = BTreeMap::new();
        for record in records.iter() {
            let value: serde_json::Value = serde_json::from_slice(record).expect("a record is valid JSON");
            let object = value.as_object().expect("a record is an object");
            let names: Vec<&str> = object.keys().map(String::as_str).collect();
            assert_eq!(names, ["key", "sum", "time"], "exactly the fields of record_schema()");
            assert_eq!(object["time"].as_i64(), Some(start_ms), "time is the batch start");
            let key = object["key"].as_str().expect("key is a string").to_string();
            let sum = object["sum"].as_i64().expect("sum is an integer");
            assert!(sums.insert(key, sum).is_none(), "one record per key");
        }
        sums
    }

    fn check(key: u32, expected: &str) {
        assert_eq!(key_name(key), expected);
    }

    #[test]
    fn key_names_are_zero_padded() {
        check(0, "k000");
        check(3, "k003");
        check(42, "k042");
        check(999, "k999");
        check(1000, "k1000");
    }

    #[test]
    fn records_are_written_as_the_format_macro_would() {
        for (key, sum, start_ms) in
            [(0, 0, 0), (7, 12_345, 1_790_000_000_000), (42, 1, 9), (999, 999_000, 10), (1000, 5, 10), (123_456, 3, 4)]
        {
            let mut out = Vec::new();
            write_record(key, sum, start_ms, &mut out);
            let expected = format!("{{\"key\": \"{}\", \"sum\": {sum}, \"time\": {start_ms}}}", key_name(key));
            assert_eq!(String::from_utf8(out).expect("UTF-8"), expected);
        }
    }

    #[test]
    fn the_schema_names_the_record_fields() {
        assert_eq!(record_schema().names(), ["key", "sum", "time"]);
    }

    #[test]
    fn same_inputs_give_the_same_bytes() {
        let spec = spec(1_000, 16);
        assert_eq!(generate(&spec, 1, START_MS, START_MS + 100), generate(&spec, 1, START_MS, START_MS + 100));
    }

    #[test]
    fn partitions_batches_and_seeds_differ() {
        let spec = spec(1_000, 16);
        let base = generate(&spec, 1, START_MS, START_MS + 100);
        assert_ne!(base, generate(&spec, 2, START_MS, START_MS + 100), "another partition");
        assert_ne!(base, generate(&spec, 1, START_MS + 100, START_MS + 200), "another batch");
        let reseeded = NumbersSourceSpec { seed: 43, ..spec.clone() };
        assert_ne!(base, generate(&reseeded, 1, START_MS, START_MS + 100), "another seed");
    }

    #[test]
    fn the_range_length_changes_nothing_but_an_empty_range_is_empty() {
        let spec = spec(500, 8);
        assert_eq!(generate(&spec, 0, START_MS, START_MS + 1), generate(&spec, 0, START_MS, START_MS + 60_000));
        assert!(generate(&spec, 0, START_MS, START_MS).is_empty());
        assert!(generate(&spec, 0, START_MS, START_MS - 10).is_empty());
    }

    #[test]
    fn only_keys_that_received_a_number_get_a_record() {
        let records = generate(&spec(3, 10), 0, START_MS, START_MS + 100);
        let keys: Vec<String> = parse_sums(&records, START_MS).into_keys().collect();
        assert_eq!(keys, ["k000", "k001", "k002"]);
    }

    #[test]
    fn each_partition_has_keys_of_its_own() {
        let spec = spec(10, 2);
        let keys = |partition| {
            parse_sums(&generate(&spec, partition, START_MS, START_MS + 1), START_MS).into_keys().collect::<Vec<_>>()
        };
        assert_eq!(keys(0), ["k000", "k001"]);
        assert_eq!(keys(3), ["k006", "k007"]);
    }

    #[test]
    fn numbers_are_in_range_and_spread_over_it() {
        let spec = spec(100_000, 1);
        let numbers: Vec<i64> = (0..spec.numbers_per_batch).map(|index| number(&spec, 0, START_MS, index)).collect();
        assert!(numbers.iter().all(|number| (0..NUMBER_LIMIT).contains(number)));
        let mean = numbers.iter().sum::<i64>() as f64 / numbers.len() as f64;
        assert!((495.0..505.0).contains(&mean), "uniform over 0..1000 has mean 499.5, got {mean}");
    }
}
