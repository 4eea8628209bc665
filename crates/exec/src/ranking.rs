//! The rank a top-N gives each entry of a group, from the entries' values in rank order
//! (largest first), under `ROW_NUMBER()` or `RANK()` (`sleet_plan::Ranking`), and which entries
//! it keeps. `top_k` ranks keys and `top_rows` rows with it, so both number ties alike.

use std::cmp::Ordering;

use sleet_plan::Ranking;

use crate::cell::{compare_cells, Cell};

/// The rank of each entry the ranking keeps, in order: `values` are the entries' values in
/// rank order. Under `RANK()` an entry equal to the one before it shares its rank (1 + the
/// entries strictly larger), and every entry ranked `k` or better is kept, however many tie.
pub(crate) fn ranks<'a>(
    ranking: Ranking,
    k: usize,
    values: impl Iterator<Item = &'a Cell> + 'a,
) -> impl Iterator<Item = i64> + 'a {
    let mut previous: Option<(&Cell, i64)> = None;
    values
        .enumerate()
        .map(move |(index, value)| {
            let position = index as i64 + 1;
            let rank = match (ranking, previous) {
                (Ranking::Rank, Some((before, rank))) if compare_cells(before, value) == Ordering::Equal => rank,
                _ => position,
            };
            previous = Some((value, rank));
            rank
        })
        .take_while(move |rank| *rank <= k as i64)
}

/// Whether a new entry of value `value` can enter a group whose kept entries' values are
/// `kept_values` (in rank order): a decision on the value alone when it can be made
/// (`Some`), or `None` when it ties the last kept entry under `ROW_NUMBER()`, where the
/// entries' tie-break order decides.
pub(crate) fn admits_value(
    ranking: Ranking,
    k: usize,
    kept_len: usize,
    last_kept: Option<&Cell>,
    value: &Cell,
) -> Option<bool> {
    let Some(last) = last_kept.filter(|_| kept_len >= k) else { return Some(true) };
    // Every kept entry is at least `last`; with `k` of them kept, one strictly smaller than
    // `last` ranks below `k`, one strictly larger pushes `last` (or a tie of it) out.
    match (compare_cells(value, last), ranking) {
        (Ordering::Less, _) => Some(false),
        (Ordering::Greater, _) => Some(true),
        (Ordering::Equal, Ranking::Rank) => Some(true),
        (Ordering::Equal, Ranking::RowNumber) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ranking: Ranking, k: usize, values: &[i64], expected: &[i64]) {
        let cells: Vec<Cell> = values.iter().map(|value| Cell::Int64(*value)).collect();
        let found: Vec<i64> = ranks(ranking, k, cells.iter()).collect();
        assert_eq!(found, expected, "{ranking:?} k={k} over {values:?}");
    }

    #[test]
    fn rank_shares_places_among_ties_and_keeps_every_tie_at_the_boundary() {
        check(Ranking::RowNumber, 2, &[9, 7, 7, 3], &[1, 2]);
        check(Ranking::Rank, 2, &[9, 7, 7, 3], &[1, 2, 2]);
        check(Ranking::Rank, 1, &[7, 7, 7, 3], &[1, 1, 1]);
        check(Ranking::Rank, 3, &[7, 7, 5, 5, 1], &[1, 1, 3, 3]);
        check(Ranking::Rank, 2, &[7, 7, 5], &[1, 1]);
        check(Ranking::Rank, 4, &[], &[]);
    }

    #[test]
    fn a_value_is_admitted_by_comparison_with_the_last_kept_when_the_group_is_full() {
        let last = Cell::Int64(5);
        assert_eq!(admits_value(Ranking::RowNumber, 2, 1, Some(&last), &Cell::Int64(1)), Some(true), "not full");
        assert_eq!(admits_value(Ranking::RowNumber, 2, 2, Some(&last), &Cell::Int64(4)), Some(false));
        assert_eq!(admits_value(Ranking::RowNumber, 2, 2, Some(&last), &Cell::Int64(6)), Some(true));
        assert_eq!(admits_value(Ranking::RowNumber, 2, 2, Some(&last), &Cell::Int64(5)), None);
        assert_eq!(admits_value(Ranking::Rank, 2, 3, Some(&last), &Cell::Int64(5)), Some(true));
        assert_eq!(admits_value(Ranking::Rank, 2, 3, Some(&last), &Cell::Int64(4)), Some(false));
    }
}
