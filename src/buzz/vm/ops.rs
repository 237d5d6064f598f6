//! Unary and binary operators on values, with the fast paths on two
//! `int`s or two `double`s that cannot fail; everything else (and every
//! error) is `lib::methods::binary`'s.

use super::{Eval, Interpreter};
use crate::buzz::lib::methods;
use crate::buzz::syntax::ast::*;
use crate::buzz::syntax::lexer::Pos;
use crate::buzz::vm::value::*;

/// `x op y` for the comparison operators on two ints.
#[inline]
pub(in crate::buzz) fn int_compare(op: BinOp, x: i64, y: i64) -> Option<bool> {
    Some(match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        BinOp::Eq => x == y,
        BinOp::Ne => x != y,
        _ => return None,
    })
}

/// `x op y` on two ints where it cannot fail; `None` sends the operation
/// (overflow, division, shifts) to [`methods::binary`] and its errors.
#[inline]
pub(in crate::buzz) fn int_fast(op: BinOp, x: i64, y: i64) -> Option<Value> {
    Some(match op {
        BinOp::Add => Value::Int(x.checked_add(y)?),
        BinOp::Sub => Value::Int(x.checked_sub(y)?),
        BinOp::Mul => Value::Int(x.checked_mul(y)?),
        BinOp::Lt => Value::bool(x < y),
        BinOp::Le => Value::bool(x <= y),
        BinOp::Gt => Value::bool(x > y),
        BinOp::Ge => Value::bool(x >= y),
        BinOp::Eq => Value::bool(x == y),
        BinOp::Ne => Value::bool(x != y),
        _ => return None,
    })
}

/// `x op y` on two doubles for the arithmetic operators, as
/// [`methods::binary`] computes them.
#[inline]
pub(in crate::buzz) fn double_fast(op: BinOp, x: f64, y: f64) -> Option<Value> {
    Some(Value::double(match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Div => x / y,
        BinOp::Rem => methods::double_rem(x, y),
        _ => return None,
    }))
}

impl Interpreter {
    pub(in crate::buzz) fn unary(&self, op: UnOp, v: Value, pos: Pos) -> Eval<Value> {
        match (op, &v) {
            (UnOp::Not, Value::Bool(b)) => Ok(Value::bool(!b.get())),
            (UnOp::Neg, Value::Int(i)) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or_else(|| self.fail(pos, "integer overflow in negation")),
            (UnOp::Neg, Value::Double(d)) => Ok(Value::double(-d.get())),
            (UnOp::BitNot, Value::Int(i)) => Ok(Value::Int(!i)),
            _ => {
                let sym = match op {
                    UnOp::Not => "!",
                    UnOp::Neg => "-",
                    UnOp::BitNot => "~",
                };
                Err(self.fail(pos, format!("cannot apply `{sym}` to {}", v.type_name())))
            }
        }
    }

    pub(crate) fn binary(&self, op: BinOp, a: Value, b: Value, pos: Pos) -> Eval<Value> {
        methods::binary(op, &a, &b).map_err(|message| self.fail(pos, message))
    }
}
