//! Snapshot documents: the JSON form of a [`Snapshot`], read with a schema check so that a
//! document from a newer probe is refused instead of misread.

use std::collections::{HashMap, HashSet};

use probe_model::{FieldReading, FleetView, SCHEMA_VERSION, Snapshot};

use crate::StoreError;
use crate::content::{self, Part, SectionCache, Slot, Stored};

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

/// The fields of [`Snapshot`] that are sections (objects and arrays), by their name in the
/// document: `copy_field` clones one from a snapshot into another, `parse_field` reads one
/// from its JSON text (as the snapshot's own deserializer reads that field's value).
macro_rules! section_fields {
    ($($field:ident),* $(,)?) => {
        fn copy_field(key: &str, from: &Snapshot, to: &mut Snapshot) -> bool {
            match key {
                $(stringify!($field) => to.$field = from.$field.clone(),)*
                _ => return false,
            }
            true
        }

        /// `None` when the text does not parse as that field (or the field is unknown).
        fn parse_field(key: &str, text: &str, to: &mut Snapshot) -> Option<()> {
            match key {
                $(stringify!($field) => to.$field = serde_json::from_str(text).ok()?,)*
                _ => return None,
            }
            Some(())
        }

        fn is_section_field(key: &str) -> bool {
            matches!(key, $(stringify!($field))|*)
        }
    };
}

section_fields!(
    host,
    sections,
    histories,
    units,
    processes,
    containers,
    python_envs,
    gpu,
    models,
    logs,
    package_events,
    servers,
    hardware,
    benchmarks,
    launch_files,
    self_installed,
);

/// What a [`ManyReader`] makes of each snapshot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum Reading {
    /// The whole snapshot (`get_many`).
    #[default]
    Whole,
    /// What a fleet comparison reads ([`FleetView`], `get_many_views`): the fields a view
    /// leaves out are not parsed.
    Fleet,
}

impl Reading {
    fn of(self, field: &str) -> FieldReading {
        match self {
            Reading::Whole => FieldReading::Whole,
            Reading::Fleet => FleetView::reading(field),
        }
    }
}

/// What one caller reading many snapshots keeps between them: sections decompressed, and the
/// shared ones parsed (the field of [`Snapshot`] each fills), so that a section hosts share is
/// read, checked and parsed once, and cloned for each host.
#[derive(Default)]
pub(crate) struct ManyReader {
    pub sections: SectionCache,
    fields: Fields,
    reading: Reading,
}

/// Parsed shared sections: a snapshot with only the field the section fills, by section id.
type Fields = HashMap<i64, Snapshot>;

/// What one thread of [`ManyReader::read_batch`] read, and the shared sections it parsed.
type Share = (Vec<Option<Snapshot>>, Fields);

impl ManyReader {
    /// At most this many parsed sections are kept; past it the cache starts over.
    const FIELDS: usize = 4096;

    /// A reader of whole snapshots, or of what `reading` keeps of them.
    pub fn new(reading: Reading) -> ManyReader {
        ManyReader {
            reading,
            ..ManyReader::default()
        }
    }

    /// Reads one batch of stored snapshots (what [`ManyReader::held`] did not need read):
    /// first the sections several of them need, once, then the snapshots, on as many threads
    /// as the machine has cores (each decompresses and parses its share; a shared section is
    /// parsed at most once per thread and batch, and kept for the next batches).
    pub fn read_batch(
        &mut self,
        batch: Vec<Option<Stored>>,
        what: impl Fn(usize) -> String + Sync,
    ) -> Result<Vec<Option<Snapshot>>, StoreError> {
        let shared = self.hold_shared(&batch, &what)?;
        if self.fields.len() > Self::FIELDS {
            self.fields.clear();
        }
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 16)
            .min(batch.len().div_ceil(16).max(1));
        let chunk = batch.len().div_ceil(threads).max(1);
        let (sections, fields, shared, what) = (&self.sections, &self.fields, &shared, &what);
        let reading = self.reading;
        let read = move |first: usize, stored: &[Option<Stored>]| {
            let mut local = Fields::new();
            let mut decompressor =
                zstd::bulk::Decompressor::new().map_err(|err| StoreError::BadDocument {
                    what: what(first),
                    cause: format!("zstd: {err}"),
                })?;
            let mut snapshots = Vec::with_capacity(stored.len());
            for (offset, stored) in stored.iter().enumerate() {
                let Some(stored) = stored else {
                    snapshots.push(None);
                    continue;
                };
                let what = what(first + offset);
                let parts = stored
                    .parts_shared(sections, &mut decompressor)
                    .map_err(|cause| StoreError::BadDocument {
                        what: what.clone(),
                        cause: cause.to_string(),
                    })?;
                let snapshot = parse(reading, &parts, (shared, fields, &mut local), &what)?;
                snapshots.push(Some(snapshot));
            }
            Ok::<_, StoreError>((snapshots, local))
        };
        let results: Vec<Result<Share, StoreError>> = if threads == 1 {
            vec![read(0, &batch)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = batch
                    .chunks(chunk)
                    .enumerate()
                    .map(|(n, stored)| scope.spawn(move || read(n * chunk, stored)))
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| {
                        handle
                            .join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            })
        };
        let mut snapshots = Vec::with_capacity(batch.len());
        for result in results {
            let (read, local) = result?;
            snapshots.extend(read);
            self.fields.extend(local);
        }
        Ok(snapshots)
    }

    /// The sections several snapshots of `batch` need, decompressed into the cache once
    /// (those it holds already are not read again); their ids.
    fn hold_shared(
        &mut self,
        batch: &[Option<Stored>],
        what: &impl Fn(usize) -> String,
    ) -> Result<HashSet<i64>, StoreError> {
        let mut counts: HashMap<i64, usize> = HashMap::new();
        for stored in batch.iter().flatten() {
            for id in stored.slots.iter().filter_map(Slot::section) {
                *counts.entry(id).or_default() += 1;
            }
        }
        let shared: HashSet<i64> = counts
            .into_iter()
            .filter(|(_, count)| *count > 1)
            .map(|(id, _)| id)
            .collect();
        let zstd = |err: std::io::Error| StoreError::BadDocument {
            what: what(0),
            cause: format!("zstd: {err}"),
        };
        let mut decompressor = zstd::bulk::Decompressor::new().map_err(zstd)?;
        for (index, stored) in batch.iter().enumerate() {
            let Some(stored) = stored else { continue };
            for id in stored.slots.iter().filter_map(Slot::section) {
                if shared.contains(&id) && !self.sections.holds(id) {
                    let bytes = stored.section(id, &mut decompressor).map_err(|cause| {
                        StoreError::BadDocument {
                            what: what(index),
                            cause: cause.to_string(),
                        }
                    })?;
                    self.sections.insert(id, bytes);
                }
            }
        }
        Ok(shared)
    }

    /// The sections held, which the next batch need not read.
    pub fn held(&mut self) -> std::collections::BTreeSet<i64> {
        self.sections.trim();
        self.sections.held()
    }
}

/// Shared sections: their ids, those parsed before, and those this thread parses.
type Shared<'a> = (&'a HashSet<i64>, &'a Fields, &'a mut Fields);

/// The snapshot of `parts`: as [`from_stored`] reads the document they make, but each section
/// parsed on its own, and a shared one (in `shared`) parsed once (kept in `local`; `fields`
/// holds those parsed before) and cloned. Anything unusual (an old document version, a key
/// twice, an unknown section, a part that does not parse) goes the whole way through
/// [`from_stored`], so the outcome is always [`from_stored`]'s. With [`Reading::Fleet`], the
/// fields a [`FleetView`] leaves out are not parsed (nor checked beyond their checksums) and
/// the caller makes the result a view ([`FleetView::of`], as of a snapshot read whole).
fn parse(
    reading: Reading,
    parts: &[Part],
    (shared, fields, local): Shared<'_>,
    what: &str,
) -> Result<Snapshot, StoreError> {
    match parse_fields(reading, parts, shared, fields, local) {
        Some(snapshot) => Ok(snapshot),
        None => {
            let text = content::assemble_slots(parts).map_err(|cause| StoreError::BadDocument {
                what: what.to_string(),
                cause: cause.to_string(),
            })?;
            from_stored(&text, what)
        }
    }
}

fn parse_fields(
    reading: Reading,
    parts: &[Part],
    shared: &HashSet<i64>,
    fields: &Fields,
    local: &mut Fields,
) -> Option<Snapshot> {
    let ((_, layout), sections) = parts.split_first()?;
    let layout = std::str::from_utf8(layout).ok()?;
    if layout == content::WHOLE {
        return None;
    }
    let entries = content::top_level_entries(layout)?;
    let mut seen = HashSet::with_capacity(entries.len());
    let mut scalars = String::with_capacity(layout.len());
    scalars.push('{');
    let mut wanted = Vec::new();
    let mut bodies = sections.iter();
    for (key, value) in &entries {
        if !seen.insert(key.as_str()) {
            return None;
        }
        if value.get() == "{}" {
            if !is_section_field(key) {
                return None;
            }
            wanted.push((key.as_str(), bodies.next()?));
        } else {
            if scalars.len() > 1 {
                scalars.push(',');
            }
            scalars.push_str(&serde_json::to_string(key).ok()?);
            scalars.push(':');
            scalars.push_str(value.get());
        }
    }
    if bodies.next().is_some() {
        return None;
    }
    scalars.push('}');
    let mut snapshot: Snapshot = serde_json::from_str(&scalars).ok()?;
    if snapshot.schema_version == 0 || snapshot.schema_version > SCHEMA_VERSION {
        return None;
    }
    for (key, (id, bytes)) in wanted {
        let how = reading.of(key);
        if how == FieldReading::Skipped {
            continue;
        }
        if let Some(parsed) = id.and_then(|id| fields.get(&id).or_else(|| local.get(&id))) {
            copy_field(key, parsed, &mut snapshot);
            continue;
        }
        let body = std::str::from_utf8(bytes).ok()?;
        match id.filter(|id| shared.contains(id)) {
            Some(id) => {
                let mut parsed = Snapshot::default();
                read_field(how, key, body, &mut parsed)?;
                copy_field(key, &parsed, &mut snapshot);
                local.insert(id, parsed);
            }
            None => read_field(how, key, body, &mut snapshot)?,
        }
    }
    // Where `from_stored` would let `from_json` decide, it decides.
    if snapshot.id.is_empty()
        && snapshot.target.is_empty()
        && snapshot.host == probe_model::HostFacts::default()
    {
        return None;
    }
    Some(snapshot)
}

/// One section's text read into its field, as `how` says.
fn read_field(how: FieldReading, key: &str, text: &str, to: &mut Snapshot) -> Option<()> {
    match how {
        FieldReading::Skipped => Some(()),
        FieldReading::Whole => parse_field(key, text, to),
        FieldReading::Processes => {
            to.processes = FleetView::read_processes(text).ok()?;
            Some(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_of_a_snapshot_is_a_known_field() {
        let text = to_json(&Snapshot::default());
        for (key, value) in content::top_level_entries(&text).unwrap() {
            let raw = value.get();
            assert_eq!(
                is_section_field(&key),
                raw.starts_with('{') || raw.starts_with('['),
                "{key}"
            );
        }
    }

    #[test]
    fn many_read_as_from_stored_reads_them() {
        use std::sync::Arc;
        let mut rich = Snapshot {
            schema_version: SCHEMA_VERSION,
            id: "gpu7-1-abc".into(),
            target: "gpu7".into(),
            ..Snapshot::default()
        };
        rich.host.hostname = Some("gpu7 \"ü\" \u{1F600}\0".into());
        rich.processes.push(probe_model::ProcessInfo {
            pid: 7,
            argv: vec!["python3".into()],
            env: [("A".to_string(), "\"1\"\n".to_string())].into(),
            ..probe_model::ProcessInfo::default()
        });
        rich.processes.push(probe_model::ProcessInfo {
            pid: 8,
            role: probe_model::ProcessRole::Launcher,
            env: [("B".to_string(), "2".to_string())].into(),
            ..probe_model::ProcessInfo::default()
        });
        rich.sections.push(probe_model::SectionReport {
            name: "gpu".into(),
            ..probe_model::SectionReport::default()
        });
        rich.gpu.gpus.push(probe_model::Gpu {
            power_draw_w: Some(-7.032767338253191e-73),
            ..probe_model::Gpu::default()
        });
        let documents = [
            to_json(&rich),
            to_json(&Snapshot::default()),
            to_json(&Snapshot {
                schema_version: SCHEMA_VERSION,
                ..Snapshot::default()
            }),
            to_json(&Snapshot {
                schema_version: SCHEMA_VERSION + 1,
                id: "x".into(),
                ..Snapshot::default()
            }),
            "{\n  \"id\": \"a\",\n  \"target\": \"h\"\n}".to_string(),
            "{\n  \"schema_version\": 1,\n  \"id\": \"a\",\n  \"id\": \"b\"\n}".to_string(),
            "{\n  \"schema_version\": 1,\n  \"id\": \"a\",\n  \"extra\": [\n    1\n  ]\n}"
                .to_string(),
            "{\n  \"schema_version\": 1,\n  \"id\": \"a\",\n  \"host\": []\n}".to_string(),
            "{\n  \"schema_version\": 1,\n  \"id\": \"a\",\n  \"host\": null\n}".to_string(),
            "[1]".to_string(),
        ];
        let (mut fields, mut local) = (Fields::new(), Fields::new());
        for (n, document) in documents.iter().enumerate() {
            let split = content::split(document);
            let slots = content::slots_of(&split);
            // Every section shared (and cached), twice: parsed, then cloned.
            let parts: Vec<Part> = slots
                .iter()
                .enumerate()
                .map(|(i, slot)| (Some((n * 100 + i) as i64), Arc::from(slot.bytes.as_slice())))
                .collect();
            let shared: HashSet<i64> = parts.iter().filter_map(|(id, _)| *id).collect();
            for round in 0..3 {
                if round == 2 {
                    fields.extend(std::mem::take(&mut local));
                }
                let many = parse(Reading::Whole, &parts, (&shared, &fields, &mut local), "t");
                let one = from_stored(document, "t");
                match (many, one) {
                    (Ok(many), Ok(one)) => assert_eq!(many, one, "{document}"),
                    (Err(many), Err(one)) => {
                        assert_eq!(many.to_string(), one.to_string(), "{document}")
                    }
                    (many, one) => panic!("{document}: {many:?} against {one:?}"),
                }
            }
            // As a fleet view: what the view leaves out is not read, the rest as above (the
            // cache of parsed shared sections is per reading, as a `ManyReader`'s is).
            let (fields, mut local) = (Fields::new(), Fields::new());
            for _ in 0..2 {
                let many = parse(Reading::Fleet, &parts, (&shared, &fields, &mut local), "t");
                let one = from_stored(document, "t");
                match (many, one) {
                    (Ok(many), Ok(one)) => {
                        assert!(many.sections.is_empty(), "{document}");
                        assert!(
                            (many.processes.iter())
                                .all(|p| p.role == probe_model::ProcessRole::Launcher
                                    || p.env.is_empty()),
                            "{document}"
                        );
                        assert_eq!(FleetView::of(many), FleetView::of(one), "{document}");
                    }
                    (Err(many), Err(one)) => {
                        assert_eq!(many.to_string(), one.to_string(), "{document}")
                    }
                    (many, one) => panic!("{document}: {many:?} against {one:?}"),
                }
            }
        }
        let fleet = parse(
            Reading::Fleet,
            &content::slots_of(&content::split(&documents[0]))
                .iter()
                .map(|slot| (None, Arc::from(slot.bytes.as_slice())))
                .collect::<Vec<Part>>(),
            (&HashSet::new(), &Fields::new(), &mut Fields::new()),
            "t",
        )
        .unwrap();
        assert_eq!(fleet.processes[1].env["B"], "2");
        assert_eq!(fleet.processes.len(), 2);
        assert_eq!(fleet.host, rich.host);
    }

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
