//! Scalar expressions over the columns of one row: their forms, builders and SQL-like text.
//! Their type rules live in `expr_type.rs`.

use serde::{Deserialize, Serialize};

pub use crate::expr_type::ExprTypeError;
use crate::schema::DataType;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scalar {
    Utf8(String),
    Int64(i64),
    Float64(f64),
    Boolean(bool),
    /// SQL's NULL, with the type its context gives it (`{"null": "int64"}`): every
    /// expression has one type, so the planner types a bare NULL from its neighbours.
    Null(DataType),
}

impl Scalar {
    pub fn data_type(&self) -> DataType {
        match self {
            Scalar::Utf8(_) => DataType::Utf8,
            Scalar::Int64(_) => DataType::Int64,
            Scalar::Float64(_) => DataType::Float64,
            Scalar::Boolean(_) => DataType::Boolean,
            Scalar::Null(data_type) => *data_type,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Add,
    Subtract,
    Multiply,
    Divide,
    Modulo,
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    /// SQL's `||`: NULL when either side is.
    Concat,
}

impl BinaryOp {
    pub fn is_arithmetic(self) -> bool {
        matches!(self, BinaryOp::Add | BinaryOp::Subtract | BinaryOp::Multiply | BinaryOp::Divide | BinaryOp::Modulo)
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::NotEq | BinaryOp::Lt | BinaryOp::LtEq | BinaryOp::Gt | BinaryOp::GtEq)
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }

    pub fn symbol(self) -> &'static str {
        match self {
            BinaryOp::Add => "+",
            BinaryOp::Subtract => "-",
            BinaryOp::Multiply => "*",
            BinaryOp::Divide => "/",
            BinaryOp::Modulo => "%",
            BinaryOp::Eq => "=",
            BinaryOp::NotEq => "!=",
            BinaryOp::Lt => "<",
            BinaryOp::LtEq => "<=",
            BinaryOp::Gt => ">",
            BinaryOp::GtEq => ">=",
            BinaryOp::And => "AND",
            BinaryOp::Or => "OR",
            BinaryOp::Concat => "||",
        }
    }
}

/// The named scalar functions; their argument and result types are in `expr_type.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ScalarFunction {
    /// The first argument that is not NULL; arguments share one type after numeric promotion.
    Coalesce,
    Lower,
    Upper,
    /// Length in characters (Unicode scalar values), not bytes.
    CharLength,
    /// `substring(s, start [, length])`, SQL's 1-based `start`.
    Substring,
    /// Joins its arguments' text, skipping NULLs (unlike `||`).
    Concat,
    /// Removes leading and trailing spaces (only `' '`, as SQL's `TRIM(s)`).
    Trim,
    Ltrim,
    Rtrim,
    StartsWith,
    Abs,
    Floor,
    Ceil,
    /// `round(x [, digits])`, halves away from zero; `digits` is an int64 literal, negative
    /// rounds to tens, hundreds and so on.
    Round,
    /// `date_trunc(unit, t)` floors int64 milliseconds since the epoch to the start of its UTC
    /// `'second'`, `'minute'`, `'hour'`, `'day'` or `'week'` (weeks start on Monday).
    DateTrunc,
}

impl ScalarFunction {
    pub const ALL: [ScalarFunction; 15] = [
        ScalarFunction::Coalesce,
        ScalarFunction::Lower,
        ScalarFunction::Upper,
        ScalarFunction::CharLength,
        ScalarFunction::Substring,
        ScalarFunction::Concat,
        ScalarFunction::Trim,
        ScalarFunction::Ltrim,
        ScalarFunction::Rtrim,
        ScalarFunction::StartsWith,
        ScalarFunction::Abs,
        ScalarFunction::Floor,
        ScalarFunction::Ceil,
        ScalarFunction::Round,
        ScalarFunction::DateTrunc,
    ];

    /// The SQL name, also the JSON one.
    pub fn name(self) -> &'static str {
        match self {
            ScalarFunction::Coalesce => "coalesce",
            ScalarFunction::Lower => "lower",
            ScalarFunction::Upper => "upper",
            ScalarFunction::CharLength => "char_length",
            ScalarFunction::Substring => "substring",
            ScalarFunction::Concat => "concat",
            ScalarFunction::Trim => "trim",
            ScalarFunction::Ltrim => "ltrim",
            ScalarFunction::Rtrim => "rtrim",
            ScalarFunction::StartsWith => "starts_with",
            ScalarFunction::Abs => "abs",
            ScalarFunction::Floor => "floor",
            ScalarFunction::Ceil => "ceil",
            ScalarFunction::Round => "round",
            ScalarFunction::DateTrunc => "date_trunc",
        }
    }

    /// The function a SQL name (any case) calls, for a front end resolving calls.
    pub fn from_name(name: &str) -> Option<ScalarFunction> {
        ScalarFunction::ALL.into_iter().find(|function| function.name().eq_ignore_ascii_case(name))
    }
}

/// One `WHEN when THEN then` of a searched `CASE`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseBranch {
    pub when: Expr,
    pub then: Expr,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    Column(String),
    Literal(Scalar),
    Binary {
        op: BinaryOp,
        left: Box<Expr>,
        right: Box<Expr>,
    },
    Not(Box<Expr>),
    Cast {
        expr: Box<Expr>,
        to: DataType,
    },
    /// Start of the tumbling window of `size_ms` holding the timestamp `expr`
    /// (floor division, so negative timestamps land in the window below them).
    WindowStart {
        expr: Box<Expr>,
        size_ms: i64,
    },
    /// Unary minus.
    Negate(Box<Expr>),
    /// `expr IS NULL`, or `IS NOT NULL` when `negated`; never NULL itself.
    IsNull {
        expr: Box<Expr>,
        #[serde(default)]
        negated: bool,
    },
    /// `expr IN (list)`, or `NOT IN` when `negated`, with SQL's NULLs: no match and a NULL in
    /// the list gives NULL, not false.
    InList {
        expr: Box<Expr>,
        list: Vec<Expr>,
        #[serde(default)]
        negated: bool,
    },
    /// `expr LIKE pattern` on utf8: `%` any run of characters, `_` one character, `\` escapes.
    Like {
        expr: Box<Expr>,
        pattern: Box<Expr>,
        #[serde(default)]
        negated: bool,
    },
    /// Searched `CASE`: the `then` of the first branch whose `when` is true, else `else`
    /// (NULL when absent). A branch's `then` is evaluated only on the rows that take it, so
    /// `CASE WHEN d != 0 THEN n / d END` never divides by zero.
    Case {
        branches: Vec<CaseBranch>,
        #[serde(rename = "else", default, skip_serializing_if = "Option::is_none")]
        otherwise: Option<Box<Expr>>,
    },
    Function {
        name: ScalarFunction,
        args: Vec<Expr>,
    },
}

pub fn col(name: impl Into<String>) -> Expr {
    Expr::Column(name.into())
}

pub fn lit(value: impl Into<Scalar>) -> Expr {
    Expr::Literal(value.into())
}

impl From<&str> for Scalar {
    fn from(value: &str) -> Self {
        Scalar::Utf8(value.to_string())
    }
}
impl From<String> for Scalar {
    fn from(value: String) -> Self {
        Scalar::Utf8(value)
    }
}
impl From<i64> for Scalar {
    fn from(value: i64) -> Self {
        Scalar::Int64(value)
    }
}
impl From<f64> for Scalar {
    fn from(value: f64) -> Self {
        Scalar::Float64(value)
    }
}
impl From<bool> for Scalar {
    fn from(value: bool) -> Self {
        Scalar::Boolean(value)
    }
}

// Builder names mirror the SQL operators; they build expressions, not values, so the std
// operator traits (which would evaluate) are deliberately not implemented.
macro_rules! binary_builder {
    ($($name:ident => $op:ident),* $(,)?) => {
        #[allow(clippy::should_implement_trait, reason = "they build expressions; the operator traits would evaluate")]
        impl Expr {
            $(pub fn $name(self, right: Expr) -> Expr {
                Expr::Binary { op: BinaryOp::$op, left: Box::new(self), right: Box::new(right) }
            })*
        }
    };
}

binary_builder!(
    add => Add, subtract => Subtract, multiply => Multiply, divide => Divide, modulo => Modulo,
    eq => Eq, not_eq => NotEq, lt => Lt, lt_eq => LtEq, gt => Gt, gt_eq => GtEq,
    and => And, or => Or, concat => Concat,
);

impl Expr {
    #[allow(clippy::should_implement_trait, reason = "they build expressions; the operator traits would evaluate")]
    pub fn not(self) -> Expr {
        Expr::Not(Box::new(self))
    }

    pub fn cast(self, to: DataType) -> Expr {
        Expr::Cast { expr: Box::new(self), to }
    }

    pub fn window_start(self, size_ms: i64) -> Expr {
        Expr::WindowStart { expr: Box::new(self), size_ms }
    }

    pub fn negate(self) -> Expr {
        Expr::Negate(Box::new(self))
    }

    pub fn is_null(self) -> Expr {
        Expr::IsNull { expr: Box::new(self), negated: false }
    }

    pub fn is_not_null(self) -> Expr {
        Expr::IsNull { expr: Box::new(self), negated: true }
    }

    pub fn in_list(self, list: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::InList { expr: Box::new(self), list: list.into_iter().collect(), negated: false }
    }

    pub fn not_in_list(self, list: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::InList { expr: Box::new(self), list: list.into_iter().collect(), negated: true }
    }

    pub fn like(self, pattern: Expr) -> Expr {
        Expr::Like { expr: Box::new(self), pattern: Box::new(pattern), negated: false }
    }

    pub fn not_like(self, pattern: Expr) -> Expr {
        Expr::Like { expr: Box::new(self), pattern: Box::new(pattern), negated: true }
    }

    /// Searched `CASE WHEN when THEN then … [ELSE otherwise] END`.
    pub fn case(branches: impl IntoIterator<Item = (Expr, Expr)>, otherwise: Option<Expr>) -> Expr {
        Expr::Case {
            branches: branches.into_iter().map(|(when, then)| CaseBranch { when, then }).collect(),
            otherwise: otherwise.map(Box::new),
        }
    }

    /// Simple `CASE operand WHEN value THEN then … END`, as the searched form comparing
    /// `operand = value`, which gives SQL's meaning: a NULL operand matches no branch.
    pub fn simple_case(
        operand: Expr,
        branches: impl IntoIterator<Item = (Expr, Expr)>,
        otherwise: Option<Expr>,
    ) -> Expr {
        let searched = branches.into_iter().map(|(value, then)| (operand.clone().eq(value), then));
        Expr::case(searched, otherwise)
    }

    pub fn call(name: ScalarFunction, args: impl IntoIterator<Item = Expr>) -> Expr {
        Expr::Function { name, args: args.into_iter().collect() }
    }

    /// The columns this expression reads, in first-use order.
    pub fn columns(&self) -> Vec<&str> {
        let mut out = Vec::new();
        self.collect_columns(&mut out);
        out
    }

    fn collect_columns<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Column(name) => {
                if !out.contains(&name.as_str()) {
                    out.push(name)
                }
            }
            Expr::Literal(_) => {}
            Expr::Binary { left, right, .. } | Expr::Like { expr: left, pattern: right, .. } => {
                left.collect_columns(out);
                right.collect_columns(out);
            }
            Expr::Not(inner)
            | Expr::Negate(inner)
            | Expr::IsNull { expr: inner, .. }
            | Expr::Cast { expr: inner, .. }
            | Expr::WindowStart { expr: inner, .. } => inner.collect_columns(out),
            Expr::InList { expr, list, .. } => {
                expr.collect_columns(out);
                list.iter().for_each(|item| item.collect_columns(out));
            }
            Expr::Case { branches, otherwise } => {
                for branch in branches {
                    branch.when.collect_columns(out);
                    branch.then.collect_columns(out);
                }
                if let Some(otherwise) = otherwise {
                    otherwise.collect_columns(out);
                }
            }
            Expr::Function { args, .. } => args.iter().for_each(|arg| arg.collect_columns(out)),
        }
    }

    /// This expression with each column `replace` maps replaced by what it maps to, the
    /// others kept: an expression over one projection's output rewritten over its input.
    pub fn replace_columns(&self, replace: &dyn Fn(&str) -> Option<Expr>) -> Expr {
        let boxed = |inner: &Expr| Box::new(inner.replace_columns(replace));
        match self {
            Expr::Column(name) => replace(name).unwrap_or_else(|| self.clone()),
            Expr::Literal(_) => self.clone(),
            Expr::Binary { op, left, right } => Expr::Binary { op: *op, left: boxed(left), right: boxed(right) },
            Expr::Not(inner) => Expr::Not(boxed(inner)),
            Expr::Negate(inner) => Expr::Negate(boxed(inner)),
            Expr::Cast { expr, to } => Expr::Cast { expr: boxed(expr), to: *to },
            Expr::WindowStart { expr, size_ms } => Expr::WindowStart { expr: boxed(expr), size_ms: *size_ms },
            Expr::IsNull { expr, negated } => Expr::IsNull { expr: boxed(expr), negated: *negated },
            Expr::InList { expr, list, negated } => Expr::InList {
                expr: boxed(expr),
                list: list.iter().map(|item| item.replace_columns(replace)).collect(),
                negated: *negated,
            },
            Expr::Like { expr, pattern, negated } => {
                Expr::Like { expr: boxed(expr), pattern: boxed(pattern), negated: *negated }
            }
            Expr::Case { branches, otherwise } => Expr::Case {
                branches: branches
                    .iter()
                    .map(|branch| CaseBranch {
                        when: branch.when.replace_columns(replace),
                        then: branch.then.replace_columns(replace),
                    })
                    .collect(),
                otherwise: otherwise.as_deref().map(boxed),
            },
            Expr::Function { name, args } => {
                Expr::Function { name: *name, args: args.iter().map(|arg| arg.replace_columns(replace)).collect() }
            }
        }
    }

    /// A readable name for a projected expression without an alias.
    pub fn default_name(&self) -> String {
        match self {
            Expr::Column(name) => name.clone(),
            other => format!("{other}"),
        }
    }
}

impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Utf8(value) => write!(f, "{value:?}"),
            Scalar::Int64(value) => write!(f, "{value}"),
            Scalar::Float64(value) => write!(f, "{value}"),
            Scalar::Boolean(value) => write!(f, "{value}"),
            Scalar::Null(data_type) => write!(f, "CAST(NULL AS {data_type})"),
        }
    }
}

impl std::fmt::Display for ScalarFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Writes `items` separated by `, `.
fn comma_separated<'a>(f: &mut std::fmt::Formatter<'_>, items: impl IntoIterator<Item = &'a Expr>) -> std::fmt::Result {
    for (index, item) in items.into_iter().enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{item}")?;
    }
    Ok(())
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let not = |negated: &bool| if *negated { "NOT " } else { "" };
        match self {
            Expr::Column(name) => write!(f, "{name}"),
            Expr::Literal(value) => write!(f, "{value}"),
            Expr::Binary { op, left, right } => write!(f, "({left} {} {right})", op.symbol()),
            Expr::Not(inner) => write!(f, "NOT {inner}"),
            Expr::Cast { expr, to } => write!(f, "CAST({expr} AS {to})"),
            Expr::WindowStart { expr, size_ms } => write!(f, "window_start({expr}, {size_ms})"),
            Expr::Negate(inner) => write!(f, "(-{inner})"),
            Expr::IsNull { expr, negated } => write!(f, "({expr} IS {}NULL)", not(negated)),
            Expr::InList { expr, list, negated } => {
                write!(f, "({expr} {}IN (", not(negated))?;
                comma_separated(f, list)?;
                f.write_str("))")
            }
            Expr::Like { expr, pattern, negated } => write!(f, "({expr} {}LIKE {pattern})", not(negated)),
            Expr::Case { branches, otherwise } => {
                f.write_str("CASE")?;
                for CaseBranch { when, then } in branches {
                    write!(f, " WHEN {when} THEN {then}")?;
                }
                if let Some(otherwise) = otherwise {
                    write!(f, " ELSE {otherwise}")?;
                }
                f.write_str(" END")
            }
            Expr::Function { name, args } => {
                write!(f, "{name}(")?;
                comma_separated(f, args)?;
                f.write_str(")")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `json` parses to `expr` and `expr` serializes back to exactly `json`.
    fn check_json(json: &str, expr: Expr) {
        let parsed: Expr = serde_json::from_str(json).unwrap_or_else(|error| panic!("parsing {json}: {error}"));
        assert_eq!(parsed, expr, "parsing {json}");
        assert_eq!(serde_json::to_string(&expr).expect("serializes"), json, "serializing `{expr}`");
    }

    #[test]
    fn the_json_of_the_first_expression_forms_is_unchanged() {
        check_json(
            r#"{"binary":{"op":"divide","left":{"column":"date"},"right":{"literal":{"int64":86400000}}}}"#,
            col("date").divide(lit(86_400_000)),
        );
        check_json(
            r#"{"binary":{"op":"and","left":{"literal":{"boolean":true}},"right":{"not":{"column":"b"}}}}"#,
            lit(true).and(col("b").not()),
        );
        check_json(r#"{"cast":{"expr":{"literal":{"float64":0.5}},"to":"utf8"}}"#, lit(0.5).cast(DataType::Utf8));
        check_json(r#"{"window_start":{"expr":{"column":"t"},"size_ms":10000}}"#, col("t").window_start(10_000));
        check_json(r#"{"literal":{"utf8":"view"}}"#, lit("view"));
    }

    #[test]
    fn replacing_columns_rewrites_every_reference_and_keeps_the_rest() {
        let expr = Expr::case([(col("a").is_null(), col("b").in_list([col("a"), lit(1)]))], Some(col("c").negate()));
        let replaced = expr.replace_columns(&|name| (name == "a").then(|| col("x").add(lit(2))));
        let expected = Expr::case(
            [(col("x").add(lit(2)).is_null(), col("b").in_list([col("x").add(lit(2)), lit(1)]))],
            Some(col("c").negate()),
        );
        assert_eq!(replaced, expected);
        assert_eq!(expr.replace_columns(&|_| None), expr);
    }

    #[test]
    fn the_new_forms_round_trip_through_json() {
        check_json(r#"{"negate":{"column":"i"}}"#, col("i").negate());
        check_json(r#"{"literal":{"null":"int64"}}"#, lit(Scalar::Null(DataType::Int64)));
        check_json(r#"{"is_null":{"expr":{"column":"i"},"negated":true}}"#, col("i").is_not_null());
        check_json(
            r#"{"in_list":{"expr":{"column":"i"},"list":[{"literal":{"int64":1}}],"negated":false}}"#,
            col("i").in_list([lit(1)]),
        );
        check_json(
            r#"{"like":{"expr":{"column":"s"},"pattern":{"literal":{"utf8":"a%"}},"negated":true}}"#,
            col("s").not_like(lit("a%")),
        );
        check_json(
            r#"{"case":{"branches":[{"when":{"column":"b"},"then":{"literal":{"int64":1}}}],"else":{"literal":{"int64":0}}}}"#,
            Expr::case([(col("b"), lit(1))], Some(lit(0))),
        );
        check_json(
            r#"{"case":{"branches":[{"when":{"column":"b"},"then":{"literal":{"int64":1}}}]}}"#,
            Expr::case([(col("b"), lit(1))], None),
        );
        check_json(
            r#"{"function":{"name":"char_length","args":[{"column":"s"}]}}"#,
            Expr::call(ScalarFunction::CharLength, [col("s")]),
        );
        check_json(
            r#"{"binary":{"op":"concat","left":{"column":"s"},"right":{"column":"t"}}}"#,
            col("s").concat(col("t")),
        );
    }

    #[test]
    fn negated_may_be_left_out_of_json() {
        let parsed: Expr = serde_json::from_str(r#"{"is_null":{"expr":{"column":"i"}}}"#).expect("parses");
        assert_eq!(parsed, col("i").is_null());
    }

    #[test]
    fn every_function_is_named_alike_in_json_sql_and_lookup() {
        for function in ScalarFunction::ALL {
            let json = serde_json::to_string(&function).expect("serializes");
            assert_eq!(json, format!("\"{}\"", function.name()));
            assert_eq!(ScalarFunction::from_name(&function.name().to_uppercase()), Some(function));
        }
        assert_eq!(ScalarFunction::from_name("no_such_function"), None);
    }

    #[test]
    fn display_is_sql_like_text() {
        let check = |expr: Expr, expected: &str| assert_eq!(expr.to_string(), expected);
        check(lit(0.908).multiply(col("price")), "(0.908 * price)");
        check(col("i").negate().is_null(), "((-i) IS NULL)");
        check(col("i").not_in_list([lit(1), lit(2)]), "(i NOT IN (1, 2))");
        check(col("s").like(lit("a_%")), "(s LIKE \"a_%\")");
        check(col("s").concat(lit("x")), "(s || \"x\")");
        check(
            Expr::simple_case(col("i"), [(lit(1), lit("one"))], Some(lit(Scalar::Null(DataType::Utf8)))),
            "CASE WHEN (i = 1) THEN \"one\" ELSE CAST(NULL AS utf8) END",
        );
        check(Expr::call(ScalarFunction::Substring, [col("s"), lit(2), lit(3)]), "substring(s, 2, 3)");
        check(Expr::call(ScalarFunction::DateTrunc, [lit("day"), col("t")]), "date_trunc(\"day\", t)");
    }

    #[test]
    fn columns_are_collected_from_every_form_in_first_use_order() {
        let expr = Expr::case(
            [(col("b").is_null(), Expr::call(ScalarFunction::Concat, [col("s"), col("t")]))],
            Some(col("u").like(col("s")).cast(DataType::Utf8)),
        )
        .concat(col("v").negate().in_list([col("w")]).cast(DataType::Utf8));
        assert_eq!(expr.columns(), vec!["b", "s", "t", "u", "v", "w"]);
    }
}
