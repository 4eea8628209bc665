//! A source's options; its output is always one column of raw records.

use super::columns::option;
use crate::error::{NodeRef, PlanError};
use crate::node::SourceSpec;
use crate::schema::{DataType, Field, Schema};

pub(super) fn check(at: &NodeRef, spec: &SourceSpec) -> Result<Schema, PlanError> {
    match spec {
        SourceSpec::Ysb(ysb) => {
            if ysb.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if !(0.0..=1.0).contains(&ysb.bad_fraction) {
                return Err(option(at, "bad_fraction", "must be between 0 and 1"));
            }
        }
        SourceSpec::Numbers(numbers) => {
            if numbers.partitions == 0 {
                return Err(option(at, "partitions", "must be at least 1"));
            }
            if numbers.numbers_per_batch == 0 {
                return Err(option(at, "numbers_per_batch", "must be at least 1"));
            }
            if numbers.keys == 0 {
                return Err(option(at, "keys", "must be at least 1"));
            }
        }
    }
    Ok(Schema::new(vec![Field::new("value", DataType::Binary)]))
}
