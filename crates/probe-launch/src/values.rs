//! Typed values: numbers with units, lenient JSON, Python literals from start-up logs.

use serde_json::{Map, Number, Value};

use crate::catalog::{Units, ValueKind};

/// Parses a human-readable integer in the engine's convention ([`Units`]): vLLM's `k`=1000,
/// `K`=1024 (`m`/`M`, `g`/`G`, `t`/`T` alike); SGLang's `k M G T` decimal, `Ki Mi Gi Ti` binary
/// (`K` invalid).
pub fn parse_human_int(s: &str, units: Units) -> Option<i64> {
    let s = s.trim();
    if let Ok(n) = s.parse::<i64>() {
        return Some(n);
    }
    let split = s.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))?;
    let (num, suffix) = (s.get(..split)?, s.get(split..)?);
    let base: f64 = num.parse().ok()?;
    let mult: f64 = match (units, suffix) {
        (Units::Vllm, "k") => 1e3,
        (Units::Vllm, "m") => 1e6,
        (Units::Vllm, "g") => 1e9,
        (Units::Vllm, "t") => 1e12,
        (Units::Vllm, "K") => 1024.0,
        (Units::Vllm, "M") => 1024.0 * 1024.0,
        (Units::Vllm, "G") => 1024.0 * 1024.0 * 1024.0,
        (Units::Vllm, "T") => 1024.0f64.powi(4),
        (Units::Sglang, "k") => 1e3,
        (Units::Sglang, "M") => 1e6,
        (Units::Sglang, "G") => 1e9,
        (Units::Sglang, "T") => 1e12,
        (Units::Sglang, "Ki") => 1024.0,
        (Units::Sglang, "Mi") => 1024.0 * 1024.0,
        (Units::Sglang, "Gi") => 1024.0 * 1024.0 * 1024.0,
        (Units::Sglang, "Ti") => 1024.0f64.powi(4),
        _ => return None,
    };
    let v = base * mult;
    if v.is_finite() && v.abs() < 9.0e18 && v.fract() == 0.0 {
        Some(v as i64)
    } else {
        None
    }
}

fn float_value(f: f64) -> Option<Value> {
    Number::from_f64(f).map(Value::Number)
}

/// A plain value as typed as it can be: bool, integer, float, JSON, else the string.
pub fn guess(s: &str) -> Value {
    match s {
        "true" | "True" => return Value::Bool(true),
        "false" | "False" => return Value::Bool(false),
        _ => {}
    }
    if let Ok(i) = s.parse::<i64>() {
        return Value::Number(i.into());
    }
    if s.contains('.')
        && let Ok(f) = s.parse::<f64>()
        && let Some(v) = float_value(f)
    {
        return v;
    }
    Value::String(s.to_string())
}

/// Parses `s` for an option of `kind`. Values that do not parse (unresolved `$VAR`, templates) stay
/// strings as written.
pub fn typed(s: &str, kind: &ValueKind, units: Units) -> Value {
    let t = s.trim();
    match kind {
        ValueKind::Int => t
            .parse::<i64>()
            .map(|i| Value::Number(i.into()))
            .unwrap_or_else(|_| Value::String(s.to_string())),
        ValueKind::HumanInt => parse_human_int(t, units)
            .map(|i| Value::Number(i.into()))
            .unwrap_or_else(|| {
                if t == "auto" {
                    Value::String("auto".into())
                } else {
                    Value::String(s.to_string())
                }
            }),
        ValueKind::Float => t
            .parse::<f64>()
            .ok()
            .and_then(float_value)
            .unwrap_or_else(|| Value::String(s.to_string())),
        ValueKind::Bool | ValueKind::BoolOptional => parse_bool(t)
            .map(Value::Bool)
            .unwrap_or_else(|| Value::String(s.to_string())),
        ValueKind::Json => lenient_json(t).unwrap_or_else(|| Value::String(s.to_string())),
        _ => Value::String(s.to_string()),
    }
}

pub fn parse_bool(s: &str) -> Option<bool> {
    match s.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" | "y" | "t" => Some(true),
        "false" | "0" | "no" | "off" | "n" | "f" => Some(false),
        _ => None,
    }
}

/// JSON, or JSON-like text with bare unquoted values (`{"n":${N:-3}}`, Python literals).
pub fn lenient_json(s: &str) -> Option<Value> {
    if let Ok(v) = serde_json::from_str::<Value>(s) {
        return Some(v);
    }
    let mut p = PyParser {
        s: s.as_bytes(),
        pos: 0,
        depth: 0,
    };
    let v = p.value()?;
    p.ws();
    if p.pos == p.s.len() && (v.is_object() || v.is_array()) {
        Some(v)
    } else {
        None
    }
}

/// Parses a Python literal / repr (`{'a': 1, 'b': SpeculativeConfig(method='mtp')}`,
/// `ServerArgs(model_path='x', tp_size=2)`) into JSON. Calls become objects of their keyword
/// arguments.
pub fn python_literal(s: &str) -> Option<Value> {
    let mut p = PyParser {
        s: s.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.value()
}

struct PyParser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl PyParser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.depth += 1;
        if self.depth > 64 {
            return None;
        }
        self.ws();
        let v = match self.peek()? {
            b'{' => self.dict(),
            b'[' => self.seq(b']'),
            b'(' => self.seq(b')'),
            b'\'' | b'"' => self.string().map(Value::String),
            _ => self.bare(),
        };
        self.depth -= 1;
        v
    }

    fn string(&mut self) -> Option<String> {
        let q = self.peek()?;
        self.pos += 1;
        let mut out: Vec<u8> = Vec::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == b'\\' {
                let n = self.peek()?;
                self.pos += 1;
                out.push(match n {
                    b'n' => b'\n',
                    b't' => b'\t',
                    other => other,
                });
            } else if c == q {
                return Some(String::from_utf8_lossy(&out).into_owned());
            } else {
                out.push(c);
            }
        }
        Some(String::from_utf8_lossy(&out).into_owned())
    }

    fn dict(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut m = Map::new();
        loop {
            self.ws();
            match self.peek()? {
                b'}' => {
                    self.pos += 1;
                    return Some(Value::Object(m));
                }
                b',' => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            let k = match self.value()? {
                Value::String(s) => s,
                other => other.to_string(),
            };
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.pos += 1;
            let v = self.value()?;
            m.insert(k, v);
        }
    }

    fn seq(&mut self, close: u8) -> Option<Value> {
        self.pos += 1;
        let mut v = Vec::new();
        loop {
            self.ws();
            match self.peek()? {
                c if c == close => {
                    self.pos += 1;
                    return Some(Value::Array(v));
                }
                b',' => {
                    self.pos += 1;
                    continue;
                }
                _ => v.push(self.value()?),
            }
        }
    }

    /// Numbers, True/False/None, `Name(...)` calls, `<enum: 1>`, and bare text up to a delimiter.
    fn bare(&mut self) -> Option<Value> {
        let start = self.pos;
        let mut depth = 0usize;
        while let Some(c) = self.peek() {
            match c {
                b'$' if self.s.get(self.pos + 1) == Some(&b'{') => {
                    depth += 1;
                    self.pos += 2;
                    continue;
                }
                b'{' | b'[' | b'<' if depth > 0 => depth += 1,
                b'}' | b']' | b'>' if depth > 0 => depth -= 1,
                b'<' => depth += 1,
                b'(' => {
                    // A call: `Name(k=v, ...)`.
                    let name = String::from_utf8_lossy(self.s.get(start..self.pos)?)
                        .trim()
                        .to_string();
                    return self.call(name);
                }
                b',' | b'}' | b']' | b')' | b':' if depth == 0 => break,
                b'=' if depth == 0 => break,
                _ => {}
            }
            self.pos += 1;
        }
        let raw = String::from_utf8_lossy(self.s.get(start..self.pos)?)
            .trim()
            .to_string();
        if raw.is_empty() {
            return None;
        }
        // An enum member's repr, `<QuantPolicy.NONE: 0>` (LMDeploy's engine config): its value.
        if let Some(value) = raw
            .strip_prefix('<')
            .and_then(|r| r.strip_suffix('>'))
            .and_then(|r| r.rsplit_once(": "))
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
        {
            return Some(guess(value.trim_matches('\'')));
        }
        Some(match raw.as_str() {
            "True" | "true" => Value::Bool(true),
            "False" | "false" => Value::Bool(false),
            "None" | "null" => Value::Null,
            _ => guess(&raw),
        })
    }

    fn call(&mut self, name: String) -> Option<Value> {
        self.pos += 1; // (
        let mut m = Map::new();
        let mut positional = Vec::new();
        loop {
            self.ws();
            match self.peek()? {
                b')' => {
                    self.pos += 1;
                    break;
                }
                b',' => {
                    self.pos += 1;
                    continue;
                }
                _ => {}
            }
            // keyword argument?
            let save = self.pos;
            let ident: Vec<u8> = self
                .s
                .get(self.pos..)?
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric() || **c == b'_')
                .copied()
                .collect();
            self.pos += ident.len();
            self.ws();
            if !ident.is_empty()
                && self.peek() == Some(b'=')
                && self.s.get(self.pos + 1) != Some(&b'=')
            {
                self.pos += 1;
                let v = self.value()?;
                m.insert(String::from_utf8_lossy(&ident).into_owned(), v);
            } else {
                self.pos = save;
                positional.push(self.value()?);
            }
        }
        if m.is_empty() && !positional.is_empty() {
            return Some(Value::Array(positional));
        }
        if m.is_empty() {
            return Some(Value::String(format!("{name}()")));
        }
        Some(Value::Object(m))
    }
}

/// Merges `value` into `target` at the dotted `path` (`a.b`), creating objects as needed.
pub fn merge_dotted(target: &mut Value, path: &str, value: Value) {
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let mut cur = target;
    let keys: Vec<&str> = path.split('.').filter(|k| !k.is_empty()).collect();
    let Some((last, inner)) = keys.split_last() else {
        return;
    };
    for k in inner {
        let Value::Object(m) = cur else { return };
        let e = m
            .entry(k.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
        if !e.is_object() {
            *e = Value::Object(Map::new());
        }
        cur = e;
    }
    if let Value::Object(m) = cur {
        let (key, append) = match last.strip_suffix('+') {
            Some(k) => (k, true),
            None => (*last, false),
        };
        if append {
            let e = m
                .entry(key.to_string())
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(a) = e {
                a.push(value);
            }
        } else {
            m.insert(key.to_string(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_differ_between_engines() {
        assert_eq!(parse_human_int("16k", Units::Vllm), Some(16000));
        assert_eq!(parse_human_int("16K", Units::Vllm), Some(16384));
        assert_eq!(parse_human_int("1M", Units::Vllm), Some(1_048_576));
        assert_eq!(parse_human_int("1M", Units::Sglang), Some(1_000_000));
        assert_eq!(parse_human_int("4Ki", Units::Sglang), Some(4096));
        assert_eq!(parse_human_int("4K", Units::Sglang), None);
        assert_eq!(parse_human_int("32768", Units::None), Some(32768));
    }

    #[test]
    fn lenient_json_keeps_bare_placeholders() {
        let v = lenient_json("{\"method\":\"mtp\",\"num_speculative_tokens\":${N:-3}}");
        assert_eq!(
            v,
            Some(serde_json::json!({"method": "mtp", "num_speculative_tokens": "${N:-3}"}))
        );
    }

    #[test]
    fn python_reprs() {
        let v = python_literal(
            "ServerArgs(model_path='m', tp_size=2, mem_fraction_static=0.9, x=None, l=[1, 2])",
        );
        assert_eq!(
            v,
            Some(
                serde_json::json!({"model_path": "m", "tp_size": 2, "mem_fraction_static": 0.9, "x": null, "l": [1, 2]})
            )
        );
        let v = python_literal(
            "{'model': 'a', 'speculative_config': {'method': 'mtp'}, 'enable_prefix_caching': True}",
        );
        assert_eq!(
            v,
            Some(
                serde_json::json!({"model": "a", "speculative_config": {"method": "mtp"}, "enable_prefix_caching": true})
            )
        );
    }

    #[test]
    fn enum_reprs_are_their_values() {
        // LMDeploy 0.16's `updated backend_config=TurbomindEngineConfig(...)`: an IntEnum member.
        let v = python_literal(
            "TurbomindEngineConfig(tp=2, quant_policy=<QuantPolicy.INT8: 8>, cache_max_entry_count=0.4, dtype=<D.X: 'bf16'>, bad=<>)",
        );
        assert_eq!(
            v,
            Some(
                serde_json::json!({"tp": 2, "quant_policy": 8, "cache_max_entry_count": 0.4, "dtype": "bf16", "bad": "<>"})
            )
        );
    }

    #[test]
    fn dotted_merge() {
        let mut v = serde_json::json!({"method": "x"});
        merge_dotted(&mut v, "num_speculative_tokens", serde_json::json!(3));
        merge_dotted(&mut v, "a.b", serde_json::json!(1));
        assert_eq!(
            v,
            serde_json::json!({"method": "x", "num_speculative_tokens": 3, "a": {"b": 1}})
        );
    }
}
