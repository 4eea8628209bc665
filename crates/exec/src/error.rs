//! The errors of operator execution. A bad *record* is never an error here: it becomes a
//! dead letter. These are failures of a whole batch or of the engine itself.

use arrow_schema::ArrowError;

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    /// The user's expression cannot be evaluated on this data (e.g. division by zero).
    #[error("expression `{expr}` failed: {reason}")]
    Eval { expr: String, reason: String },
    /// A snapshot handed to `restore` was not produced by `snapshot` (or is damaged).
    #[error("state snapshot is corrupt: {0}")]
    CorruptSnapshot(String),
    /// A lookup's table could not be loaded (its file is missing or malformed).
    #[error("loading a lookup table: {0}")]
    Table(String),
    /// A column the physical plan promised is missing: a planner bug.
    #[error("internal: column `{0}` missing from batch")]
    MissingColumn(String),
    /// A source handed already-decoded rows that do not match the stage's decoder: a bug of
    /// that source (or a plan that does not decode its input).
    #[error("internal: decoded source rows: {0}")]
    DecodedInput(String),
    /// A stage's Avro schema does not parse: validation parses it first, so the stage plan
    /// did not come from `plan_stages`.
    #[error("internal: the stage's Avro schema: {0}")]
    AvroSchema(String),
    /// A stage plan `plan_stages` would not make (a map-side partial it cannot split off).
    #[error("internal: the stage plan: {0}")]
    StagePlan(String),
    #[error("internal: {context}")]
    Arrow {
        context: String,
        #[source]
        source: ArrowError,
    },
}

impl ExecError {
    pub fn arrow(context: impl Into<String>) -> impl FnOnce(ArrowError) -> ExecError {
        let context = context.into();
        move |source| ExecError::Arrow { context, source }
    }
}
