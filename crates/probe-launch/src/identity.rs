//! Which server a launch is: the systemd unit it belongs to, the port it listens on. Two launches
//! of one snapshot with the same unit, or the same engine on the same port, are the same server.

use probe_model::{LaunchConfig, Snapshot, SourceKind, Timeline};

use crate::catalog::catalog;
use crate::catalog::display as display_value;

/// The systemd unit a launch belongs to: its own unit, or the unit whose main PID is the process
/// or one of its parents.
pub fn unit_of(snapshot: &Snapshot, launch: &LaunchConfig) -> Option<String> {
    let location = launch.source.location.trim();
    match launch.source.kind {
        SourceKind::Unit => {
            let name = location.strip_prefix("unit:").unwrap_or(location);
            let name = name.rsplit('/').next().unwrap_or(name);
            return (!name.is_empty()).then(|| name.to_string());
        }
        SourceKind::Process => {}
        _ => {
            let name = location.strip_prefix("unit:").unwrap_or(location);
            if name.ends_with(".service") && !name.contains('/') {
                return Some(name.to_string());
            }
            return None;
        }
    }
    let mut pid = launch.source.pid()?;
    for _ in 0..8 {
        if let Some(unit) = snapshot.units.iter().find(|unit| {
            unit.state
                .as_ref()
                .and_then(|state| state.main_pid)
                .is_some_and(|main_pid| main_pid == pid && main_pid != 0)
        }) {
            return Some(unit.name.clone());
        }
        let parent = snapshot
            .processes
            .iter()
            .find(|process| process.pid == pid)
            .and_then(|process| process.ppid)?;
        if parent <= 1 || parent == pid {
            return None;
        }
        pid = parent;
    }
    None
}

/// The port a launch listens on: its port option, else the engine's default port.
pub fn port_of(launch: &LaunchConfig) -> Option<String> {
    // The common spelling first: no catalog look-up (this runs for every pair of launches
    // compared as servers).
    if let Some(option) = launch.options.get("port") {
        return Some(display_value(&option.value));
    }
    let engine_catalog = catalog(launch.engine, launch.engine_version.as_deref());
    for (name, option) in &launch.options {
        let is_port = engine_catalog
            .get(name)
            .is_some_and(|spec| spec.common.as_deref() == Some("port"))
            || name == "port";
        if is_port {
            return Some(display_value(&option.value));
        }
    }
    engine_catalog
        .by_common("port")
        .and_then(|spec| spec.default.as_ref())
        .filter(|value| !value.is_null())
        .map(display_value)
}

/// Whether two launches of one snapshot belong to the same server: the same systemd unit, or the
/// same engine on the same port.
pub fn same_server(snapshot: &Snapshot, left: &LaunchConfig, right: &LaunchConfig) -> bool {
    if let (Some(left_unit), Some(right_unit)) = (unit_of(snapshot, left), unit_of(snapshot, right))
        && left_unit == right_unit
    {
        return true;
    }
    let left_port = port_of(left);
    left.engine == right.engine && left_port.is_some() && left_port == port_of(right)
}

/// The launches of one server, found once, to ask about many logs whether they are its own:
/// named by one of its launches (the start-up lines a log holds, the file a launch writes to,
/// the unit's journal), or the only server there. Finding them compares the server with every
/// launch of the timeline, so it is done once per server, not once per log.
pub struct ServerLaunches<'a> {
    launches: Vec<&'a LaunchConfig>,
    /// Every launch of the timeline is this server's: every log is.
    all: bool,
}

impl<'a> ServerLaunches<'a> {
    pub fn of(
        snapshot: &Snapshot,
        timeline: &'a Timeline,
        server: &LaunchConfig,
    ) -> ServerLaunches<'a> {
        let launches: Vec<&LaunchConfig> = timeline
            .launches
            .iter()
            .filter(|l| std::ptr::eq(*l, server) || same_server(snapshot, l, server))
            .collect();
        let all = launches.len() == timeline.launches.len();
        ServerLaunches { launches, all }
    }

    /// The launches of the server, in timeline order.
    pub fn launches(&self) -> &[&'a LaunchConfig] {
        &self.launches
    }

    /// Whether the log at `location` is this server's.
    pub fn names_log(&self, location: &str) -> bool {
        if self.all {
            return true;
        }
        let as_evidence = format!("log:{location}");
        let as_unit = format!("unit:{location}");
        self.launches.iter().any(|l| {
            (l.source.kind == SourceKind::Log && l.source.location.trim() == location)
                || l.source.location.trim() == as_unit
                || l.source
                    .also_seen_in
                    .iter()
                    .any(|e| *e == as_evidence || *e == as_unit)
                || l.log_files.iter().any(|f| f == location)
        })
    }
}
