//! Rust `Debug` output as JSON: TGI's launcher logs its parsed arguments as `Args { model_id:
//! "x", num_shard: Some(2), quantize: Some(Gptq), max_input_tokens: None, ... }` (`{:?}` on one
//! line in older releases, `{:#?}` over many in newer ones; both read the same). A struct is an
//! object, `Some(x)` is `x`, `None` is null, a unit variant (`Gptq`, `On`) is its name in lower
//! case as the command line spells it, a string keeps Rust's escapes decoded.

use serde_json::{Map, Number, Value};

/// Nesting read before giving up (hostile logs).
const MAX_DEPTH: usize = 32;

/// The value `s` starts with; `None` when it is not Rust `Debug` output.
pub fn parse(s: &str) -> Option<Value> {
    let mut p = Parser {
        s: s.as_bytes(),
        pos: 0,
        depth: 0,
    };
    p.value()
}

struct Parser<'a> {
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn ws(&mut self) {
        while self.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self) -> Option<Value> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        self.ws();
        let v = match self.peek()? {
            b'"' => self.string().map(Value::String),
            b'[' => self.list(),
            b'-' | b'0'..=b'9' => self.number(),
            c if c.is_ascii_alphabetic() || c == b'_' => self.named(),
            _ => None,
        };
        self.depth -= 1;
        v
    }

    fn string(&mut self) -> Option<String> {
        self.pos += 1;
        let mut out = Vec::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            match c {
                b'"' => return Some(String::from_utf8_lossy(&out).into_owned()),
                b'\\' => {
                    let n = self.peek()?;
                    self.pos += 1;
                    out.push(match n {
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'r' => b'\r',
                        b'0' => b' ',
                        other => other,
                    });
                }
                _ => out.push(c),
            }
        }
        None
    }

    fn list(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(b']') {
                return Some(Value::Array(items));
            }
            items.push(self.value()?);
            if !self.eat(b',') && !matches!(self.peek_ws(), Some(b']')) {
                return None;
            }
        }
    }

    fn peek_ws(&mut self) -> Option<u8> {
        self.ws();
        self.peek()
    }

    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, b'.' | b'-' | b'e' | b'E' | b'+'))
        {
            self.pos += 1;
        }
        let text = std::str::from_utf8(self.s.get(start..self.pos)?).ok()?;
        if let Ok(n) = text.parse::<i64>() {
            return Some(Value::Number(n.into()));
        }
        text.parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .map(Value::Number)
    }

    fn ident(&mut self) -> Option<String> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b':'))
        {
            // `a::b` paths; a lone `:` ends a field name.
            if self.peek() == Some(b':') && self.s.get(self.pos + 1) != Some(&b':') {
                break;
            }
            self.pos += if self.peek() == Some(b':') { 2 } else { 1 };
        }
        std::str::from_utf8(self.s.get(start..self.pos)?)
            .ok()
            .map(str::to_string)
    }

    /// `true`, `None`, `Some(x)`, `Name(x, ...)`, `Name { k: v, ... }`, `Variant`.
    fn named(&mut self) -> Option<Value> {
        let name = self.ident()?;
        match name.as_str() {
            "true" => return Some(Value::Bool(true)),
            "false" => return Some(Value::Bool(false)),
            "None" => return Some(Value::Null),
            _ => {}
        }
        match self.peek_ws() {
            Some(b'(') => self.tuple(),
            Some(b'{') => self.fields(),
            _ => Some(Value::String(name.to_ascii_lowercase())),
        }
    }

    /// `(x)` is `x`; `(x, y)` a list.
    fn tuple(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            if self.eat(b')') {
                return Some(match items.len() {
                    1 => items.pop().unwrap_or(Value::Null),
                    _ => Value::Array(items),
                });
            }
            items.push(self.value()?);
            if !self.eat(b',') && !matches!(self.peek_ws(), Some(b')')) {
                return None;
            }
        }
    }

    fn fields(&mut self) -> Option<Value> {
        self.pos += 1;
        let mut m = Map::new();
        loop {
            if self.eat(b'}') {
                return Some(Value::Object(m));
            }
            self.ws();
            let key = self.ident().filter(|k| !k.is_empty())?;
            if !self.eat(b':') {
                return None;
            }
            let v = self.value()?;
            m.insert(key, v);
            if !self.eat(b',') && !matches!(self.peek_ws(), Some(b'}')) {
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn tgi_args_read_as_objects() {
        let cases: &[(&str, Option<Value>)] = &[
            (
                r#"Args { model_id: "meta-llama/Llama-3.1-8B-Instruct", revision: None, num_shard: Some(2), quantize: Some(Gptq), max_input_tokens: Some(4095), cuda_memory_fraction: 1.0, cors_allow_origin: [], trust_remote_code: false, usage_stats: On, rope_scaling: Some(Dynamic), hostname: "r-x \"y\"", }"#,
                Some(json!({
                    "model_id": "meta-llama/Llama-3.1-8B-Instruct", "revision": null,
                    "num_shard": 2, "quantize": "gptq", "max_input_tokens": 4095,
                    "cuda_memory_fraction": 1.0, "cors_allow_origin": [],
                    "trust_remote_code": false, "usage_stats": "on", "rope_scaling": "dynamic",
                    "hostname": "r-x \"y\"",
                })),
            ),
            (
                "Args {\n    model_id: \"bigscience/bloom-560m\",\n    lora_adapters: Some(\n        \"a,b\",\n    ),\n    max_batch_total_tokens: None,\n}",
                Some(
                    json!({"model_id": "bigscience/bloom-560m", "lora_adapters": "a,b", "max_batch_total_tokens": null}),
                ),
            ),
            ("Args { model_id: \"x\"", None),
            ("Args { : 1 }", None),
            ("{ not rust }", None),
        ];
        for (text, want) in cases {
            assert_eq!(&parse(text), want, "{text}");
        }
        let deep = "A(".repeat(1000);
        assert_eq!(parse(&deep), None);
    }
}
