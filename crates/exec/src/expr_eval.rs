//! Evaluates `Expr`s over a `RecordBatch` with Arrow compute kernels. Literals stay scalars
//! (one-element arrays wrapped as `Scalar`), so `col = 'view'` never builds a full column.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, ArrayRef, BooleanArray, Datum, Float64Array, Int64Array, RecordBatch, Scalar, StringArray};
use arrow_schema::{ArrowError, DataType as ArrowType};
use sleet_plan::{BinaryOp, Expr, Scalar as PlanScalar};

use crate::error::ExecError;
use crate::types::to_arrow_type;

/// A value during evaluation: a column of the batch's length, or one value for every row.
enum Value {
    Column(ArrayRef),
    Scalar(ArrayRef),
}

impl Value {
    fn array(&self) -> &ArrayRef {
        match self {
            Value::Column(array) | Value::Scalar(array) => array,
        }
    }

    fn data_type(&self) -> &ArrowType {
        self.array().data_type()
    }

    fn map(self, f: impl FnOnce(&ArrayRef) -> Result<ArrayRef, ArrowError>) -> Result<Value, ArrowError> {
        Ok(match self {
            Value::Column(array) => Value::Column(f(&array)?),
            Value::Scalar(array) => Value::Scalar(f(&array)?),
        })
    }

    fn datum(&self) -> Box<dyn Datum> {
        match self {
            Value::Column(array) => Box::new(Arc::clone(array)),
            Value::Scalar(array) => Box::new(Scalar::new(Arc::clone(array))),
        }
    }

    fn into_column(self, rows: usize) -> Result<ArrayRef, ArrowError> {
        match self {
            Value::Column(array) => Ok(array),
            Value::Scalar(array) => {
                let zeros = arrow_array::UInt32Array::from(vec![0u32; rows]);
                arrow_select::take::take(array.as_ref(), &zeros, None)
            }
        }
    }
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
    }
}

fn literal(scalar: &PlanScalar) -> ArrayRef {
    match scalar {
        PlanScalar::Utf8(value) => Arc::new(StringArray::from(vec![value.as_str()])),
        PlanScalar::Int64(value) => Arc::new(Int64Array::from(vec![*value])),
        PlanScalar::Float64(value) => Arc::new(Float64Array::from(vec![*value])),
        PlanScalar::Boolean(value) => Arc::new(BooleanArray::from(vec![*value])),
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
    let both_scalar = matches!((&left, &right), (Value::Scalar(_), Value::Scalar(_)));
    let wrap = |array: ArrayRef| if both_scalar { Value::Scalar(array) } else { Value::Column(array) };
    use arrow_arith::numeric;
    use arrow_ord::cmp;
    let (l, r) = (left.datum(), right.datum());
    let (l, r) = (l.as_ref(), r.as_ref());
    let array: ArrayRef = match op {
        BinaryOp::Add => numeric::add(l, r)?,
        BinaryOp::Subtract => numeric::sub(l, r)?,
        BinaryOp::Multiply => numeric::mul(l, r)?,
        BinaryOp::Divide => numeric::div(l, r)?,
        BinaryOp::Modulo => numeric::rem(l, r)?,
        BinaryOp::Eq => Arc::new(cmp::eq(l, r)?),
        BinaryOp::NotEq => Arc::new(cmp::neq(l, r)?),
        BinaryOp::Lt => Arc::new(cmp::lt(l, r)?),
        BinaryOp::LtEq => Arc::new(cmp::lt_eq(l, r)?),
        BinaryOp::Gt => Arc::new(cmp::gt(l, r)?),
        BinaryOp::GtEq => Arc::new(cmp::gt_eq(l, r)?),
        BinaryOp::And | BinaryOp::Or => {
            let length = if both_scalar { 1 } else { rows };
            let left = left.into_column(length)?;
            let right = right.into_column(length)?;
            let (left, right) = (left.as_boolean(), right.as_boolean());
            Arc::new(if op == BinaryOp::And {
                arrow_arith::boolean::and_kleene(left, right)?
            } else {
                arrow_arith::boolean::or_kleene(left, right)?
            })
        }
    };
    Ok(wrap(array))
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
