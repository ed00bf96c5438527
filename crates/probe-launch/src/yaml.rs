//! YAML (compose files, Kubernetes manifests, engine config files) read into JSON values,
//! bounded against alias bombs and deep nesting.

use serde_json::Value;

use super::hints::MAX_TEXT;

fn yaml_value(y: &yaml_rust2::Yaml, depth: usize) -> Value {
    use yaml_rust2::Yaml;
    if depth > 64 {
        return Value::Null;
    }
    match y {
        Yaml::Real(s) => s
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(Value::Number)
            .unwrap_or_else(|| Value::String(s.clone())),
        Yaml::Integer(i) => Value::Number((*i).into()),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(|v| yaml_value(v, depth + 1)).collect()),
        Yaml::Hash(h) => {
            let mut m = serde_json::Map::new();
            for (k, v) in h {
                let key = match k {
                    Yaml::String(s) => s.clone(),
                    Yaml::Integer(i) => i.to_string(),
                    Yaml::Real(r) => r.clone(),
                    Yaml::Boolean(b) => b.to_string(),
                    _ => continue,
                };
                m.insert(key, yaml_value(v, depth + 1));
            }
            Value::Object(m)
        }
        _ => Value::Null,
    }
}

/// Parses YAML text to JSON (first document); `None` when it is not YAML.
pub(crate) fn yaml_to_json(text: &str) -> Option<Value> {
    yaml_docs(text).and_then(|mut docs| (!docs.is_empty()).then(|| docs.swap_remove(0)))
}

/// Every document of a YAML stream (`---` between them), in order; `None` when it is not YAML.
fn yaml_docs(text: &str) -> Option<Vec<Value>> {
    // Alias expansion can grow exponentially ("billion laughs"): refuse documents with many.
    let aliases = text
        .split(|c: char| c.is_whitespace() || matches!(c, '[' | ',' | '{'))
        .filter(|w| w.starts_with('*') && w.len() > 1)
        .count();
    if aliases > 32 || text.len() > MAX_TEXT {
        return None;
    }
    let docs = yaml_rust2::YamlLoader::load_from_str(text).ok()?;
    Some(docs.iter().map(|d| yaml_value(d, 0)).collect())
}

/// The one document of a text, or all of them as an array when it holds several (a manifest
/// that puts a `Service` before the workload).
fn yaml_stream(text: &str) -> Option<Value> {
    let mut docs: Vec<Value> = yaml_docs(text)?
        .into_iter()
        .filter(|d| !d.is_null())
        .collect();
    match docs.len() {
        0 => None,
        1 => docs.pop(),
        _ => Some(Value::Array(docs)),
    }
}

/// Makes indented snippets (a service block cut out of a file) valid YAML: unquoted Helm
/// templates (`{{ ... }}`) become strings.
pub(crate) fn yaml_lenient(text: &str) -> Option<Value> {
    // A bare `{{ ... }}` is valid YAML (a flow mapping with a mapping key) that loses the
    // template text, so Helm templates are always made strings first.
    if !text.contains("{{")
        && let Some(v) = yaml_stream(text)
    {
        return Some(v);
    }
    let fixed: String = text
        .lines()
        .map(|l| {
            let item = l.trim_start();
            if let Some((k, v)) = l.split_once(": ")
                && v.trim_start().starts_with("{{")
            {
                format!("{k}: \"{}\"", v.trim().replace('"', "\\\""))
            } else if let Some(v) = item.strip_prefix("- ")
                && v.trim_start().starts_with("{{")
            {
                // A list item that is a bare template (`- {{ .Values.model }}`).
                let indent = l.len() - item.len();
                format!(
                    "{}- \"{}\"",
                    " ".repeat(indent),
                    v.trim().replace('"', "\\\"")
                )
            } else if l.trim_start().starts_with("{{") || l.trim_start().starts_with("{%") {
                String::new()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    yaml_stream(&fixed).or_else(|| yaml_stream(text))
}
