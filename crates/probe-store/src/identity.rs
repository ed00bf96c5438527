//! Host identity: which stored host a snapshot belongs to. One rule for both stores, decided
//! here over the candidate rows each store's SQL finds ([`decide`]); the stores keep only the
//! queries that find the candidates and record the outcome.
//!
//! The rule: a host recorded with the snapshot's machine-id is that host. Otherwise the
//! snapshot's names are tried in order, hostname then target; for each, the most recently seen
//! host recorded under it is taken when it cannot be another machine (it has no machine-id,
//! or the snapshot has none). Otherwise the snapshot's host is new. So a renamed or
//! re-addressed machine keeps its history, and a new machine that took an old name does not
//! inherit another machine's.

use probe_model::{Snapshot, UnixTime};

use crate::host_names::{HostNameKind, host_names};

/// The names and ids a snapshot files its host under (trimmed; empty ones left out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HostKey {
    pub(crate) machine_id: Option<String>,
    pub(crate) hostname: Option<String>,
    pub(crate) target: String,
    /// The address connected to, without its port.
    pub(crate) address_host: Option<String>,
    pub(crate) at: UnixTime,
}

impl HostKey {
    pub(crate) fn of(snapshot: &Snapshot) -> HostKey {
        let trimmed = |value: &Option<String>| {
            value
                .as_deref()
                .map(str::trim)
                .filter(|value| !value.is_empty())
                .map(str::to_string)
        };
        HostKey {
            machine_id: trimmed(&snapshot.host.machine_id),
            hostname: trimmed(&snapshot.host.hostname),
            target: snapshot.target.clone(),
            address_host: snapshot
                .address
                .as_deref()
                .map(strip_port)
                .map(str::to_string),
            at: snapshot.collected_at,
        }
    }

    /// The key with every text made storable by `clean` (PostgreSQL's text cannot hold NUL).
    pub(crate) fn cleaned(self, clean: impl Fn(&str) -> String) -> HostKey {
        HostKey {
            machine_id: self.machine_id.as_deref().map(&clean),
            hostname: self.hostname.as_deref().map(&clean),
            target: clean(&self.target),
            address_host: self.address_host.as_deref().map(&clean),
            at: self.at,
        }
    }

    /// The names a host is looked up by, in the order they are tried: hostname, then target.
    /// A candidate found by `names()[i]` is [`Via::Name`]`(i)`.
    pub(crate) fn names(&self) -> [Option<&str>; 2] {
        [
            self.hostname.as_deref(),
            Some(self.target.as_str()).filter(|target| !target.is_empty()),
        ]
    }

    /// Every name the host is recorded under once the snapshot is stored, with its kind.
    pub(crate) fn recorded_names(&self) -> Vec<(&str, HostNameKind)> {
        host_names(
            self.hostname.as_deref(),
            &self.target,
            self.address_host.as_deref(),
            self.machine_id.as_deref(),
        )
    }

    /// What writers of one host queue on (PostgreSQL's advisory lock): the machine-id, else
    /// the first name, case folded.
    pub(crate) fn lock_key(&self) -> String {
        match &self.machine_id {
            Some(id) => format!("machine-id:{id}"),
            None => format!(
                "name:{}",
                self.hostname
                    .as_deref()
                    .unwrap_or(&self.target)
                    .to_lowercase()
            ),
        }
    }
}

/// How a candidate was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Via {
    /// Recorded with the snapshot's machine-id.
    MachineId,
    /// Recorded under `HostKey::names()[i]`.
    Name(usize),
}

impl Via {
    /// The stores' queries tag each row with a number: -1 for the machine-id, else the index
    /// of the name.
    pub(crate) fn from_tag(tag: i32) -> Option<Via> {
        match tag {
            -1 => Some(Via::MachineId),
            0 | 1 => Some(Via::Name(tag as usize)),
            _ => None,
        }
    }
}

/// A stored host that may be the snapshot's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) host_id: i64,
    /// The machine-id recorded for the host.
    pub(crate) machine_id: Option<String>,
    pub(crate) last_seen: UnixTime,
    pub(crate) via: Via,
}

/// Whose the snapshot is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A stored host.
    Known(i64),
    /// A host not stored yet.
    New,
}

impl Decision {
    pub(crate) fn known(self) -> Option<i64> {
        match self {
            Decision::Known(id) => Some(id),
            Decision::New => None,
        }
    }
}

/// The rule of this module's doc, over the candidates the store found for `key` (in any
/// order; of several found the same way, the most recently seen, then the highest id).
pub(crate) fn decide(key: &HostKey, candidates: &[Candidate]) -> Decision {
    let newest = |via: Via| {
        candidates
            .iter()
            .filter(|c| c.via == via)
            .max_by_key(|c| (c.last_seen, c.host_id))
    };
    if key.machine_id.is_some()
        && let Some(found) = newest(Via::MachineId)
    {
        return Decision::Known(found.host_id);
    }
    for (index, name) in key.names().iter().enumerate() {
        if name.is_none() {
            continue;
        }
        // A name match is only taken when it cannot belong to another machine.
        if let Some(found) = newest(Via::Name(index))
            && (found.machine_id.is_none() || key.machine_id.is_none())
        {
            return Decision::Known(found.host_id);
        }
    }
    Decision::New
}

/// `host:port`, `[v6]:port` -> host.
pub(crate) fn strip_port(address: &str) -> &str {
    if let Some(rest) = address.strip_prefix('[') {
        return rest.split_once(']').map_or(rest, |(host, _)| host);
    }
    match address.rsplit_once(':') {
        Some((host, port)) if !host.contains(':') && port.parse::<u16>().is_ok() => host,
        _ => address,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(machine_id: Option<&str>, hostname: Option<&str>, target: &str) -> HostKey {
        HostKey {
            machine_id: machine_id.map(str::to_string),
            hostname: hostname.map(str::to_string),
            target: target.into(),
            address_host: None,
            at: 100,
        }
    }

    fn row(host_id: i64, machine_id: Option<&str>, last_seen: i64, via: Via) -> Candidate {
        Candidate {
            host_id,
            machine_id: machine_id.map(str::to_string),
            last_seen,
            via,
        }
    }

    const HOSTNAME: Via = Via::Name(0);
    const TARGET: Via = Via::Name(1);

    #[test]
    fn decisions() {
        use Decision::{Known, New};
        let m1 = Some("m1");
        let (full, bare) = (
            key(m1, Some("gpu7"), "gpu7.lan"),
            key(None, Some("gpu7"), "gpu7.lan"),
        );
        let no_hostname = key(m1, None, "gpu7.lan");
        // (what, the snapshot's key, the candidates found, the decision)
        let cases: Vec<(&str, &HostKey, Vec<Candidate>, Decision)> = vec![
            ("nothing stored", &full, vec![], New),
            (
                "machine-id",
                &full,
                vec![row(1, m1, 10, Via::MachineId)],
                Known(1),
            ),
            (
                "machine-id before a newer host of the same name",
                &full,
                vec![row(2, None, 50, HOSTNAME), row(1, m1, 10, Via::MachineId)],
                Known(1),
            ),
            (
                "a name whose host has no machine-id is adopted",
                &full,
                vec![row(3, None, 10, HOSTNAME)],
                Known(3),
            ),
            (
                "a name whose host is another machine is not",
                &full,
                vec![row(4, Some("m2"), 10, HOSTNAME)],
                New,
            ),
            (
                "then the target is tried",
                &full,
                vec![row(4, Some("m2"), 10, HOSTNAME), row(5, None, 5, TARGET)],
                Known(5),
            ),
            (
                "hostname before target",
                &full,
                vec![row(5, None, 50, TARGET), row(3, None, 10, HOSTNAME)],
                Known(3),
            ),
            (
                "a snapshot without machine-id takes a name's host with one",
                &bare,
                vec![row(4, Some("m2"), 10, HOSTNAME)],
                Known(4),
            ),
            (
                "a snapshot without machine-id ignores a machine-id row",
                &bare,
                vec![row(1, m1, 10, Via::MachineId)],
                New,
            ),
            (
                "the newest host of a name is the one looked at",
                &full,
                vec![row(6, None, 10, HOSTNAME), row(7, Some("m3"), 20, HOSTNAME)],
                New,
            ),
            (
                "the newest host of a name wins",
                &bare,
                vec![row(6, None, 10, HOSTNAME), row(7, Some("m3"), 20, HOSTNAME)],
                Known(7),
            ),
            (
                "equally recent: the higher id",
                &bare,
                vec![row(9, None, 20, HOSTNAME), row(8, None, 20, HOSTNAME)],
                Known(9),
            ),
            (
                "no hostname: the target is the first name",
                &no_hostname,
                vec![row(5, None, 5, TARGET)],
                Known(5),
            ),
            (
                "a row for a name the snapshot lacks is ignored",
                &no_hostname,
                vec![row(3, None, 10, HOSTNAME)],
                New,
            ),
        ];
        for (what, key, candidates, expected) in cases {
            assert_eq!(decide(key, &candidates), expected, "{what}");
        }
    }

    #[test]
    fn keys_of_snapshots() {
        let snapshot = |machine_id: Option<&str>, hostname: Option<&str>, address: Option<&str>| {
            let mut snapshot = Snapshot {
                target: "gpu7".into(),
                address: address.map(str::to_string),
                collected_at: 42,
                ..Snapshot::default()
            };
            snapshot.host.machine_id = machine_id.map(str::to_string);
            snapshot.host.hostname = hostname.map(str::to_string);
            snapshot
        };
        // (machine-id, hostname, address) -> (key's machine-id, hostname, address host, lock)
        let cases = [
            (
                (Some(" m1\n"), Some("GPU7 "), Some("10.0.0.7:22")),
                (Some("m1"), Some("GPU7"), Some("10.0.0.7"), "machine-id:m1"),
            ),
            (
                (Some("  "), Some(""), Some("[::1]:2222")),
                (None, None, Some("::1"), "name:gpu7"),
            ),
            (
                (None, Some("GPU7"), None),
                (None, Some("GPU7"), None, "name:gpu7"),
            ),
        ];
        for ((machine_id, hostname, address), expected) in cases {
            let key = HostKey::of(&snapshot(machine_id, hostname, address));
            let got = (
                key.machine_id.as_deref(),
                key.hostname.as_deref(),
                key.address_host.as_deref(),
                key.lock_key(),
            );
            assert_eq!(
                got,
                (expected.0, expected.1, expected.2, expected.3.to_string())
            );
            assert_eq!(key.at, 42);
        }
        let key =
            HostKey::of(&snapshot(None, Some("a\0b"), None)).cleaned(|t| t.replace('\0', "?"));
        assert_eq!(key.hostname.as_deref(), Some("a?b"));
        assert_eq!(key.names(), [Some("a?b"), Some("gpu7")]);
        assert_eq!(key.recorded_names().len(), 2);
    }

    #[test]
    fn tags() {
        assert_eq!(Via::from_tag(-1), Some(Via::MachineId));
        assert_eq!(Via::from_tag(1), Some(Via::Name(1)));
        assert_eq!(Via::from_tag(2), None);
    }

    #[test]
    fn strip_port_forms() {
        assert_eq!(strip_port("10.0.0.1:22"), "10.0.0.1");
        assert_eq!(strip_port("[::1]:2222"), "::1");
        assert_eq!(strip_port("gpu7"), "gpu7");
        assert_eq!(strip_port("::1"), "::1");
    }
}
