//! Checks `bench shuffle`'s output: every (key, window) total in the sink against the sums
//! computed from the numbers generator's function directly, batch by batch, without JSON or
//! any of the engine's operators.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use sleet_connectors::numbers::{number, partition_key_name};
use sleet_plan::NumbersSourceSpec;
use sleet_wire::clock::BatchClock;

#[derive(Debug, Default, PartialEq)]
pub struct ShuffleCheck {
    pub totals_expected: usize,
    pub mismatches: usize,
    /// A few mismatches, spelled out.
    pub examples: Vec<String>,
}

/// Sum per key name of the batch `[start_ms, end_ms)` on `partition`, computed from `number()`
/// directly so it shares no code with the JSON writer or the engine's operators.
pub fn expected_sums(spec: &NumbersSourceSpec, partition: u32, start_ms: i64, end_ms: i64) -> BTreeMap<String, i64> {
    let mut sums = BTreeMap::new();
    if start_ms >= end_ms {
        return sums;
    }
    for index in 0..spec.numbers_per_batch {
        *sums.entry(partition_key_name(spec, partition, index % spec.keys)).or_default() +=
            number(spec, partition, start_ms, index);
    }
    sums
}

/// The total per (key, window start) over `batches` batches of `clock`, every partition.
pub fn expected_totals(
    spec: &NumbersSourceSpec,
    clock: &BatchClock,
    batches: u64,
    window_ms: i64,
) -> BTreeMap<(String, i64), i64> {
    let mut totals = BTreeMap::new();
    for batch in 0..batches {
        let (start_ms, end_ms) = clock.range_ms(batch);
        // Every record of a batch carries the batch's start as its time.
        let window = start_ms.div_euclid(window_ms) * window_ms;
        for partition in 0..spec.partitions {
            for (key, sum) in expected_sums(spec, partition, start_ms, end_ms) {
                *totals.entry((key, window)).or_default() += sum;
            }
        }
    }
    totals
}

/// The final total per (key, window start) in the sink: the row of the highest batch.
pub fn sink_totals(dir: &Path) -> Result<BTreeMap<(String, i64), i64>> {
    let lines = sleet_durable::committed::read_json_lines(dir, "part-", "reading sink files")
        .with_context(|| format!("reading the shuffle results in {}", dir.display()))?;
    let mut last: BTreeMap<(String, i64), (i64, u64)> = BTreeMap::new();
    for line in lines {
        let field = |name: &str| {
            line.value
                .get(name)
                .cloned()
                .with_context(|| format!("{} line {}: no `{name}` in {}", line.path.display(), line.line, line.value))
        };
        let key = field("key")?.as_str().map(str::to_string).context("`key` is not a string")?;
        let window = field("window_start")?.as_i64().context("`window_start` is not an integer")?;
        let total = field("total")?.as_i64().context("`total` is not an integer")?;
        let batch = field("batch")?.as_u64().context("`batch` is not a batch id")?;
        let entry = last.entry((key, window)).or_insert((total, batch));
        if batch >= entry.1 {
            *entry = (total, batch);
        }
    }
    Ok(last.into_iter().map(|(key, (total, _))| (key, total)).collect())
}

pub fn compare(expected: &BTreeMap<(String, i64), i64>, actual: &BTreeMap<(String, i64), i64>) -> ShuffleCheck {
    let mut check = ShuffleCheck { totals_expected: expected.len(), ..ShuffleCheck::default() };
    let mut note = |text: String| {
        check.mismatches += 1;
        if check.examples.len() < 10 {
            check.examples.push(text);
        }
    };
    for ((key, window), total) in expected {
        match actual.get(&(key.clone(), *window)) {
            Some(found) if found == total => {}
            Some(found) => note(format!("key {key} window {window}: {found}, expected {total}")),
            None => note(format!("key {key} window {window}: missing, expected {total}")),
        }
    }
    for (key, window) in actual.keys().filter(|key| !expected.contains_key(*key)) {
        note(format!("key {key} window {window}: present but no numbers were generated"));
    }
    check
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_connectors::numbers::NumbersGenerator;
    use sleet_exec::RawRecords;

    use super::*;

    #[test]
    fn totals_add_up_every_partition_and_batch_of_a_window() {
        let spec = NumbersSourceSpec { seed: 5, partitions: 2, numbers_per_batch: 10, keys: 1 };
        let clock = BatchClock::new(1_000, 10);
        let totals = expected_totals(&spec, &clock, 150, 1000);
        // Batches start at 1000..2490: windows 1000 (100 batches) and 2000 (50 batches).
        assert_eq!(totals.len(), 4, "two keys, one per partition, in two windows");
        let by_hand: i64 =
            (0..100).map(|batch| expected_sums(&spec, 1, 1000 + batch * 10, 1010 + batch * 10)["k001"]).sum();
        assert_eq!(totals[&("k001".to_string(), 1000)], by_hand);

        let mut actual = totals.clone();
        assert_eq!(compare(&totals, &actual).mismatches, 0);
        *actual.get_mut(&("k000".to_string(), 2000)).expect("a total") += 1;
        actual.insert(("k009".to_string(), 1000), 3);
        let check = compare(&totals, &actual);
        assert_eq!(check.mismatches, 2, "{:?}", check.examples);
    }

    proptest! {
        #[test]
        fn parsed_sums_equal_the_expected_sums(
            seed in any::<u64>(),
            partition in 0u32..8,
            keys in 1u32..64,
            numbers_per_batch in 1u32..5_000,
            start_ms in -1_000i64..10_000_000_000_000,
            length_ms in -10i64..100_000,
        ) {
            let spec = NumbersSourceSpec { seed, partitions: 8, numbers_per_batch, keys };
            let end_ms = start_ms + length_ms;
            let mut records = RawRecords::new();
            NumbersGenerator::new(&spec, partition).generate(start_ms, end_ms, &mut records);
            prop_assert_eq!(records.len(), if length_ms > 0 { keys.min(numbers_per_batch) as usize } else { 0 });
            let parsed: BTreeMap<String, i64> = records
                .iter()
                .map(|record| {
                    let value: serde_json::Value = serde_json::from_slice(record).expect("a record is valid JSON");
                    (value["key"].as_str().expect("key").to_string(), value["sum"].as_i64().expect("sum"))
                })
                .collect();
            prop_assert_eq!(parsed, expected_sums(&spec, partition, start_ms, end_ms));
        }
    }
}
