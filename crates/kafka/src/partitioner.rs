//! Which partition a keyed record goes to, chosen as Kafka's default partitioner does (murmur2
//! of the key bytes, made non-negative, modulo the partition count), so records that sleet's
//! ingest server or generators write land where any other Kafka producer would put the same
//! key, and a job keyed by that key finds all of one key's records in one partition.

const SEED: u32 = 0x9747_b28c;
const MULTIPLIER: u32 = 0x5bd1_e995;
const SHIFT: u32 = 24;

/// Kafka's variant of MurmurHash2 (32-bit, the seed above), as a signed value like the Java
/// client's, so its test vectors compare directly.
pub fn murmur2(data: &[u8]) -> i32 {
    let mut hash = SEED ^ data.len() as u32;
    let mut chunks = data.chunks_exact(4);
    for chunk in &mut chunks {
        let mut k = u32::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
        k = k.wrapping_mul(MULTIPLIER);
        k ^= k >> SHIFT;
        k = k.wrapping_mul(MULTIPLIER);
        hash = hash.wrapping_mul(MULTIPLIER) ^ k;
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        // The Java client folds the last one to three bytes in from the highest down.
        for (index, byte) in tail.iter().enumerate().rev() {
            hash ^= (*byte as u32) << (8 * index);
        }
        hash = hash.wrapping_mul(MULTIPLIER);
    }
    hash ^= hash >> 13;
    hash = hash.wrapping_mul(MULTIPLIER);
    hash ^= hash >> 15;
    hash as i32
}

/// The partition of `partitions` that Kafka's default partitioner picks for `key`.
pub fn murmur2_partition(key: &[u8], partitions: u32) -> u32 {
    assert!(partitions > 0, "a topic has at least one partition");
    (murmur2(key) as u32 & 0x7fff_ffff) % partitions
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Values printed by the Java client 4.1.1 (`org.apache.kafka.common.utils.Utils.murmur2`
    /// and `toPositive(h) % n`), run against the jars `scripts/kafka.sh` fetches.
    const JAVA_CLIENT: [(&str, i32, [u32; 3]); 6] = [
        ("21", -973_932_308, [0, 0, 0]),
        ("foobar", -790_332_482, [0, 0, 2]),
        ("a-little-bit-long-string", -985_981_536, [0, 2, 0]),
        ("gateway-0001", 854_216_796, [0, 0, 0]),
        ("gw-42", -1_278_661_474, [0, 1, 2]),
        ("", 275_646_681, [1, 0, 1]),
    ];

    #[test]
    fn hashes_and_partitions_match_the_java_client() {
        for (key, hash, by_count) in JAVA_CLIENT {
            assert_eq!(murmur2(key.as_bytes()), hash, "murmur2({key:?})");
            for (partitions, expected) in [2, 3, 4].into_iter().zip(by_count) {
                assert_eq!(murmur2_partition(key.as_bytes(), partitions), expected, "{key:?} over {partitions}");
            }
        }
    }
}
