//! How much time a `gen … --count N` backlog covers: the shortest length whose records number
//! at least N.

/// The smallest length (ms, at least 1 unless `count` is 0) for which `records_in(length)`,
/// non-decreasing in the length, reaches `count`: doubled until it does, then bisected.
pub(crate) fn shortest_length(count: u64, records_in: impl Fn(i64) -> u64) -> i64 {
    if count == 0 {
        return 0;
    }
    let (mut low, mut high) = (0i64, 1i64);
    while records_in(high) < count {
        high *= 2;
    }
    while high - low > 1 {
        let middle = low + (high - low) / 2;
        if records_in(middle) >= count {
            high = middle;
        } else {
            low = middle;
        }
    }
    high
}
