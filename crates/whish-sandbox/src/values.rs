//! Reading request JSON strictly by type, and writing exact decimals as JSON numbers.

use std::str::FromStr;

use rust_decimal::Decimal;
use rust_decimal::prelude::ToPrimitive;
use serde_json::{Number, Value};

/// A decimal as a JSON number (the services send Double fields as numbers).
pub(crate) fn num(d: Decimal) -> Value {
    d.normalize()
        .to_f64()
        .and_then(Number::from_f64)
        .map(Value::Number)
        .unwrap_or(Value::Null)
}

/// A JSON number as an exact decimal (the shortest text of the number as received).
pub(crate) fn decimal_number(v: &Value) -> Option<Decimal> {
    let n = v.as_number()?;
    let text = n.to_string();
    Decimal::from_str(&text)
        .or_else(|_| Decimal::from_scientific(&text))
        .ok()
}

/// A non-empty trimmed string field.
pub(crate) fn text<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// A string field, or a number sent where the spec says String (clients in other languages send
/// one), as its text.
pub(crate) fn text_or_number(v: &Value, key: &str) -> Option<String> {
    match v.get(key)? {
        Value::Number(n) => Some(n.to_string()),
        _ => text(v, key).map(str::to_owned),
    }
}

/// An integer field (a JSON number without fraction).
pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    v.get(key).and_then(Value::as_i64)
}

/// True when the key is absent or null.
pub(crate) fn absent(v: &Value, key: &str) -> bool {
    v.get(key).is_none_or(Value::is_null)
}

/// Parse a request body as a JSON object.
pub(crate) fn object(body: &[u8]) -> Option<Value> {
    serde_json::from_slice::<Value>(body)
        .ok()
        .filter(Value::is_object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_and_written_exactly() {
        let v: Value = serde_json::from_str("[12.34, 3.3333333333333335, 100, 1e3]").expect("json");
        let ds: Vec<String> = v
            .as_array()
            .expect("array")
            .iter()
            .map(|x| decimal_number(x).expect("number").normalize().to_string())
            .collect();
        assert_eq!(ds, ["12.34", "3.3333333333333335", "100", "1000"]);
        assert_eq!(num(Decimal::new(1050, 1)).to_string(), "105.0");
        assert_eq!(num(Decimal::new(1234, 2)).to_string(), "12.34");
    }
}
