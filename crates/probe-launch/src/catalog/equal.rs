//! Typed comparison of option values: `0.9` equals `0.90`, `"2"` equals `2` for an integer option,
//! `"true"` equals `true` for a boolean, a JSON string equals the object it spells.

use serde_json::Value;

use crate::catalog::ValueKind;

/// Whether two option values mean the same, given the option's kind when the catalog knows it.
pub fn values_equal(left: &Value, right: &Value, kind: Option<&ValueKind>) -> bool {
    let left = normalize(left, kind);
    let right = normalize(right, kind);
    let case_insensitive = matches!(kind, Some(ValueKind::Choice(_)));
    deep_equal(&left, &right, case_insensitive)
}

/// Brings a value into the form its kind implies; values that do not fit are left as they are.
pub fn normalize(value: &Value, kind: Option<&ValueKind>) -> Value {
    match (kind, value) {
        (Some(ValueKind::Int | ValueKind::HumanInt | ValueKind::Float), Value::String(text)) => {
            parse_number(text).unwrap_or_else(|| value.clone())
        }
        (Some(ValueKind::Bool | ValueKind::BoolOptional), Value::String(text)) => parse_bool(text)
            .map(Value::Bool)
            .unwrap_or_else(|| value.clone()),
        (Some(ValueKind::Json), Value::String(text)) => {
            serde_json::from_str::<Value>(text.trim()).unwrap_or_else(|_| value.clone())
        }
        (Some(ValueKind::List), Value::String(text)) => Value::Array(
            text.split([',', ' '])
                .filter(|part| !part.is_empty())
                .map(|part| Value::String(part.to_string()))
                .collect(),
        ),
        (_, Value::String(text)) => Value::String(text.trim().to_string()),
        _ => value.clone(),
    }
}

fn parse_number(text: &str) -> Option<Value> {
    let text = text.trim();
    if let Ok(integer) = text.parse::<i64>() {
        return Some(Value::from(integer));
    }
    let float = text.parse::<f64>().ok()?;
    serde_json::Number::from_f64(float).map(Value::Number)
}

pub fn parse_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" => Some(false),
        _ => None,
    }
}

fn as_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        _ => None,
    }
}

fn numbers_equal(left: f64, right: f64) -> bool {
    if left == right {
        return true;
    }
    let scale = left.abs().max(right.abs()).max(1.0);
    (left - right).abs() <= scale * 1e-9
}

fn deep_equal(left: &Value, right: &Value, case_insensitive: bool) -> bool {
    match (left, right) {
        (Value::Number(_), _) | (_, Value::Number(_)) => {
            match (as_number(left), as_number(right)) {
                (Some(a), Some(b)) => numbers_equal(a, b),
                _ => false,
            }
        }
        (Value::String(a), Value::String(b)) => {
            if case_insensitive {
                a.eq_ignore_ascii_case(b)
            } else {
                a == b
            }
        }
        (Value::Bool(a), Value::String(b)) | (Value::String(b), Value::Bool(a)) => {
            parse_bool(b) == Some(*a)
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len()
                && a.iter()
                    .zip(b.iter())
                    .all(|(x, y)| deep_equal(x, y, case_insensitive))
        }
        // A one-element list equals its element (`--served-model-name x` vs `["x"]`).
        (Value::Array(a), other) | (other, Value::Array(a)) if a.len() == 1 => a
            .first()
            .is_some_and(|x| deep_equal(x, other, case_insensitive)),
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len()
                && a.iter().all(|(key, x)| {
                    b.get(key)
                        .is_some_and(|y| deep_equal(x, y, case_insensitive))
                })
        }
        (Value::Object(_), Value::String(text)) | (Value::String(text), Value::Object(_)) => {
            let parsed: Option<Value> = serde_json::from_str(text.trim()).ok();
            let object = if left.is_object() { left } else { right };
            parsed.is_some_and(|parsed| {
                parsed.is_object() && deep_equal(&parsed, object, case_insensitive)
            })
        }
        _ => left == right,
    }
}

/// A short text for a value, for notes and summaries.
pub fn display(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn typed_equality() {
        let float = ValueKind::Float;
        let int = ValueKind::Int;
        assert!(values_equal(&json!(0.9), &json!(0.90), Some(&float)));
        assert!(values_equal(&json!("0.90"), &json!(0.9), Some(&float)));
        assert!(values_equal(&json!("0.90"), &json!(0.9), None));
        assert!(values_equal(&json!("2"), &json!(2), Some(&int)));
        assert!(values_equal(&json!(2.0), &json!(2), Some(&int)));
        assert!(!values_equal(&json!(2), &json!(4), Some(&int)));
        assert!(values_equal(
            &json!("true"),
            &json!(true),
            Some(&ValueKind::Bool)
        ));
        assert!(values_equal(&json!("True"), &json!(true), None));
        assert!(!values_equal(&json!("abc"), &json!(true), None));
        assert!(values_equal(
            &json!("{\"method\": \"mtp\", \"num_speculative_tokens\": 3}"),
            &json!({"num_speculative_tokens": 3, "method": "mtp"}),
            Some(&ValueKind::Json)
        ));
        assert!(values_equal(&json!(["a"]), &json!("a"), None));
        let choice = ValueKind::Choice(vec![String::from("fcfs")]);
        assert!(values_equal(&json!("FCFS"), &json!("fcfs"), Some(&choice)));
        assert!(!values_equal(
            &json!("FCFS"),
            &json!("fcfs"),
            Some(&ValueKind::Str)
        ));
        assert!(values_equal(
            &json!("1 2 4"),
            &json!(["1", "2", "4"]),
            Some(&ValueKind::List)
        ));
    }
}
