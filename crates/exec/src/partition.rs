//! Hash partitioning for exchanges. The hash is FNV-1a over each key's bytes with a type tag,
//! fixed by this code rather than by std's per-process random state, so every worker process
//! sends a key to the same reduce partition.

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, RecordBatch, UInt32Array};
use arrow_schema::DataType;

use crate::error::ExecError;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

fn fnv(mut hash: u64, bytes: &[u8]) -> u64 {
    for byte in bytes {
        hash ^= *byte as u64;
        hash = hash.wrapping_mul(FNV_PRIME);
    }
    hash
}

fn hash_value(hash: u64, column: &dyn Array, row: usize) -> u64 {
    if column.is_null(row) {
        return fnv(hash, &[0]);
    }
    match column.data_type() {
        DataType::Utf8 => fnv(fnv(hash, &[1]), column.as_string::<i32>().value(row).as_bytes()),
        DataType::Int64 => fnv(fnv(hash, &[2]), &column.as_primitive::<Int64Type>().value(row).to_le_bytes()),
        DataType::Float64 => {
            fnv(fnv(hash, &[3]), &column.as_primitive::<Float64Type>().value(row).to_bits().to_le_bytes())
        }
        DataType::Boolean => fnv(hash, &[4, column.as_boolean().value(row) as u8]),
        DataType::Binary => fnv(fnv(hash, &[5]), column.as_binary::<i32>().value(row)),
        other => unreachable!("the planner only produces plan types, not {other}"),
    }
}

pub fn partition_of_row(key_columns: &[ArrayRef], row: usize, partitions: u32) -> u32 {
    assert!(partitions > 0, "an exchange has at least one partition");
    let hash = key_columns.iter().fold(FNV_OFFSET, |hash, column| hash_value(hash, column.as_ref(), row));
    // Fold the high bits in: FNV's low bits alone spread short keys poorly.
    ((hash ^ (hash >> 32)) % partitions as u64) as u32
}

/// Splits `batch` by the hash of `keys` into `partitions` parts and returns the non-empty ones
/// with their partition, in partition order. Empty parts are left out rather than built: a
/// small batch leaves most partitions empty, and an empty Arrow batch still costs an
/// allocation per column to make and to drop.
pub fn partition_batch(
    batch: &RecordBatch,
    keys: &[String],
    partitions: u32,
) -> Result<Vec<(u32, RecordBatch)>, ExecError> {
    let key_columns: Vec<ArrayRef> = keys
        .iter()
        .map(|key| batch.column_by_name(key).cloned().ok_or_else(|| ExecError::MissingColumn(key.clone())))
        .collect::<Result<_, _>>()?;
    let mut rows_of: Vec<Vec<u32>> = vec![Vec::new(); partitions as usize];
    for row in 0..batch.num_rows() {
        rows_of[partition_of_row(&key_columns, row, partitions) as usize].push(row as u32);
    }
    rows_of
        .into_iter()
        .enumerate()
        .filter(|(_, rows)| !rows.is_empty())
        .map(|(partition, rows)| {
            let part = if rows.len() == batch.num_rows() {
                batch.clone()
            } else {
                let indices = UInt32Array::from(rows);
                arrow_select::take::take_record_batch(batch, &indices)
                    .map_err(ExecError::arrow("partitioning a batch"))?
            };
            Ok((partition as u32, part))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};

    use super::*;

    fn batch(keys: Vec<&str>) -> RecordBatch {
        let values: Vec<i64> = (0..keys.len() as i64).collect();
        RecordBatch::try_from_iter([
            ("key", Arc::new(StringArray::from(keys)) as ArrayRef),
            ("value", Arc::new(Int64Array::from(values)) as ArrayRef),
        ])
        .expect("batch")
    }

    #[test]
    fn hash_is_fixed_across_processes() {
        // If these change, workers built from different versions disagree on placement.
        let keys: Vec<ArrayRef> = vec![Arc::new(StringArray::from(vec!["a", "campaign-7", ""]))];
        let found: Vec<u32> = (0..3).map(|row| partition_of_row(&keys, row, 1000)).collect();
        assert_eq!(found, vec![partition_of_row(&keys, 0, 1000), found[1], found[2]]);
        let expected = [fnv(fnv(FNV_OFFSET, &[1]), b"a"), fnv(fnv(FNV_OFFSET, &[1]), b"campaign-7")];
        assert_eq!(found[0] as u64, (expected[0] ^ (expected[0] >> 32)) % 1000);
        assert_eq!(found[1] as u64, (expected[1] ^ (expected[1] >> 32)) % 1000);
        assert_eq!(fnv(FNV_OFFSET, b"a"), 0xaf63_dc4c_8601_ec8c, "FNV-1a reference value");
    }

    #[test]
    fn partitions_cover_the_input_and_keep_keys_together() {
        let keys: Vec<String> = (0..500).map(|index| format!("k{}", index % 37)).collect();
        let input = batch(keys.iter().map(String::as_str).collect());
        let parts = partition_batch(&input, &["key".to_string()], 4).expect("partition");
        assert!(parts.windows(2).all(|pair| pair[0].0 < pair[1].0), "partitions in order, each once");
        assert!(parts.iter().all(|(partition, part)| *partition < 4 && part.num_rows() > 0), "no empty parts");
        assert_eq!(parts.iter().map(|(_, part)| part.num_rows()).sum::<usize>(), 500);
        let mut owner = std::collections::HashMap::new();
        let mut seen_values = Vec::new();
        for (partition, part) in &parts {
            let keys = part.column(0).as_string::<i32>();
            let values = part.column(1).as_primitive::<Int64Type>();
            for row in 0..part.num_rows() {
                let previous = owner.insert(keys.value(row).to_string(), partition);
                assert!(previous.is_none_or(|p| p == partition), "key {} split across partitions", keys.value(row));
                seen_values.push(values.value(row));
            }
            let in_order: Vec<i64> = values.values().to_vec();
            assert!(in_order.windows(2).all(|pair| pair[0] < pair[1]), "row order kept within a partition");
        }
        seen_values.sort_unstable();
        assert_eq!(seen_values, (0..500).collect::<Vec<i64>>());
    }
}
