//! PostgreSQL's side of host identity: the queries that find a snapshot's candidate hosts and
//! record the decision ([`crate::identity`] decides), and the lookup of a host by any name.
//! A new machine is filed with `INSERT ... ON CONFLICT (machine_id)`, so two runners never
//! split one machine into two hosts.

use deadpool_postgres::GenericClient;

use crate::identity::{self, Candidate, Decision, HostKey, Via};

/// The stored hosts that may be `key`'s: the one with its machine-id (tagged -1) and, for each
/// of its names, the most recently seen host recorded under it (tagged with the name's index).
/// Names compare without case.
const CANDIDATES: &str = "
    SELECT id, machine_id, extract(epoch from last_seen)::bigint, -1
    FROM probe.hosts WHERE machine_id = $1
    UNION ALL
    (SELECT h.id, h.machine_id, extract(epoch from h.last_seen)::bigint, 0
     FROM probe.hosts h JOIN probe.host_names n ON n.host_id = h.id
     WHERE lower(n.name) = lower($2::text) ORDER BY h.last_seen DESC LIMIT 1)
    UNION ALL
    (SELECT h.id, h.machine_id, extract(epoch from h.last_seen)::bigint, 1
     FROM probe.hosts h JOIN probe.host_names n ON n.host_id = h.id
     WHERE lower(n.name) = lower($3::text) ORDER BY h.last_seen DESC LIMIT 1)";

/// The candidate hosts of `key` ([`CANDIDATES`]).
async fn candidates(
    client: &impl GenericClient,
    key: &HostKey,
) -> Result<Vec<Candidate>, tokio_postgres::Error> {
    let [hostname, target] = key.names();
    let rows = client
        .query(CANDIDATES, &[&key.machine_id, &hostname, &target])
        .await?;
    Ok(rows
        .iter()
        .filter_map(|row| {
            Some(Candidate {
                host_id: row.get(0),
                machine_id: row.get(1),
                last_seen: row.get(2),
                via: Via::from_tag(row.get(3))?,
            })
        })
        .collect())
}

/// Finds (and with `create`, records) the host identity of `key`.
pub(super) async fn identify_host(
    client: &impl GenericClient,
    key: &HostKey,
    create: bool,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let decision = identity::decide(key, &candidates(client, key).await?);
    if !create {
        return Ok(decision.known());
    }
    let at = key.at as f64;
    let host_id: i64 = match decision {
        Decision::Known(id) => {
            client
                .execute(
                    "UPDATE probe.hosts SET last_seen = greatest(last_seen, to_timestamp($2)),
                            hostname = coalesce($3, hostname),
                            machine_id = coalesce(machine_id, $4)
                     WHERE id = $1",
                    &[&id, &at, &key.hostname, &key.machine_id],
                )
                .await?;
            id
        }
        Decision::New => client
            .query_one(
                "INSERT INTO probe.hosts (machine_id, hostname, first_seen, last_seen)
                 VALUES ($1, $2, to_timestamp($3), to_timestamp($3))
                 ON CONFLICT (machine_id) DO UPDATE SET
                   last_seen = greatest(probe.hosts.last_seen, excluded.last_seen),
                   hostname = coalesce(excluded.hostname, probe.hosts.hostname)
                 RETURNING id",
                &[&key.machine_id, &key.hostname, &at],
            )
            .await?
            .get(0),
    };
    for (name, kind) in key.recorded_names() {
        client
            .execute(
                "INSERT INTO probe.host_names (host_id, name, kind, last_seen)
                 VALUES ($1, $2, $3, to_timestamp($4))
                 ON CONFLICT (host_id, name, kind) DO UPDATE SET
                   last_seen = greatest(probe.host_names.last_seen, excluded.last_seen)",
                &[&host_id, &name, &kind.as_str(), &at],
            )
            .await?;
    }
    Ok(Some(host_id))
}

pub(super) async fn find_host_by_name(
    client: &impl GenericClient,
    name: &str,
) -> Result<Option<i64>, tokio_postgres::Error> {
    let exact = client
        .query_opt(
            "SELECT n.host_id FROM probe.host_names n JOIN probe.hosts h ON h.id = n.host_id
             WHERE lower(n.name) = lower($1) ORDER BY h.last_seen DESC LIMIT 1",
            &[&name],
        )
        .await?
        .map(|row| row.get(0));
    if exact.is_some() || name.len() < 8 {
        return Ok(exact);
    }
    Ok(client
        .query_opt(
            "SELECT id FROM probe.hosts WHERE lower(left(machine_id, length($1))) = lower($1)
             ORDER BY last_seen DESC LIMIT 1",
            &[&name],
        )
        .await?
        .map(|row| row.get(0)))
}
