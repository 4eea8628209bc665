//! The crate's one error type. Everything here is pure, so the only errors are the user's:
//! a what-if specification that does not parse. (`thiserror` is not a dependency of this
//! crate, so `Display` and `Error` are written out.)

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClarityError {
    /// The user's fault: one item of a what-if specification (`cores=2,net=0.25,…`).
    BadScenario { item: String, reason: String },
}

impl fmt::Display for ClarityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClarityError::BadScenario { item, reason } => write!(f, "what-if item `{item}`: {reason}"),
        }
    }
}

impl std::error::Error for ClarityError {}
