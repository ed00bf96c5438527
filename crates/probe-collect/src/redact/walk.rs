//! The one redaction pass: every string of a finished value, whatever its type, through its
//! JSON form. Map keys give their values a context (`HF_TOKEN`, `api_key`,
//! `quantization_config.hub_api_key`, at any depth), a list of strings is read as an argv
//! (`--api-key VALUE` pairs), every other string as free text, and keys themselves are
//! scanned for token shapes. Numbers, booleans and nulls are kept, so the value reads back as
//! the same type.

use std::borrow::Cow;

use probe_model::Snapshot;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::Redactor;

/// Redacts every string of a snapshot in place (the collector's single call site, and every
/// other way a snapshot enters the store or the output: import, a snapshot file to diff).
/// Sets [`Snapshot::redacted`].
pub fn redact_snapshot(s: &mut Snapshot, r: &Redactor) {
    redact_serde(s, r);
    s.redacted = true;
}

/// Redacts every string of any serde value in place. A value that does not read back from its
/// redacted JSON form (only a non-finite float in a non-optional field can do that) is replaced
/// by its default rather than kept with secrets in it.
pub fn redact_serde<T: Serialize + DeserializeOwned + Default>(t: &mut T, r: &Redactor) {
    let Ok(mut v) = serde_json::to_value(&*t) else {
        *t = T::default();
        return;
    };
    r.redact_value(&mut v);
    *t = serde_json::from_value(v).unwrap_or_default();
}

impl Redactor {
    /// Redacts every string of a JSON value in place.
    pub fn redact_value(&self, v: &mut Value) {
        self.walk(v, None, &mut CleanKeys::default());
    }

    /// `key`: the map key `v` is the value of, if any.
    fn walk(&self, v: &mut Value, key: Option<&str>, clean: &mut CleanKeys) {
        match v {
            Value::String(s) => {
                let new = match key {
                    Some(k) => self.redact_value_of(k, s),
                    None => self.redact_text(s),
                };
                if let Cow::Owned(new) = new {
                    *s = new;
                }
            }
            Value::Array(items) => {
                let secret = key.is_some_and(|k| self.is_secret_key(k));
                if !secret && items.iter().all(Value::is_string) {
                    // Moved out, not copied: lists of strings are most of a snapshot's text.
                    let mut argv: Vec<String> = (std::mem::take(items).into_iter())
                        .map(|x| match x {
                            Value::String(s) => s,
                            _ => String::new(),
                        })
                        .collect();
                    self.redact_argv(&mut argv);
                    *items = argv.into_iter().map(Value::String).collect();
                } else {
                    // Items of a secret key's list are secret; others are free text.
                    let k = key.filter(|_| secret);
                    items.iter_mut().for_each(|x| self.walk(x, k, clean));
                }
            }
            Value::Object(map) => {
                let keys_clean = map.keys().all(|k| clean.check(k, self));
                if keys_clean {
                    for (k, x) in map.iter_mut() {
                        self.walk(x, Some(k), clean);
                    }
                } else {
                    let old = std::mem::take(map);
                    for (k, mut x) in old {
                        self.walk(&mut x, Some(&k), clean);
                        map.insert(self.redact_text(&k).into_owned(), x);
                    }
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
}

/// Map keys already found to hold no secret in this pass: a snapshot repeats the same field
/// names in every history entry, process and unit, and each would otherwise be scanned by
/// every rule again. Bounded, so unique keys (environment names) cannot grow it without end.
#[derive(Default)]
struct CleanKeys(std::collections::HashSet<String>);

impl CleanKeys {
    const MAX: usize = 4096;

    fn check(&mut self, key: &str, r: &Redactor) -> bool {
        if self.0.contains(key) {
            return true;
        }
        let clean = matches!(r.redact_text(key), std::borrow::Cow::Borrowed(_));
        if clean && self.0.len() < Self::MAX {
            self.0.insert(key.to_string());
        }
        clean
    }
}
