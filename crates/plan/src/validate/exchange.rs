//! A hash exchange: its keys are input columns. A plan may have several; each starts a
//! stage that reads the one before through a shuffle, and the stateful operators after it are
//! partitioned by its keys.

use super::columns::{column_type, option};
use crate::error::{NodeRef, PlanError};
use crate::schema::Schema;

pub(super) fn check(at: &NodeRef, input: &Schema, keys: &[String], partitions: u32) -> Result<Schema, PlanError> {
    if keys.is_empty() {
        return Err(option(at, "keys", "needs at least one key"));
    }
    if partitions == 0 {
        return Err(option(at, "partitions", "must be at least 1"));
    }
    for key in keys {
        column_type(at, input, key)?;
    }
    Ok(input.clone())
}
