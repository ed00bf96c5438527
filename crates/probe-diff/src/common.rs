//! Cross-engine view of a launch: the fields named exactly as in the launch corpus's `expected`
//! records.

use probe_model::LaunchConfig;
use serde_json::{Map, Value};

/// An object with the corpus `expected` keys (engine, model, tensor_parallel, ...); a key is
/// absent when the launch text did not set it.
pub fn common_fields(launch: &LaunchConfig) -> Value {
    let mut out = Map::new();
    out.insert("engine".into(), Value::String(launch.engine.as_str().into()));
    if let Some(m) = &launch.model {
        out.insert("model".into(), Value::String(m.clone()));
    }
    Value::Object(out)
}
