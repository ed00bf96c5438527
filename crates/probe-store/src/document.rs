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
