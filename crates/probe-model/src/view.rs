//! What a fleet comparison (`probe audit --outliers`, the outliers of `probe audit report`)
//! reads of a snapshot: [`FleetView`], the one declaration of it. probe-diff's `fleet` computes
//! the outliers from views only; probe-store reads views for many hosts at once
//! (`get_many_views`), parsing only what a view keeps, and turns a snapshot it read whole into
//! one with [`FleetView::of`].
//!
//! The fleet comparison is `probe diff` between hosts (launches, runs, timeline, packages, GPUs,
//! models, units, containers, hardware, servers, metrics for the verdict), so a view keeps
//! almost everything. It leaves out what no part of that comparison reads and what costs most to
//! parse: the section reports (`sections`), and the environment of every process that is not a
//! launcher (only a launcher's environment goes into its reconstructed launch; a worker's or a
//! wrapper's is a copy of a whole login environment, per process).

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IntoDeserializer, MapAccess, SeqAccess};
use serde::de::{Deserialize, Visitor};
use serde_json::value::RawValue;

use serde::Serialize;

use crate::{HostFacts, ProcessInfo, ProcessRole, Snapshot};

/// A snapshot as the fleet comparison reads it: the fields it does not read left empty.
///
/// ```
/// use probe_model::{FleetView, ProcessInfo, ProcessRole, SectionReport, Snapshot};
///
/// let process = |pid, role| ProcessInfo {
///     pid,
///     role,
///     env: [("CUDA_VISIBLE_DEVICES".to_string(), "0,1".to_string())].into(),
///     ..ProcessInfo::default()
/// };
/// let snapshot = Snapshot {
///     sections: vec![SectionReport::default()],
///     processes: vec![process(1, ProcessRole::Launcher), process(2, ProcessRole::Worker)],
///     ..Snapshot::default()
/// };
/// let view = FleetView::of(snapshot);
/// assert!(view.snapshot().sections.is_empty());
/// assert_eq!(view.snapshot().processes[0].env.len(), 1);
/// assert!(view.snapshot().processes[1].env.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FleetView {
    snapshot: Snapshot,
}

/// How a view reads one top-level field of a snapshot document ([`FleetView::reading`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldReading {
    /// Not read: left empty (its text is not parsed).
    Skipped,
    /// Read as the snapshot reads it.
    Whole,
    /// `processes`, read with [`FleetView::read_processes`]: each process whole but its
    /// environment, which is parsed only for a launcher.
    Processes,
}

impl FleetView {
    /// The view of a snapshot read whole.
    pub fn of(mut snapshot: Snapshot) -> FleetView {
        snapshot.sections = Vec::new();
        for process in &mut snapshot.processes {
            if !keeps_env(process.role) {
                process.env = BTreeMap::new();
            }
        }
        FleetView { snapshot }
    }

    /// A "view" that keeps every field: only for tests that hold the outliers of views against
    /// those of whole snapshots (the projection must leave out nothing the comparison reads).
    #[doc(hidden)]
    pub fn unprojected(snapshot: Snapshot) -> FleetView {
        FleetView { snapshot }
    }

    /// The snapshot, with the fields a view leaves out empty.
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The snapshot, with the fields a view leaves out empty, taken.
    pub fn into_snapshot(self) -> Snapshot {
        self.snapshot
    }

    /// How a view reads the top-level field `field` of a snapshot document (every field
    /// [`FleetView::of`] empties or thins is named here).
    pub fn reading(field: &str) -> FieldReading {
        match field {
            "sections" => FieldReading::Skipped,
            "processes" => FieldReading::Processes,
            _ => FieldReading::Whole,
        }
    }

    /// The `processes` of a snapshot document (the JSON array) as a view keeps them: every
    /// field, but the environment only of a launcher (the environments of the others are
    /// skipped as JSON, not parsed).
    pub fn read_processes(text: &str) -> serde_json::Result<Vec<ProcessInfo>> {
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let processes = deserializer.deserialize_seq(Processes)?;
        deserializer.end()?;
        Ok(processes)
    }
}

impl FleetView {
    /// What of this view the fleet comparison compares: [`FleetView::configuration_of`] its
    /// snapshot. Two members whose configurations are equal (as values and as serialised
    /// bytes) share one comparison; a store keeps a fingerprint of it with each snapshot.
    pub fn configuration(&self) -> impl Serialize + PartialEq + fmt::Debug + '_ {
        FleetView::configuration_of(&self.snapshot)
    }

    /// What of a snapshot can make a change the fleet comparison keeps: everything but the
    /// fields left out here, each read by probe-diff and probe-launch at most for a change of a
    /// key probe-diff's `fleet::configuration_changes` drops (`host.*`) or for labels outside
    /// the changes:
    ///
    /// - `id`: the diff's `SnapshotRef` and the verdict's period label (`snapshot ID`), which is
    ///   the symptom's, not a change's;
    /// - `target` and `host.hostname`: the `SnapshotRef`'s and the timeline's host name (labels),
    ///   and the `host.hostname` change;
    /// - `host.uptime_s`, `host.boot_time`, `host.mem_available_kib`: their `host.*` changes only;
    /// - `address`, `remote_clock`, `collector_version`, `duration_ms`, `host.machine_id`: read by
    ///   nothing in the comparison.
    ///
    /// A field added to [`Snapshot`] or [`HostFacts`] is compared until it is listed here (the
    /// destructuring names every field).
    pub fn configuration_of(snapshot: &Snapshot) -> impl Serialize + PartialEq + fmt::Debug + '_ {
        let Snapshot {
            schema_version,
            id: _,
            target: _,
            address: _,
            collected_at,
            remote_clock: _,
            collector_version: _,
            redacted,
            sudo,
            duration_ms: _,
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
        } = snapshot;
        let HostFacts {
            hostname: _,
            machine_id: _,
            os_pretty,
            os_id,
            os_version_id,
            kernel,
            arch,
            uptime_s: _,
            boot_time: _,
            cpu_model,
            cpu_count,
            mem_total_kib,
            mem_available_kib: _,
            collected_as,
        } = host;
        (
            (schema_version, collected_at, redacted, sudo),
            (
                os_pretty,
                os_id,
                os_version_id,
                kernel,
                arch,
                cpu_model,
                cpu_count,
                mem_total_kib,
                collected_as,
            ),
            (
                sections,
                histories,
                units,
                processes,
                containers,
                python_envs,
                gpu,
                models,
                logs,
            ),
            (
                package_events,
                servers,
                hardware,
                benchmarks,
                launch_files,
                self_installed,
            ),
        )
    }
}

impl From<Snapshot> for FleetView {
    fn from(snapshot: Snapshot) -> FleetView {
        FleetView::of(snapshot)
    }
}

/// Whether a view keeps the environment of a process in this role.
fn keeps_env(role: ProcessRole) -> bool {
    role == ProcessRole::Launcher
}

struct Processes;

impl<'de> Visitor<'de> for Processes {
    type Value = Vec<ProcessInfo>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a sequence")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut processes = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(process) = seq.next_element_seed(Process)? {
            processes.push(process);
        }
        Ok(processes)
    }
}

/// One process: its `env` held back as JSON text while the rest is read (the role comes after
/// it), then parsed if the process is a launcher.
struct Process;

impl<'de> DeserializeSeed<'de> for Process {
    type Value = ProcessInfo;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<ProcessInfo, D::Error> {
        let mut env: Option<&'de RawValue> = None;
        let mut process = ProcessInfo::deserialize(HeldEnv {
            inner: deserializer,
            env: &mut env,
        })?;
        if let Some(env) = env.filter(|_| keeps_env(process.role)) {
            process.env = serde_json::from_str(env.get()).map_err(de::Error::custom)?;
        }
        Ok(process)
    }
}

/// A deserializer that hands the struct visitor every key of the object but `env`, whose value
/// it keeps as text.
struct HeldEnv<'a, 'de, D> {
    inner: D,
    env: &'a mut Option<&'de RawValue>,
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for HeldEnv<'_, 'de, D> {
    type Error = D::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        self.inner.deserialize_any(HeldEnvVisitor {
            visitor,
            env: self.env,
        })
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            HeldEnvVisitor {
                visitor,
                env: self.env,
            },
        )
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

struct HeldEnvVisitor<'a, 'de, V> {
    visitor: V,
    env: &'a mut Option<&'de RawValue>,
}

impl<'de, V: Visitor<'de>> Visitor<'de> for HeldEnvVisitor<'_, 'de, V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(formatter)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_map(HeldEnvMap { map, env: self.env })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        self.visitor.visit_seq(seq)
    }
}

struct HeldEnvMap<'a, 'de, A> {
    map: A,
    env: &'a mut Option<&'de RawValue>,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for HeldEnvMap<'_, 'de, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        while let Some(key) = self.map.next_key::<Key<'de>>()? {
            match key {
                Key::Env => {
                    // As the derived reader: a key twice is an error.
                    if self.env.is_some() {
                        return Err(de::Error::duplicate_field("env"));
                    }
                    *self.env = Some(self.map.next_value::<&'de RawValue>()?);
                }
                Key::Borrowed(name) => {
                    return seed
                        .deserialize(de::value::BorrowedStrDeserializer::new(name))
                        .map(Some);
                }
                Key::Owned(name) => {
                    return seed
                        .deserialize(IntoDeserializer::<'de, A::Error>::into_deserializer(name))
                        .map(Some);
                }
            }
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }

    fn size_hint(&self) -> Option<usize> {
        self.map.size_hint()
    }
}

/// A key of a process object: `env`, or another, borrowed from the text where it can be.
enum Key<'de> {
    Env,
    Borrowed(&'de str),
    Owned(String),
}

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key<'de>, D::Error> {
        deserializer.deserialize_str(KeyVisitor)
    }
}

struct KeyVisitor;

impl<'de> Visitor<'de> for KeyVisitor {
    type Value = Key<'de>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a field name")
    }

    fn visit_borrowed_str<E: de::Error>(self, name: &'de str) -> Result<Key<'de>, E> {
        Ok(if name == "env" {
            Key::Env
        } else {
            Key::Borrowed(name)
        })
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Key<'de>, E> {
        Ok(if name == "env" {
            Key::Env
        } else {
            Key::Owned(name.to_string())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, SectionReport};

    fn process(pid: u32, role: ProcessRole) -> ProcessInfo {
        ProcessInfo {
            pid,
            ppid: Some(1),
            user: Some("ubuntu".into()),
            argv: vec!["python3".into(), "-m".into(), "sglang.launch_server".into()],
            env: [
                (
                    "SGLANG_TORCH_PROFILER_DIR".to_string(),
                    "/tmp/p\n\"q\"".to_string(),
                ),
                ("CUDA_VISIBLE_DEVICES".to_string(), "0,1".to_string()),
            ]
            .into(),
            role,
            engine: Some(Engine::Sglang),
            start_time: Some(1_795_000_000),
            ..ProcessInfo::default()
        }
    }

    fn snapshot() -> Snapshot {
        Snapshot {
            schema_version: crate::SCHEMA_VERSION,
            id: "gpu7-1-abc".into(),
            target: "gpu7".into(),
            sections: vec![SectionReport {
                name: "processes".into(),
                bytes: 100,
                ..SectionReport::default()
            }],
            processes: vec![
                process(10, ProcessRole::Wrapper),
                process(11, ProcessRole::Launcher),
                process(12, ProcessRole::Worker),
                process(13, ProcessRole::Other),
            ],
            ..Snapshot::default()
        }
    }

    /// Reading a document field by field as [`FleetView::reading`] says gives what
    /// [`FleetView::of`] makes of the whole snapshot.
    #[test]
    fn reading_the_fields_gives_the_view_of_the_snapshot() {
        let whole = snapshot();
        let blank = serde_json::to_value(Snapshot::default()).unwrap();
        let mut document = serde_json::to_value(&whole).unwrap();
        for (field, value) in document.as_object_mut().unwrap() {
            match FleetView::reading(field) {
                FieldReading::Whole => {}
                FieldReading::Skipped => *value = blank[field.as_str()].clone(),
                FieldReading::Processes => {
                    let text = serde_json::to_string_pretty(value).unwrap();
                    let read = FleetView::read_processes(&text).unwrap();
                    *value = serde_json::to_value(read).unwrap();
                }
            }
        }
        let read: Snapshot = serde_json::from_value(document).unwrap();
        let view = FleetView::of(whole.clone());
        assert_eq!(&read, view.snapshot());
        assert!(view.snapshot().sections.is_empty());
        let envs: Vec<usize> = (view.snapshot().processes.iter())
            .map(|p| p.env.len())
            .collect();
        assert_eq!(envs, [0, 2, 0, 0]);
        // Everything else as it was.
        let mut back = view.snapshot().clone();
        back.sections = whole.sections.clone();
        for (process, original) in back.processes.iter_mut().zip(&whole.processes) {
            process.env = original.env.clone();
        }
        assert_eq!(back, whole);
    }

    #[test]
    fn processes_read_as_the_derived_reader_reads_them_but_the_environments() {
        // Keys in another order, an escaped key, unknown keys, a missing env.
        let text = r#"[
            {"role": "launcher", "env": {"A": "1"}, "p\u0069d": 5, "extra": [1, {"env": 2}]},
            {"env": {"B": "2"}, "pid": 6, "role": "worker", "argv": ["x"]},
            {"pid": 7, "role": "launcher"}
        ]"#;
        let read = FleetView::read_processes(text).unwrap();
        let derived: Vec<ProcessInfo> = serde_json::from_str(text).unwrap();
        let expected: Vec<ProcessInfo> = FleetView::of(Snapshot {
            processes: derived,
            ..Snapshot::default()
        })
        .snapshot()
        .processes
        .clone();
        assert_eq!(read, expected);
        assert_eq!(read[0].pid, 5);
        assert_eq!(read[0].env["A"], "1");
        assert!(read[1].env.is_empty());
        assert_eq!(read[1].argv, ["x"]);
        for refused in [
            r#"[{"pid": 5, "env": {}, "env": {}}]"#,
            r#"[{"pid": "five"}]"#,
            r#"[{"role": "launcher", "env": {"A": 1}}]"#,
            r#"{"pid": 5}"#,
            r#"[] x"#,
        ] {
            assert!(FleetView::read_processes(refused).is_err(), "{refused}");
            let derived: serde_json::Result<Vec<ProcessInfo>> = serde_json::from_str(refused);
            assert!(derived.is_err(), "{refused}");
        }
    }
}
