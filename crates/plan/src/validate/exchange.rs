//! A hash exchange: its keys are input columns, and a plan has one of them so far.

use super::columns::{column_type, option, structure};
use crate::error::{NodeRef, PlanError};
use crate::schema::Schema;

pub(super) fn check(
    at: &NodeRef,
    input: &Schema,
    keys: &[String],
    partitions: u32,
    after_another_exchange: bool,
) -> Result<Schema, PlanError> {
    if keys.is_empty() {
        return Err(option(at, "keys", "needs at least one key"));
    }
    if partitions == 0 {
        return Err(option(at, "partitions", "must be at least 1"));
    }
    if after_another_exchange {
        return Err(structure(at, "only one exchange per plan is supported so far"));
    }
    for key in keys {
        column_type(at, input, key)?;
    }
    Ok(input.clone())
}
