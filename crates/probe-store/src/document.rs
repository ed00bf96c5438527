//! Snapshot documents: the JSON form of a [`Snapshot`], read with a schema check so that a
//! document from a newer probe is refused instead of misread.

use probe_model::{SCHEMA_VERSION, Snapshot};

use crate::StoreError;

/// Serialises a snapshot as the pretty JSON document `probe snapshots export` writes.
pub fn to_json(snapshot: &Snapshot) -> String {
    // Serialising plain data structs with string keys cannot fail.
    serde_json::to_string_pretty(snapshot).unwrap_or_else(|_| String::from("{}"))
}

/// Parses a snapshot document. `what` names it in errors (a file path, a snapshot id).
///
/// A document without `schema_version` (or with 0) is read as version 1, the first schema. A
/// document from a newer schema is refused with [`StoreError::NewerSnapshot`].
pub fn from_json(text: &str, what: &str) -> Result<Snapshot, StoreError> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|err| StoreError::BadDocument {
            what: what.to_string(),
            cause: err.to_string(),
        })?;
    let Some(object) = value.as_object() else {
        return Err(StoreError::BadDocument {
            what: what.to_string(),
            cause: "expected a JSON object".to_string(),
        });
    };
    let found = object
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    if found > u64::from(SCHEMA_VERSION) {
        return Err(StoreError::NewerSnapshot {
            what: what.to_string(),
            found: u32::try_from(found).unwrap_or(u32::MAX),
            supported: SCHEMA_VERSION,
        });
    }
    if !object.contains_key("id") && !object.contains_key("host") && !object.contains_key("target")
    {
        return Err(StoreError::BadDocument {
            what: what.to_string(),
            cause: "no `id`, `target` or `host`: not a probe snapshot".to_string(),
        });
    }
    let mut snapshot: Snapshot =
        serde_json::from_value(value).map_err(|err| StoreError::BadDocument {
            what: what.to_string(),
            cause: err.to_string(),
        })?;
    // Migrations of older document versions go here; version 1 is the first.
    if snapshot.schema_version == 0 {
        snapshot.schema_version = 1;
    }
    Ok(snapshot)
}

/// Parses a document the store itself wrote (`to_json` output, so every field is there): straight
/// into the snapshot type, without [`from_json`]'s detour through a JSON value, with the same
/// schema checks. Anything that does not parse that way goes through [`from_json`], so the
/// outcome (and every error) is the same as [`from_json`]'s.
pub(crate) fn from_stored(text: &str, what: &str) -> Result<Snapshot, StoreError> {
    if !text.trim_start().starts_with('{') {
        return from_json(text, what);
    }
    match serde_json::from_str::<Snapshot>(text) {
        // Where the typed reading cannot tell what `from_json` would decide (an old version, a
        // document that may lack every identifying field), `from_json` decides.
        Ok(snapshot)
            if snapshot.schema_version == 0
                || (snapshot.id.is_empty()
                    && snapshot.target.is_empty()
                    && snapshot.host == probe_model::HostFacts::default()) =>
        {
            from_json(text, what)
        }
        Ok(snapshot) if snapshot.schema_version > SCHEMA_VERSION => {
            Err(StoreError::NewerSnapshot {
                what: what.to_string(),
                found: snapshot.schema_version,
                supported: SCHEMA_VERSION,
            })
        }
        Ok(snapshot) => Ok(snapshot),
        Err(_) => from_json(text, what),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let snapshot = Snapshot {
            schema_version: SCHEMA_VERSION,
            id: "gpu7-1-abc".into(),
            target: "gpu7".into(),
            collected_at: 1_700_000_000,
            ..Snapshot::default()
        };
        let text = to_json(&snapshot);
        assert_eq!(from_json(&text, "t").unwrap(), snapshot);
    }

    #[test]
    fn stored_documents_read_as_from_json_reads_them() {
        let snapshot = Snapshot {
            schema_version: SCHEMA_VERSION,
            id: "gpu7-1-abc".into(),
            target: "gpu7".into(),
            ..Snapshot::default()
        };
        let text = to_json(&snapshot);
        assert_eq!(
            from_stored(&text, "t").unwrap(),
            from_json(&text, "t").unwrap()
        );
        let old = r#"{"id": "a", "target": "h"}"#;
        assert_eq!(from_stored(old, "t").unwrap(), from_json(old, "t").unwrap());
        let newer = format!(r#"{{"schema_version": {}, "id": "x"}}"#, SCHEMA_VERSION + 1);
        assert!(matches!(
            from_stored(&newer, "t").unwrap_err(),
            StoreError::NewerSnapshot { .. }
        ));
        for refused in ["[1]", r#"{"foo": 1}"#, r#"{"id": "a", "id": "b"}x"#] {
            assert!(matches!(
                from_stored(refused, "t").unwrap_err(),
                StoreError::BadDocument { .. }
            ));
        }
    }

    #[test]
    fn newer_schema_refused() {
        let text = format!(
            r#"{{"schema_version": {}, "id": "x", "target": "h"}}"#,
            SCHEMA_VERSION + 1
        );
        let err = from_json(&text, "file.json").unwrap_err();
        assert!(matches!(err, StoreError::NewerSnapshot { .. }), "{err}");
        assert!(err.to_string().contains("file.json"));
        assert!(err.to_string().contains("newer"));
    }

    #[test]
    fn garbage_refused() {
        assert!(matches!(
            from_json("not json", "f").unwrap_err(),
            StoreError::BadDocument { .. }
        ));
        assert!(matches!(
            from_json("[1,2]", "f").unwrap_err(),
            StoreError::BadDocument { .. }
        ));
        assert!(matches!(
            from_json(r#"{"foo": 1}"#, "f").unwrap_err(),
            StoreError::BadDocument { .. }
        ));
    }

    #[test]
    fn old_document_without_version_reads_as_v1() {
        let snapshot = from_json(r#"{"id": "a", "target": "h"}"#, "f").unwrap();
        assert_eq!(snapshot.schema_version, 1);
    }
}
