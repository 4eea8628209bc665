//! Errors found in a plan before anything runs; each names the node and field at fault.

use crate::schema::DataType;

/// Identifies a node for error messages: its position in the plan and its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    pub index: usize,
    pub kind: &'static str,
}

impl std::fmt::Display for NodeRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "node {} ({})", self.index, self.kind)
    }
}

/// Every variant is the user's fault: the plan or job file is wrong.
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("{node}: unknown column `{column}` (available: {available})")]
    UnknownColumn { node: NodeRef, column: String, available: String },
    #[error("{node}: `{field}` has type {found}, expected {expected}")]
    TypeMismatch { node: NodeRef, field: String, expected: String, found: DataType },
    #[error("{node}: {reason}")]
    Structure { node: NodeRef, reason: String },
    #[error("{node}: option `{field}`: {reason}")]
    InvalidOption { node: NodeRef, field: String, reason: String },
    #[error("setting `{field}`: {reason}")]
    InvalidSetting { field: String, reason: String },
    #[error("plan is empty: it needs at least a source and a sink")]
    Empty,
    #[error("the JSON does not describe a job")]
    JobFile(#[source] serde_json::Error),
}
