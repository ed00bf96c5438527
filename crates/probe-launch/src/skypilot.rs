//! SkyPilot task YAML: the `run:` script runs with the task's `envs:` exported (SkyPilot's
//! task environment; a variable without a value is one the user passes with `--env`), so the
//! launch is the script read after `export NAME='value'` lines for each of them.

use serde_json::Value;

use super::yaml::yaml_to_json;

/// Keys of a SkyPilot task besides `run` (one of them must be there).
const TASK_KEYS: &[&str] = &[
    "envs",
    "resources",
    "setup",
    "num_nodes",
    "file_mounts",
    "workdir",
    "service",
    "secrets",
];

/// The shell text a SkyPilot task runs (its `envs:` exported first), or `None` when `text` is
/// no task with a `run:` script.
pub(crate) fn script(text: &str) -> Option<String> {
    if !text.lines().any(|l| l.starts_with("run:")) {
        return None;
    }
    let doc = yaml_to_json(text)?;
    let task = doc.as_object()?;
    let run = task.get("run")?.as_str()?;
    if !TASK_KEYS.iter().any(|k| task.contains_key(*k)) {
        return None;
    }
    let mut out = String::new();
    for key in ["envs", "secrets"] {
        let Some(Value::Object(envs)) = task.get(key) else {
            continue;
        };
        for (k, v) in envs {
            let v = match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                // No value: given with `--env` / `--secret` when the task is launched.
                _ => continue,
            };
            if !k.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue;
            }
            out.push_str(&format!("export {k}='{}'\n", v.replace('\'', "'\\''")));
        }
    }
    out.push_str(run);
    Some(out)
}
