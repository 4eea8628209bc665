//! Evaluates `Expr`s over a `RecordBatch` with Arrow compute kernels. Literals stay scalars
//! (one-element arrays wrapped as `Scalar`), so `col = 'view'` never builds a full column.
//! `CASE` and `coalesce` evaluate each branch only on the rows still undecided; the named
//! functions are in `scalar_functions.rs`.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, Datum, Float64Array, Int64Array, RecordBatch, Scalar, StringArray,
    UInt32Array,
};
use arrow_schema::{ArrowError, DataType as ArrowType};
use sleet_plan::{BinaryOp, CaseBranch, Expr, Scalar as PlanScalar, ScalarFunction};

use crate::error::ExecError;
use crate::scalar_functions;
use crate::types::to_arrow_type;

/// A value during evaluation: a column of the batch's length, or one value for every row.
#[derive(Clone)]
pub(crate) enum Value {
    Column(ArrayRef),
    Scalar(ArrayRef),
}

impl Value {
    pub(crate) fn array(&self) -> &ArrayRef {
        match self {
            Value::Column(array) | Value::Scalar(array) => array,
        }
    }

    fn data_type(&self) -> &ArrowType {
        self.array().data_type()
    }

    fn is_scalar(&self) -> bool {
        matches!(self, Value::Scalar(_))
    }

    pub(crate) fn map(self, f: impl FnOnce(&ArrayRef) -> Result<ArrayRef, ArrowError>) -> Result<Value, ArrowError> {
        Ok(match self {
            Value::Column(array) => Value::Column(f(&array)?),
            Value::Scalar(array) => Value::Scalar(f(&array)?),
        })
    }

    pub(crate) fn datum(&self) -> Box<dyn Datum> {
        match self {
            Value::Column(array) => Box::new(Arc::clone(array)),
            Value::Scalar(array) => Box::new(Scalar::new(Arc::clone(array))),
        }
    }

    fn into_column(self, rows: usize) -> Result<ArrayRef, ArrowError> {
        match self {
            Value::Column(array) => Ok(array),
            Value::Scalar(array) => {
                let zeros = UInt32Array::from(vec![0u32; rows]);
                arrow_select::take::take(array.as_ref(), &zeros, None)
            }
        }
    }
}

/// Operands brought to one length for a kernel without scalar support: the batch's when any
/// is a column, one row when all are scalars (the result is then a scalar too).
pub(crate) struct Aligned {
    pub(crate) arrays: Vec<ArrayRef>,
    scalar: bool,
}

impl Aligned {
    pub(crate) fn new(values: Vec<Value>, rows: usize) -> Result<Aligned, ArrowError> {
        let scalar = values.iter().all(Value::is_scalar);
        let length = if scalar { 1 } else { rows };
        let arrays = values.into_iter().map(|value| value.into_column(length)).collect::<Result<_, _>>()?;
        Ok(Aligned { arrays, scalar })
    }

    pub(crate) fn wrap(&self, array: ArrayRef) -> Value {
        if self.scalar {
            Value::Scalar(array)
        } else {
            Value::Column(array)
        }
    }
}

/// Applies a kernel taking `Datum`s; the result is a scalar when both operands are.
pub(crate) fn with_datums(
    left: &Value,
    right: &Value,
    kernel: impl FnOnce(&dyn Datum, &dyn Datum) -> Result<ArrayRef, ArrowError>,
) -> Result<Value, ArrowError> {
    let (l, r) = (left.datum(), right.datum());
    let array = kernel(l.as_ref(), r.as_ref())?;
    Ok(if left.is_scalar() && right.is_scalar() { Value::Scalar(array) } else { Value::Column(array) })
}

pub fn evaluate(expr: &Expr, batch: &RecordBatch) -> Result<ArrayRef, ExecError> {
    let value = eval(expr, batch)?;
    value.into_column(batch.num_rows()).map_err(ExecError::arrow("broadcasting a literal"))
}

fn eval(expr: &Expr, batch: &RecordBatch) -> Result<Value, ExecError> {
    let failed = |error: ArrowError| ExecError::Eval { expr: expr.to_string(), reason: error.to_string() };
    match expr {
        Expr::Column(name) => {
            batch.column_by_name(name).cloned().map(Value::Column).ok_or_else(|| ExecError::MissingColumn(name.clone()))
        }
        Expr::Literal(scalar) => Ok(Value::Scalar(literal(scalar))),
        Expr::Not(inner) => eval(inner, batch)?
            .map(|array| Ok(Arc::new(arrow_arith::boolean::not(array.as_boolean())?) as ArrayRef))
            .map_err(failed),
        Expr::Negate(inner) => eval(inner, batch)?.map(|array| arrow_arith::numeric::neg(array)).map_err(failed),
        Expr::IsNull { expr: inner, negated } => eval(inner, batch)?
            .map(|array| {
                let nulls = if *negated {
                    arrow_arith::boolean::is_not_null(array)?
                } else {
                    arrow_arith::boolean::is_null(array)?
                };
                Ok(Arc::new(nulls) as ArrayRef)
            })
            .map_err(failed),
        Expr::Cast { expr: inner, to } => {
            let to = to_arrow_type(*to);
            eval(inner, batch)?.map(|array| arrow_cast::cast(array, &to)).map_err(failed)
        }
        Expr::WindowStart { expr: inner, size_ms } => {
            let size = *size_ms;
            eval(inner, batch)?
                .map(|array| {
                    let starts: Int64Array = array.as_primitive::<Int64Type>().unary(|t| t.div_euclid(size) * size);
                    Ok(Arc::new(starts) as ArrayRef)
                })
                .map_err(failed)
        }
        Expr::Binary { op, left, right } => {
            let (left, right) = coerce(eval(left, batch)?, eval(right, batch)?).map_err(failed)?;
            binary(*op, left, right, batch.num_rows()).map_err(failed)
        }
        Expr::InList { expr: needle, list, negated } => {
            let needle = eval(needle, batch)?;
            let mut found: Option<Value> = None;
            for item in list {
                let (left, right) = coerce(needle.clone(), eval(item, batch)?).map_err(failed)?;
                let equal = binary(BinaryOp::Eq, left, right, batch.num_rows()).map_err(failed)?;
                found = Some(match found {
                    None => equal,
                    Some(found) => binary(BinaryOp::Or, found, equal, batch.num_rows()).map_err(failed)?,
                });
            }
            let found = found.ok_or_else(|| failed(ArrowError::InvalidArgumentError("IN with no values".into())))?;
            if *negated {
                found.map(|array| Ok(Arc::new(arrow_arith::boolean::not(array.as_boolean())?) as ArrayRef))
            } else {
                Ok(found)
            }
            .map_err(failed)
        }
        Expr::Like { expr: text, pattern, negated } => {
            let kernel = if *negated { arrow_string::like::nlike } else { arrow_string::like::like };
            with_datums(&eval(text, batch)?, &eval(pattern, batch)?, |text, pattern| {
                Ok(Arc::new(kernel(text, pattern)?) as ArrayRef)
            })
            .map_err(failed)
        }
        Expr::Case { branches, otherwise } => {
            let mut steps: Vec<Step> =
                branches.iter().map(|CaseBranch { when, then }| Step::When(when, then)).collect();
            steps.extend(otherwise.as_deref().map(Step::Always));
            first_taken(expr, &steps, batch)
        }
        Expr::Function { name: ScalarFunction::Coalesce, args } => {
            let (last, rest) = args
                .split_last()
                .ok_or_else(|| failed(ArrowError::InvalidArgumentError("coalesce with no arguments".into())))?;
            let mut steps: Vec<Step> = rest.iter().map(Step::NotNull).collect();
            steps.push(Step::Always(last));
            first_taken(expr, &steps, batch)
        }
        Expr::Function { name, args } => {
            let values = args.iter().map(|arg| eval(arg, batch)).collect::<Result<Vec<_>, _>>()?;
            scalar_functions::call(*name, args, values, batch.num_rows()).map_err(failed)
        }
    }
}

pub(crate) fn literal(scalar: &PlanScalar) -> ArrayRef {
    match scalar {
        PlanScalar::Utf8(value) => Arc::new(StringArray::from(vec![value.as_str()])),
        PlanScalar::Int64(value) => Arc::new(Int64Array::from(vec![*value])),
        PlanScalar::Float64(value) => Arc::new(Float64Array::from(vec![*value])),
        PlanScalar::Boolean(value) => Arc::new(BooleanArray::from(vec![*value])),
        PlanScalar::Null(data_type) => new_null_array(&to_arrow_type(*data_type), 1),
    }
}

/// Mixed int64/float64 operands meet at float64, the type the planner assigned.
fn coerce(left: Value, right: Value) -> Result<(Value, Value), ArrowError> {
    let to_float = |value: Value| value.map(|array| arrow_cast::cast(array, &ArrowType::Float64));
    match (left.data_type(), right.data_type()) {
        (ArrowType::Int64, ArrowType::Float64) => Ok((to_float(left)?, right)),
        (ArrowType::Float64, ArrowType::Int64) => Ok((left, to_float(right)?)),
        _ => Ok((left, right)),
    }
}

fn binary(op: BinaryOp, left: Value, right: Value, rows: usize) -> Result<Value, ArrowError> {
    use arrow_arith::numeric;
    use arrow_ord::cmp;
    let boolean = |array: BooleanArray| Ok(Arc::new(array) as ArrayRef);
    match op {
        BinaryOp::Add => with_datums(&left, &right, numeric::add),
        BinaryOp::Subtract => with_datums(&left, &right, numeric::sub),
        BinaryOp::Multiply => with_datums(&left, &right, numeric::mul),
        BinaryOp::Divide => with_datums(&left, &right, numeric::div),
        BinaryOp::Modulo => with_datums(&left, &right, numeric::rem),
        BinaryOp::Eq => with_datums(&left, &right, |l, r| boolean(cmp::eq(l, r)?)),
        BinaryOp::NotEq => with_datums(&left, &right, |l, r| boolean(cmp::neq(l, r)?)),
        BinaryOp::Lt => with_datums(&left, &right, |l, r| boolean(cmp::lt(l, r)?)),
        BinaryOp::LtEq => with_datums(&left, &right, |l, r| boolean(cmp::lt_eq(l, r)?)),
        BinaryOp::Gt => with_datums(&left, &right, |l, r| boolean(cmp::gt(l, r)?)),
        BinaryOp::GtEq => with_datums(&left, &right, |l, r| boolean(cmp::gt_eq(l, r)?)),
        BinaryOp::And | BinaryOp::Or => {
            let operands = Aligned::new(vec![left, right], rows)?;
            let (left, right) = (operands.arrays[0].as_boolean(), operands.arrays[1].as_boolean());
            let array = if op == BinaryOp::And {
                arrow_arith::boolean::and_kleene(left, right)?
            } else {
                arrow_arith::boolean::or_kleene(left, right)?
            };
            Ok(operands.wrap(Arc::new(array)))
        }
        BinaryOp::Concat => {
            let operands = Aligned::new(vec![left, right], rows)?;
            let joined = arrow_string::concat_elements::concat_elements_utf8(
                operands.arrays[0].as_string::<i32>(),
                operands.arrays[1].as_string::<i32>(),
            )?;
            Ok(operands.wrap(Arc::new(joined)))
        }
    }
}

/// One way a row can be decided in `first_taken`.
enum Step<'a> {
    /// Rows where `when` is true take `then` (NULL counts as false).
    When(&'a Expr, &'a Expr),
    /// Rows where the expression is not NULL take it.
    NotNull(&'a Expr),
    /// Every row left takes the expression.
    Always(&'a Expr),
}

/// Builds a column from `steps` in order, each row taking the value of the first step that
/// takes it, NULL when none does. A step is evaluated only on the rows no earlier step took,
/// so a guarded `n / d` never sees the rows its guard excluded. Mixed int64 and float64
/// results are promoted to float64, as the planner typed them.
fn first_taken(expr: &Expr, steps: &[Step], batch: &RecordBatch) -> Result<Value, ExecError> {
    let failed = |error: ArrowError| ExecError::Eval { expr: expr.to_string(), reason: error.to_string() };
    let rows = batch.num_rows();
    // Only the columns the steps read are filtered from step to step.
    let read: Vec<usize> = expr.columns().iter().filter_map(|name| batch.schema().index_of(name).ok()).collect();
    let mut open = batch.project(&read).map_err(failed)?;
    let row_count = u32::try_from(rows).expect("a batch holds fewer than 2^32 rows");
    let mut open_rows = UInt32Array::from_iter_values(0..row_count);
    let mut parts: Vec<ArrayRef> = Vec::with_capacity(steps.len() + 1);
    // Rows no step takes point at the NULL pushed last, at `steps.len()`.
    let mut sources = vec![(steps.len(), 0); rows];
    for (part, step) in steps.iter().enumerate() {
        let (taken, values) = match step {
            Step::When(when, then) => {
                let when = evaluate(when, &open)?;
                let when = when.as_boolean();
                // A NULL condition does not take its row.
                let taken = match when.nulls() {
                    Some(_) => arrow_select::filter::prep_null_mask_filter(when),
                    None => when.clone(),
                };
                let taken_rows = arrow_select::filter::filter_record_batch(&open, &taken).map_err(failed)?;
                (taken, evaluate(then, &taken_rows)?)
            }
            Step::NotNull(value) => {
                let values = evaluate(value, &open)?;
                let taken = arrow_arith::boolean::is_not_null(&values).map_err(failed)?;
                let values = arrow_select::filter::filter(&values, &taken).map_err(failed)?;
                (taken, values)
            }
            Step::Always(value) => (BooleanArray::from(vec![true; open.num_rows()]), evaluate(value, &open)?),
        };
        let taken_rows = arrow_select::filter::filter(&open_rows, &taken).map_err(failed)?;
        for (index, row) in taken_rows.as_primitive::<arrow_array::types::UInt32Type>().values().iter().enumerate() {
            sources[*row as usize] = (part, index);
        }
        let left = arrow_arith::boolean::not(&taken).map_err(failed)?;
        open = arrow_select::filter::filter_record_batch(&open, &left).map_err(failed)?;
        open_rows = arrow_select::filter::filter(&open_rows, &left).map_err(failed)?.as_primitive().clone();
        parts.push(values);
    }
    let result_type = if parts.iter().any(|part| part.data_type() == &ArrowType::Float64) {
        ArrowType::Float64
    } else {
        parts.first().map(|part| part.data_type().clone()).unwrap_or(ArrowType::Null)
    };
    let mut parts =
        parts.iter().map(|part| arrow_cast::cast(part, &result_type)).collect::<Result<Vec<_>, _>>().map_err(failed)?;
    parts.push(new_null_array(&result_type, 1));
    let parts: Vec<&dyn Array> = parts.iter().map(|part| part.as_ref()).collect();
    let column = arrow_select::interleave::interleave(&parts, &sources).map_err(failed)?;
    Ok(Value::Column(column))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use sleet_plan::{col, lit, DataType};

    use super::*;

    fn batch(ints: Vec<Option<i64>>, floats: Vec<Option<f64>>, strings: Vec<Option<&str>>) -> RecordBatch {
        RecordBatch::try_from_iter([
            ("i", Arc::new(Int64Array::from(ints)) as ArrayRef),
            ("f", Arc::new(Float64Array::from(floats)) as ArrayRef),
            ("s", Arc::new(StringArray::from(strings)) as ArrayRef),
        ])
        .expect("batch")
    }

    fn ints(array: &ArrayRef) -> Vec<Option<i64>> {
        array.as_primitive::<Int64Type>().iter().collect()
    }

    fn bools(array: &ArrayRef) -> Vec<Option<bool>> {
        array.as_boolean().iter().collect()
    }

    #[test]
    fn arithmetic_and_comparison_with_literals() {
        let input =
            batch(vec![Some(1), None, Some(-7)], vec![Some(0.5), Some(1.5), None], vec![Some("a"), Some("b"), None]);
        assert_eq!(ints(&evaluate(&col("i").add(lit(10)), &input).expect("add")), vec![Some(11), None, Some(3)]);
        assert_eq!(bools(&evaluate(&col("s").eq(lit("b")), &input).expect("eq")), vec![Some(false), Some(true), None]);
        let mixed = evaluate(&col("i").add(col("f")), &input).expect("int + float");
        assert_eq!(
            mixed.as_primitive::<arrow_array::types::Float64Type>().iter().collect::<Vec<_>>(),
            vec![Some(1.5), None, None]
        );
        let constant = evaluate(&lit(2).multiply(lit(3)), &input).expect("constant");
        assert_eq!(ints(&constant), vec![Some(6); 3], "a constant expression fills every row");
    }

    #[test]
    fn division_by_zero_names_the_expression() {
        let input = batch(vec![Some(1)], vec![Some(1.0)], vec![Some("a")]);
        let error = evaluate(&col("i").divide(lit(0)), &input).expect_err("div by zero");
        assert!(error.to_string().contains("i"), "{error}");
    }

    #[test]
    fn window_start_floors_negative_times() {
        let input =
            batch(vec![Some(-1), Some(0), Some(9_999), Some(10_000), Some(-10_001)], vec![None; 5], vec![None; 5]);
        let starts = evaluate(&col("i").window_start(10_000), &input).expect("window start");
        assert_eq!(ints(&starts), vec![Some(-10_000), Some(0), Some(0), Some(10_000), Some(-20_000)]);
    }

    #[test]
    fn kleene_logic_and_cast() {
        let input = batch(vec![Some(1), None, Some(3)], vec![None; 3], vec![None; 3]);
        let predicate = col("i").gt(lit(1)).or(col("i").eq(lit(1)).not());
        assert_eq!(bools(&evaluate(&predicate, &input).expect("or")), vec![Some(false), None, Some(true)]);
        let cast = evaluate(&col("i").cast(DataType::Utf8), &input).expect("cast");
        assert_eq!(cast.as_string::<i32>().iter().collect::<Vec<_>>(), vec![Some("1"), None, Some("3")]);
    }

    proptest! {
        #[test]
        fn agrees_with_row_by_row_arithmetic(values in proptest::collection::vec(proptest::option::of(-1_000_000i64..1_000_000), 0..60), k in -1000i64..1000) {
            let input = batch(values.clone(), vec![None; values.len()], vec![None; values.len()]);
            let sum = ints(&evaluate(&col("i").add(lit(k)).subtract(col("i").multiply(lit(2))), &input).expect("eval"));
            let less = bools(&evaluate(&col("i").lt_eq(lit(k)), &input).expect("eval"));
            for (row, value) in values.iter().enumerate() {
                prop_assert_eq!(sum[row], value.map(|v| v + k - v * 2));
                prop_assert_eq!(less[row], value.map(|v| v <= k));
            }
        }
    }
}
