//! Vectorised evaluation agrees with a naive row-by-row evaluator over plain Rust values, on
//! random well-typed expressions over random rows with NULLs: arithmetic with int64 → float64
//! promotion, comparisons, three-valued logic, CASE, COALESCE, IN, LIKE and the text
//! functions. The reference follows SQL's definitions directly, sharing no code with exec.

use std::cmp::Ordering;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, Int64Type};
use arrow_array::{Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, StringArray};
use proptest::prelude::*;
use proptest::strategy::BoxedStrategy;
use sleet_plan::{col, lit, BinaryOp, CaseBranch, DataType, Expr, Field, Scalar, ScalarFunction, Schema};

use crate::expr_eval::evaluate;

#[derive(Debug, Clone)]
enum Cell {
    Null,
    Int(i64),
    Float(f64),
    Text(String),
    Bool(bool),
}

impl PartialEq for Cell {
    fn eq(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Null, Cell::Null) => true,
            (Cell::Int(a), Cell::Int(b)) => a == b,
            (Cell::Float(a), Cell::Float(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            (Cell::Text(a), Cell::Text(b)) => a == b,
            (Cell::Bool(a), Cell::Bool(b)) => a == b,
            _ => false,
        }
    }
}

#[derive(Debug, Clone)]
struct Row {
    i: Option<i64>,
    j: Option<i64>,
    f: Option<f64>,
    s: Option<String>,
    t: Option<String>,
    b: Option<bool>,
    c: Option<bool>,
}

fn schema() -> Schema {
    let fields = [("i", DataType::Int64), ("j", DataType::Int64), ("f", DataType::Float64), ("s", DataType::Utf8)];
    let more = [("t", DataType::Utf8), ("b", DataType::Boolean), ("c", DataType::Boolean)];
    Schema::new(
        fields.into_iter().chain(more).map(|(name, data_type)| Field::new(name, data_type).nullable()).collect(),
    )
}

fn to_batch(rows: &[Row]) -> RecordBatch {
    let column = |f: &dyn Fn(&Row) -> Cell| -> Vec<Cell> { rows.iter().map(f).collect() };
    let ints = |cells: Vec<Cell>| -> ArrayRef {
        Arc::new(
            cells.into_iter().map(|cell| if let Cell::Int(v) = cell { Some(v) } else { None }).collect::<Int64Array>(),
        )
    };
    let texts = |pick: fn(&Row) -> &Option<String>| -> ArrayRef {
        Arc::new(rows.iter().map(|row| pick(row).as_deref()).collect::<StringArray>())
    };
    let bools =
        |pick: fn(&Row) -> Option<bool>| -> ArrayRef { Arc::new(rows.iter().map(pick).collect::<BooleanArray>()) };
    RecordBatch::try_from_iter([
        ("i", ints(column(&|row| row.i.map_or(Cell::Null, Cell::Int)))),
        ("j", ints(column(&|row| row.j.map_or(Cell::Null, Cell::Int)))),
        ("f", Arc::new(rows.iter().map(|row| row.f).collect::<Float64Array>()) as ArrayRef),
        ("s", texts(|row| &row.s)),
        ("t", texts(|row| &row.t)),
        ("b", bools(|row| row.b)),
        ("c", bools(|row| row.c)),
    ])
    .expect("batch")
}

fn cells(array: &ArrayRef) -> Vec<Cell> {
    (0..array.len())
        .map(|row| {
            if array.is_null(row) {
                return Cell::Null;
            }
            match array.data_type() {
                arrow_schema::DataType::Int64 => Cell::Int(array.as_primitive::<Int64Type>().value(row)),
                arrow_schema::DataType::Float64 => Cell::Float(array.as_primitive::<Float64Type>().value(row)),
                arrow_schema::DataType::Utf8 => Cell::Text(array.as_string::<i32>().value(row).to_string()),
                arrow_schema::DataType::Boolean => Cell::Bool(array.as_boolean().value(row)),
                other => panic!("unexpected result type {other}"),
            }
        })
        .collect()
}

/// The SQL value of `expr` on one row.
fn reference(expr: &Expr, row: &Row) -> Result<Cell, String> {
    let eval = |expr: &Expr| reference(expr, row);
    Ok(match expr {
        Expr::Column(name) => match name.as_str() {
            "i" => row.i.map_or(Cell::Null, Cell::Int),
            "j" => row.j.map_or(Cell::Null, Cell::Int),
            "f" => row.f.map_or(Cell::Null, Cell::Float),
            "s" => row.s.clone().map_or(Cell::Null, Cell::Text),
            "t" => row.t.clone().map_or(Cell::Null, Cell::Text),
            "b" => row.b.map_or(Cell::Null, Cell::Bool),
            "c" => row.c.map_or(Cell::Null, Cell::Bool),
            other => panic!("no column {other}"),
        },
        Expr::Literal(Scalar::Int64(value)) => Cell::Int(*value),
        Expr::Literal(Scalar::Float64(value)) => Cell::Float(*value),
        Expr::Literal(Scalar::Utf8(value)) => Cell::Text(value.clone()),
        Expr::Literal(Scalar::Boolean(value)) => Cell::Bool(*value),
        Expr::Literal(Scalar::Null(_)) => Cell::Null,
        Expr::Binary { op, left, right } => binary(*op, eval(left)?, eval(right)?)?,
        Expr::Not(inner) => match eval(inner)? {
            Cell::Bool(value) => Cell::Bool(!value),
            _ => Cell::Null,
        },
        Expr::Negate(inner) => match eval(inner)? {
            Cell::Int(value) => Cell::Int(value.checked_neg().ok_or("overflow")?),
            Cell::Float(value) => Cell::Float(-value),
            _ => Cell::Null,
        },
        Expr::IsNull { expr, negated } => Cell::Bool((eval(expr)? == Cell::Null) != *negated),
        Expr::InList { expr, list, negated } => {
            let needle = eval(expr)?;
            let mut found = Cell::Bool(false);
            for item in list {
                found = binary(BinaryOp::Or, found, binary(BinaryOp::Eq, needle.clone(), eval(item)?)?)?;
            }
            if *negated {
                binary(BinaryOp::Eq, found, Cell::Bool(false))?
            } else {
                found
            }
        }
        Expr::Like { expr, pattern, negated } => match (eval(expr)?, eval(pattern)?) {
            (Cell::Text(text), Cell::Text(pattern)) => {
                let text: Vec<char> = text.chars().collect();
                let pattern: Vec<char> = pattern.chars().collect();
                Cell::Bool(like(&text, &pattern) != *negated)
            }
            _ => Cell::Null,
        },
        Expr::Case { branches, otherwise } => {
            let mut taken = None;
            for CaseBranch { when, then } in branches {
                if eval(when)? == Cell::Bool(true) {
                    taken = Some(eval(then)?);
                    break;
                }
            }
            let value = match (taken, otherwise) {
                (Some(value), _) => value,
                (None, Some(otherwise)) => eval(otherwise)?,
                (None, None) => Cell::Null,
            };
            promote_to(value, expr)
        }
        Expr::Function { name: ScalarFunction::Coalesce, args } => {
            let mut first = Cell::Null;
            for arg in args {
                first = eval(arg)?;
                if first != Cell::Null {
                    break;
                }
            }
            promote_to(first, expr)
        }
        Expr::Function { name, args } => {
            let args = args.iter().map(eval).collect::<Result<Vec<_>, _>>()?;
            function(*name, args)?
        }
        other => panic!("the generator makes no {other}"),
    })
}

/// An int64 value of a CASE or COALESCE the planner typed float64 is a float64.
fn promote_to(value: Cell, expr: &Expr) -> Cell {
    match (value, expr.data_type(&schema())) {
        (Cell::Int(value), Ok(DataType::Float64)) => Cell::Float(value as f64),
        (value, _) => value,
    }
}

fn binary(op: BinaryOp, left: Cell, right: Cell) -> Result<Cell, String> {
    use Cell::{Bool, Float, Int, Null, Text};
    if op.is_logical() {
        let (absorbing, left, right) = (op == BinaryOp::Or, left, right);
        return Ok(match (left, right) {
            (Bool(value), _) | (_, Bool(value)) if value == absorbing => Bool(absorbing),
            (Bool(_), Bool(_)) => Bool(!absorbing),
            _ => Null,
        });
    }
    let (left, right) = match (left, right) {
        (Null, _) | (_, Null) => return Ok(Null),
        (Int(l), Float(r)) => (Float(l as f64), Float(r)),
        (Float(l), Int(r)) => (Float(l), Float(r as f64)),
        operands => operands,
    };
    if op.is_comparison() {
        let order = match (&left, &right) {
            (Int(l), Int(r)) => l.cmp(r),
            // The engine orders floats totally (arrow's order): NaN equals NaN, -0 < 0.
            (Float(l), Float(r)) => l.total_cmp(r),
            (Text(l), Text(r)) => l.cmp(r),
            (Bool(l), Bool(r)) => l.cmp(r),
            operands => panic!("cannot compare {operands:?}"),
        };
        let holds = match op {
            BinaryOp::Eq => order == Ordering::Equal,
            BinaryOp::NotEq => order != Ordering::Equal,
            BinaryOp::Lt => order == Ordering::Less,
            BinaryOp::LtEq => order != Ordering::Greater,
            BinaryOp::Gt => order == Ordering::Greater,
            _ => order != Ordering::Less,
        };
        return Ok(Bool(holds));
    }
    Ok(match (op, left, right) {
        (BinaryOp::Add, Int(l), Int(r)) => Int(l.checked_add(r).ok_or("overflow")?),
        (BinaryOp::Subtract, Int(l), Int(r)) => Int(l.checked_sub(r).ok_or("overflow")?),
        (BinaryOp::Multiply, Int(l), Int(r)) => Int(l.checked_mul(r).ok_or("overflow")?),
        (BinaryOp::Add, Float(l), Float(r)) => Float(l + r),
        (BinaryOp::Subtract, Float(l), Float(r)) => Float(l - r),
        (BinaryOp::Multiply, Float(l), Float(r)) => Float(l * r),
        (BinaryOp::Concat, Text(l), Text(r)) => Text(l + &r),
        (op, l, r) => panic!("the generator makes no {l:?} {op:?} {r:?}"),
    })
}

/// SQL LIKE by backtracking over characters: `%` any run, `_` one character.
fn like(text: &[char], pattern: &[char]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some(('%', rest)) => (0..=text.len()).any(|skip| like(&text[skip..], rest)),
        Some(('_', rest)) => !text.is_empty() && like(&text[1..], rest),
        Some((literal, rest)) => text.first() == Some(literal) && like(&text[1..], rest),
    }
}

fn function(name: ScalarFunction, args: Vec<Cell>) -> Result<Cell, String> {
    use Cell::{Bool, Float, Int, Null, Text};
    if name == ScalarFunction::Concat {
        let pieces = args.into_iter().map(|arg| match arg {
            Text(text) => text,
            Int(value) => value.to_string(),
            Bool(value) => value.to_string(),
            Null => String::new(),
            Float(_) => panic!("the generator concatenates no floats"),
        });
        return Ok(Text(pieces.collect()));
    }
    if args.contains(&Null) {
        return Ok(Null);
    }
    Ok(match (name, args.as_slice()) {
        (ScalarFunction::Lower, [Text(text)]) => Text(text.to_lowercase()),
        (ScalarFunction::Upper, [Text(text)]) => Text(text.to_uppercase()),
        (ScalarFunction::Trim, [Text(text)]) => Text(text.trim_matches(' ').to_string()),
        (ScalarFunction::CharLength, [Text(text)]) => Int(text.chars().count() as i64),
        (ScalarFunction::StartsWith, [Text(text), Text(prefix)]) => Bool(text.starts_with(prefix.as_str())),
        (ScalarFunction::Substring, [Text(text), Int(start), rest @ ..]) => {
            let end = match rest {
                [Int(length)] => start + length,
                _ => i64::MAX,
            };
            let kept = text.chars().zip(1..).filter(|(_, position)| (*start..end).contains(position));
            Text(kept.map(|(character, _)| character).collect())
        }
        (ScalarFunction::Abs, [Int(value)]) => Int(value.checked_abs().ok_or("overflow")?),
        (ScalarFunction::Abs, [Float(value)]) => Float(value.abs()),
        (ScalarFunction::Floor, [Float(value)]) => Float(value.floor()),
        (ScalarFunction::Ceil, [Float(value)]) => Float(value.ceil()),
        (name, args) => panic!("the generator makes no {name}({args:?})"),
    })
}

type Strategies = [BoxedStrategy<Expr>; 4];
const INT: usize = 0;
const FLOAT: usize = 1;
const TEXT: usize = 2;
const BOOL: usize = 3;

fn leaves() -> Strategies {
    let null = |data_type| Just(lit(Scalar::Null(data_type)));
    [
        prop_oneof![Just(col("i")), Just(col("j")), (-50i64..50).prop_map(lit), null(DataType::Int64)].boxed(),
        prop_oneof![Just(col("f")), prop::sample::select(vec![0.0, 0.908, -1.5, 2.25, 100.0]).prop_map(lit)].boxed(),
        prop_oneof![Just(col("s")), Just(col("t")), "[aBé_ %]{0,3}".prop_map(lit), null(DataType::Utf8)].boxed(),
        prop_oneof![Just(col("b")), Just(col("c")), any::<bool>().prop_map(lit), null(DataType::Boolean)].boxed(),
    ]
}

/// Expressions of each type nested up to `depth` operators deep.
fn expressions(depth: usize) -> Strategies {
    let mut level = leaves();
    for _ in 0..depth {
        let [int, float, text, boolean] = level.clone();
        let [int_leaf, _, text_leaf, _] = leaves();
        let call = |name: ScalarFunction| move |args: Vec<Expr>| Expr::call(name, args);
        let arithmetic = prop::sample::select(vec![BinaryOp::Add, BinaryOp::Subtract, BinaryOp::Multiply]);
        let comparison = prop::sample::select(vec![
            BinaryOp::Eq,
            BinaryOp::NotEq,
            BinaryOp::Lt,
            BinaryOp::LtEq,
            BinaryOp::Gt,
            BinaryOp::GtEq,
        ]);
        let binary = |op, left, right| Expr::Binary { op, left: Box::new(left), right: Box::new(right) };
        let number = prop_oneof![int.clone(), float.clone()].boxed();
        let case = |then: BoxedStrategy<Expr>, otherwise: BoxedStrategy<Expr>| {
            (prop::collection::vec((boolean.clone(), then), 1..3), prop::option::of(otherwise))
                .prop_map(|(branches, otherwise)| Expr::case(branches, otherwise))
        };
        let coalesce =
            |args: BoxedStrategy<Expr>| prop::collection::vec(args, 1..4).prop_map(call(ScalarFunction::Coalesce));
        level =
            [
                prop_oneof![
                    level[INT].clone(),
                    (arithmetic.clone(), int.clone(), int.clone()).prop_map(move |(op, l, r)| binary(op, l, r)),
                    int.clone().prop_map(Expr::negate),
                    int.clone().prop_map(|arg| Expr::call(ScalarFunction::Abs, [arg])),
                    text.clone().prop_map(|arg| Expr::call(ScalarFunction::CharLength, [arg])),
                    case(int.clone(), int.clone()),
                    coalesce(int.clone()),
                ]
                .boxed(),
                prop_oneof![
                    level[FLOAT].clone(),
                    (arithmetic, number.clone(), float.clone()).prop_map(move |(op, l, r)| binary(op, l, r)),
                    float.clone().prop_map(Expr::negate),
                    (
                        prop::sample::select(vec![ScalarFunction::Abs, ScalarFunction::Floor, ScalarFunction::Ceil]),
                        float.clone()
                    )
                        .prop_map(|(name, arg)| Expr::call(name, [arg])),
                    // An ELSE of float64 keeps the CASE float64 whatever its branches are.
                    (prop::collection::vec((boolean.clone(), number.clone()), 1..3), float.clone())
                        .prop_map(|(branches, otherwise)| Expr::case(branches, Some(otherwise))),
                    (float.clone(), number.clone()).prop_map(|(f, n)| Expr::call(ScalarFunction::Coalesce, [f, n])),
                ]
                .boxed(),
                prop_oneof![
                    level[TEXT].clone(),
                    (
                        prop::sample::select(vec![ScalarFunction::Lower, ScalarFunction::Upper, ScalarFunction::Trim]),
                        text.clone()
                    )
                        .prop_map(|(name, arg)| Expr::call(name, [arg])),
                    (text.clone(), int_leaf.clone(), prop::option::of((0i64..4).prop_map(lit))).prop_map(
                        |(s, start, length)| {
                            Expr::call(ScalarFunction::Substring, [s, start].into_iter().chain(length))
                        }
                    ),
                    prop::collection::vec(prop_oneof![text.clone(), int.clone(), boolean.clone()], 1..4)
                        .prop_map(call(ScalarFunction::Concat)),
                    (text.clone(), text.clone()).prop_map(|(l, r)| l.concat(r)),
                    case(text.clone(), text.clone()),
                    coalesce(text.clone()),
                ]
                .boxed(),
                prop_oneof![
                    level[BOOL].clone(),
                    (comparison.clone(), number.clone(), number.clone()).prop_map(move |(op, l, r)| binary(op, l, r)),
                    (comparison.clone(), text.clone(), text.clone()).prop_map(move |(op, l, r)| binary(op, l, r)),
                    (comparison, boolean.clone(), boolean.clone()).prop_map(move |(op, l, r)| binary(op, l, r)),
                    (any::<bool>(), boolean.clone(), boolean.clone()).prop_map(|(and, l, r)| if and {
                        l.and(r)
                    } else {
                        l.or(r)
                    }),
                    boolean.clone().prop_map(Expr::not),
                    (any::<bool>(), prop_oneof![int.clone(), text.clone(), float.clone()])
                        .prop_map(|(negated, expr)| if negated { expr.is_not_null() } else { expr.is_null() }),
                    (any::<bool>(), int.clone(), prop::collection::vec(int_leaf.clone(), 1..4)).prop_map(
                        |(negated, expr, list)| if negated { expr.not_in_list(list) } else { expr.in_list(list) }
                    ),
                    (any::<bool>(), text.clone(), text_leaf.clone()).prop_map(|(negated, expr, pattern)| if negated {
                        expr.not_like(pattern)
                    } else {
                        expr.like(pattern)
                    }),
                    (text.clone(), text_leaf).prop_map(|(l, r)| Expr::call(ScalarFunction::StartsWith, [l, r])),
                    case(boolean.clone(), boolean.clone()),
                ]
                .boxed(),
            ];
    }
    level
}

fn rows() -> impl Strategy<Value = Vec<Row>> {
    let int = || prop::option::weighted(0.8, -20i64..20);
    let text = || prop::option::weighted(0.8, "[aAbBé_ %]{0,5}");
    let boolean = || prop::option::weighted(0.8, any::<bool>());
    let float = prop::option::weighted(0.8, prop_oneof![Just(0.0), Just(-0.0), -100.0f64..100.0]);
    let row = (int(), int(), float, text(), text(), boolean(), boolean()).prop_map(|(i, j, f, s, t, b, c)| Row {
        i,
        j,
        f,
        s,
        t,
        b,
        c,
    });
    prop::collection::vec(row, 0..12)
}

fn any_expression() -> impl Strategy<Value = Expr> {
    let [int, float, text, boolean] = expressions(3);
    prop_oneof![int, float, text, boolean]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn vectorised_evaluation_agrees_with_the_row_reference(expr in any_expression(), rows in rows()) {
        let planned = expr.data_type(&schema());
        prop_assert!(planned.is_ok(), "the generator made an ill-typed `{}`: {:?}", expr, planned);
        let expected: Result<Vec<Cell>, String> = rows.iter().map(|row| reference(&expr, row)).collect();
        let found = evaluate(&expr, &to_batch(&rows));
        match (expected, found) {
            (Ok(expected), Ok(found)) => {
                prop_assert_eq!(found.data_type(), &crate::types::to_arrow_type(planned.expect("typed")), "type of `{}`", expr);
                prop_assert_eq!(cells(&found), expected, "values of `{}`", expr);
            }
            (Err(_), Err(_)) => {}
            (expected, found) => prop_assert!(false, "`{}`: reference {:?}, engine {:?}", expr, expected, found.map(|array| cells(&array))),
        }
    }
}
