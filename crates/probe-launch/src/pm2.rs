//! pm2 ecosystem files (`ecosystem.config.js` / `.json`, pm2's "Application declaration"):
//! each entry of `apps` runs `script` with `args`, under `interpreter` (`none`: the script is a
//! binary; unset: by its extension), with `env` and `cwd`. JavaScript object literals are read
//! as JSON after a small, linear rewrite (comments dropped, keys and single-quoted strings
//! quoted, trailing commas removed); anything that is no literal stays a string.

use probe_model::LaunchConfig;
use serde_json::Value;

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::shell::split_words;

/// Whether `text` declares pm2 apps with a script.
pub(crate) fn is_ecosystem(text: &str) -> bool {
    text.contains("apps") && text.contains("script") && apps(text).is_some_and(|a| !a.is_empty())
}

/// The `apps` entries of the file.
fn apps(text: &str) -> Option<Vec<Value>> {
    let start = text.find('{')?;
    let json = to_json(text.get(start..)?);
    let v: Value = serde_json::Deserializer::from_str(&json)
        .into_iter::<Value>()
        .next()?
        .ok()?;
    match v.get("apps")? {
        Value::Array(a) => Some(a.clone()),
        one @ Value::Object(_) => Some(vec![one.clone()]),
        _ => None,
    }
}

/// Rewrites a JavaScript object literal as JSON.
fn to_json(js: &str) -> String {
    let chars: Vec<char> = js.chars().collect();
    let mut out = String::with_capacity(js.len());
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        match c {
            '/' if chars.get(i + 1) == Some(&'/') => {
                while chars.get(i).is_some_and(|c| *c != '\n') {
                    i += 1;
                }
            }
            '/' if chars.get(i + 1) == Some(&'*') => {
                i += 2;
                while chars.get(i).is_some()
                    && !(chars.get(i) == Some(&'*') && chars.get(i + 1) == Some(&'/'))
                {
                    i += 1;
                }
                i += 2;
            }
            '"' | '\'' | '`' => {
                let mut s = String::new();
                i += 1;
                while let Some(&d) = chars.get(i) {
                    if d == c {
                        break;
                    }
                    if d == '\\'
                        && let Some(&e) = chars.get(i + 1)
                    {
                        s.push(match e {
                            'n' => '\n',
                            't' => '\t',
                            other => other,
                        });
                        i += 2;
                        continue;
                    }
                    s.push(d);
                    i += 1;
                }
                i += 1;
                out.push_str(&Value::String(s).to_string());
            }
            ',' => {
                let next = chars
                    .get(i + 1..)
                    .unwrap_or(&[])
                    .iter()
                    .find(|c| !c.is_whitespace());
                if !matches!(next, Some('}' | ']')) {
                    out.push(',');
                }
                i += 1;
            }
            c if c.is_alphanumeric() || matches!(c, '_' | '$' | '.' | '-' | '+') => {
                let mut w = String::new();
                while let Some(&d) = chars.get(i) {
                    if !(d.is_alphanumeric() || matches!(d, '_' | '$' | '.' | '-' | '+')) {
                        break;
                    }
                    w.push(d);
                    i += 1;
                }
                let literal = matches!(w.as_str(), "true" | "false" | "null")
                    || serde_json::from_str::<serde_json::Number>(&w).is_ok();
                if literal {
                    out.push_str(&w);
                } else {
                    out.push_str(&Value::String(w).to_string());
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

fn text_of(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn words_of(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(a)) => a.iter().filter_map(|x| text_of(Some(x))).collect(),
        other => text_of(other).map(|s| split_words(&s)).unwrap_or_default(),
    }
}

/// The argv pm2 runs for one app.
fn argv_of(app: &Value) -> Vec<String> {
    let script = text_of(app.get("script")).unwrap_or_default();
    let mut args = words_of(app.get("args"));
    let mut head = if script.contains(' ') && args.is_empty() {
        split_words(&script)
    } else {
        vec![script.clone()]
    };
    let interpreter = text_of(app.get("interpreter")).or_else(|| {
        // pm2 picks the interpreter of a few extensions itself.
        let ext = script.rsplit_once('.').map(|(_, e)| e).unwrap_or("");
        match ext {
            "py" => Some("python".into()),
            "sh" => Some("bash".into()),
            _ => None,
        }
    });
    if let Some(i) = interpreter.filter(|i| !matches!(i.as_str(), "none" | "")) {
        let mut v = vec![i];
        v.extend(words_of(app.get("interpreter_args")));
        v.append(&mut head);
        head = v;
    }
    head.append(&mut args);
    head
}

/// The launches of every app of `text`.
pub(crate) fn launches(
    text: &str,
    read: ReadArgv,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Vec<LaunchConfig> {
    let mut out = Vec::new();
    for app in apps(text).unwrap_or_default() {
        let mut c = ctx.clone();
        if let Some(Value::Object(env)) = app.get("env") {
            for (k, v) in env {
                if let Some(v) = text_of(Some(v)).or_else(|| v.as_bool().map(|b| b.to_string())) {
                    c.env.insert(k.clone(), v);
                }
            }
        }
        if let Some(d) = text_of(app.get("cwd")) {
            c.cwd = Some(d);
        }
        for key in ["out_file", "error_file", "log_file"] {
            if let Some(f) = text_of(app.get(key)) {
                c.log_files.push(f);
            }
        }
        out.extend(read(&argv_of(&app), c, hints));
    }
    out
}
