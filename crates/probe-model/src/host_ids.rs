//! A snapshot's host-local identities: its process ids and GPU UUIDs. Every host has its own,
//! so that two hosts set up alike still differ in them; the fleet comparison's stored
//! fingerprint (probe-store) renames them by their order within the snapshot, so that hosts
//! differing only in them can share one comparison, and [`HostIds`] keeps the values renamed.

use serde::{Deserialize, Serialize};

use crate::Snapshot;

/// One typed identity field of a snapshot, to read or rewrite.
#[derive(Debug)]
pub enum HostIdMut<'a> {
    Pid(&'a mut u32),
    Uuid(&'a mut String),
}

/// Each typed process id and GPU UUID of `snapshot`, in one fixed order: units' main pids,
/// processes (pid, parent, launcher), the GPUs and compute apps of the basic query, the
/// hardware lane's GPUs, compute processes, kernel faults and mapped libraries. A field that
/// holds a process id or a UUID and is not listed here is, to a fingerprint, not an identity:
/// its value stays as it is.
pub fn for_each_host_id(snapshot: &mut Snapshot, mut visit: impl FnMut(HostIdMut<'_>)) {
    let pid = |value: &mut Option<u32>, visit: &mut dyn FnMut(HostIdMut<'_>)| {
        if let Some(value) = value {
            visit(HostIdMut::Pid(value));
        }
    };
    let uuid = |value: &mut Option<String>, visit: &mut dyn FnMut(HostIdMut<'_>)| {
        if let Some(value) = value {
            visit(HostIdMut::Uuid(value));
        }
    };
    for unit in &mut snapshot.units {
        if let Some(state) = &mut unit.state {
            pid(&mut state.main_pid, &mut visit);
        }
    }
    for process in &mut snapshot.processes {
        visit(HostIdMut::Pid(&mut process.pid));
        pid(&mut process.ppid, &mut visit);
        pid(&mut process.launcher_pid, &mut visit);
    }
    for gpu in &mut snapshot.gpu.gpus {
        uuid(&mut gpu.uuid, &mut visit);
    }
    for app in &mut snapshot.gpu.compute_apps {
        uuid(&mut app.gpu_uuid, &mut visit);
        pid(&mut app.pid, &mut visit);
    }
    let hardware = &mut snapshot.hardware;
    for gpu in &mut hardware.gpus {
        uuid(&mut gpu.uuid, &mut visit);
    }
    for process in &mut hardware.processes {
        uuid(&mut process.gpu_uuid, &mut visit);
        pid(&mut process.pid, &mut visit);
    }
    for fault in &mut hardware.faults {
        pid(&mut fault.pid, &mut visit);
    }
    for lib in &mut hardware.loaded_libs {
        visit(HostIdMut::Pid(&mut lib.pid));
    }
}

/// The identities a fingerprint renamed: process ids in ascending order, GPU UUIDs in
/// ascending (byte) order, each once. With the fingerprint's hash they give the snapshot's
/// configuration back exactly; between two hosts whose hashes are equal, they are what differs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostIds {
    #[serde(rename = "p", default)]
    pub pids: Vec<u32>,
    #[serde(rename = "u", default)]
    pub uuids: Vec<String>,
}
