//! SQLite's side of host identity: the queries that find a snapshot's candidate hosts and
//! record the decision ([`crate::identity`] decides), and the lookup of a host by any name.

use rusqlite::{Connection, OptionalExtension, params};

use crate::identity::{self, Candidate, Decision, HostKey, Via};

/// The stored hosts that may be `key`'s: the one with its machine-id (tagged -1) and, for each
/// of its names, the most recently seen host recorded under it (tagged with the name's index).
/// `host_names.name` compares without case.
const CANDIDATES: &str = "
    SELECT id, machine_id, last_seen, -1 FROM hosts WHERE machine_id = ?1
    UNION ALL
    SELECT * FROM (SELECT h.id, h.machine_id, h.last_seen, 0
                   FROM hosts h JOIN host_names n ON n.host_id = h.id
                   WHERE n.name = ?2 ORDER BY h.last_seen DESC LIMIT 1)
    UNION ALL
    SELECT * FROM (SELECT h.id, h.machine_id, h.last_seen, 1
                   FROM hosts h JOIN host_names n ON n.host_id = h.id
                   WHERE n.name = ?3 ORDER BY h.last_seen DESC LIMIT 1)";

/// The candidate hosts of `key` ([`CANDIDATES`]).
fn candidates(connection: &Connection, key: &HostKey) -> rusqlite::Result<Vec<Candidate>> {
    let [hostname, target] = key.names();
    let mut statement = connection.prepare_cached(CANDIDATES)?;
    let rows = statement.query_map(params![key.machine_id, hostname, target], |row| {
        Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get::<_, i32>(3)?))
    })?;
    let mut found = Vec::new();
    for row in rows {
        let (host_id, machine_id, last_seen, tag) = row?;
        if let Some(via) = Via::from_tag(tag) {
            found.push(Candidate {
                host_id,
                machine_id,
                last_seen,
                via,
            });
        }
    }
    Ok(found)
}

/// Finds (and with `create`, records) the host identity of `key`.
pub(super) fn identify_host(
    connection: &Connection,
    key: &HostKey,
    create: bool,
) -> rusqlite::Result<Option<i64>> {
    let decision = identity::decide(key, &candidates(connection, key)?);
    if !create {
        return Ok(decision.known());
    }
    let host_id = match decision {
        Decision::Known(id) => {
            connection.execute(
                "UPDATE hosts SET last_seen = max(last_seen, ?2),
                        hostname = coalesce(?3, hostname),
                        machine_id = coalesce(machine_id, ?4)
                 WHERE id = ?1",
                params![id, key.at, key.hostname, key.machine_id],
            )?;
            id
        }
        Decision::New => {
            connection.execute(
                "INSERT INTO hosts (machine_id, hostname, first_seen, last_seen)
                 VALUES (?1, ?2, ?3, ?3)",
                params![key.machine_id, key.hostname, key.at],
            )?;
            connection.last_insert_rowid()
        }
    };
    for (name, kind) in key.recorded_names() {
        connection.execute(
            "INSERT INTO host_names (host_id, name, kind, last_seen) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT (host_id, name, kind) DO UPDATE SET
               last_seen = max(last_seen, excluded.last_seen)",
            params![host_id, name, kind.as_str(), key.at],
        )?;
    }
    Ok(Some(host_id))
}

/// The host a name refers to: any recorded hostname, target, address or machine-id (a prefix of
/// at least 8 characters also matches a machine-id). The most recently seen host wins.
pub(super) fn find_host_by_name(
    connection: &Connection,
    name: &str,
) -> rusqlite::Result<Option<i64>> {
    let exact = connection
        .query_row(
            "SELECT n.host_id FROM host_names n JOIN hosts h ON h.id = n.host_id
             WHERE n.name = ?1 ORDER BY h.last_seen DESC LIMIT 1",
            params![name],
            |row| row.get(0),
        )
        .optional()?;
    if exact.is_some() || name.len() < 8 {
        return Ok(exact);
    }
    connection
        .query_row(
            "SELECT id FROM hosts WHERE machine_id LIKE ?1 || '%' ORDER BY last_seen DESC LIMIT 1",
            params![name],
            |row| row.get(0),
        )
        .optional()
}
