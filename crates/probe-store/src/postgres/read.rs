//! PostgreSQL reads: snapshots' slots with the sections they need, in one consistent view,
//! and rows of snapshot metas.

use std::collections::{BTreeSet, HashMap};

use deadpool_postgres::GenericClient;
use tokio_postgres::Row;

use super::connect::pg_error;
use crate::content::{self, Slot, Stored};
use crate::{SnapshotMeta, StoreError};

/// The columns of a [`SnapshotMeta`], of `probe.snapshots s`.
const META_COLUMNS: &str = "s.id, s.host_id, s.hostname, s.machine_id, s.target, s.address,
    extract(epoch from s.collected_at)::bigint, s.schema_version, s.engines,
    (SELECT v.versions::text FROM probe.version_sets v WHERE v.id = s.version_set)";

pub(super) async fn query_meta(
    client: &impl GenericClient,
    tail: &str,
    parameters: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> Result<Vec<SnapshotMeta>, tokio_postgres::Error> {
    let sql = format!("SELECT {META_COLUMNS} FROM probe.snapshots s {tail}");
    let rows = client.query(&sql, parameters).await?;
    Ok(rows.iter().map(meta_of).collect())
}

fn meta_of(row: &Row) -> SnapshotMeta {
    let schema_version: i32 = row.get(7);
    let versions: String = row.get(9);
    SnapshotMeta {
        id: row.get(0),
        host_id: row.get(1),
        hostname: row.get(2),
        machine_id: row.get(3),
        target: row.get(4),
        address: row.get(5),
        collected_at: row.get(6),
        schema_version: u32::try_from(schema_version).unwrap_or_default(),
        engines: row.get(8),
        versions: serde_json::from_str(&versions).unwrap_or_default(),
    }
}

/// Snapshots `ids` as stored (`None` where one is not), with the sections they need but
/// `held`, read in one repeatable-read transaction (one consistent view).
pub(super) async fn read_stored(
    client: &mut deadpool_postgres::Object,
    store: &str,
    ids: &[String],
    held: &BTreeSet<i64>,
) -> Result<Vec<Option<Stored>>, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let transaction = client
        .build_transaction()
        .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()
        .await
        .map_err(fail)?;
    let stored = read_stored_in(&transaction, (ids, held), store).await?;
    transaction.commit().await.map_err(fail)?;
    Ok(stored)
}

/// [`read_stored`]'s statements, in the caller's transaction.
pub(super) async fn read_stored_in(
    client: &impl GenericClient,
    (ids, held): (&[String], &BTreeSet<i64>),
    store: &str,
) -> Result<Vec<Option<Stored>>, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let rows = client
        .query(
            "SELECT id, slots, own FROM probe.snapshots WHERE id = ANY($1)",
            &[&ids],
        )
        .await
        .map_err(fail)?;
    let bad = |cause: String| StoreError::Postgres {
        store: store.to_string(),
        cause,
    };
    let mut found: HashMap<String, Stored> = HashMap::with_capacity(rows.len());
    let mut wanted: BTreeSet<i64> = BTreeSet::new();
    for row in &rows {
        let id: String = row.get(0);
        let slots = content::decode_slots(&row.get::<_, Vec<u8>>(1))
            .map_err(|cause| bad(format!("snapshot {id}: {cause}")))?;
        wanted.extend(
            slots
                .iter()
                .filter_map(Slot::section)
                .filter(|section| !held.contains(section)),
        );
        let frame: Option<Vec<u8>> = row.get(2);
        found.insert(
            id,
            Stored {
                slots,
                frame: frame.unwrap_or_default(),
                sections: HashMap::new(),
            },
        );
    }
    let wanted: Vec<i64> = wanted.into_iter().collect();
    let mut sections: HashMap<i64, (Vec<u8>, i64, Vec<u8>)> = HashMap::new();
    if !wanted.is_empty() {
        for row in client
            .query(
                "SELECT id, hash, size, body FROM probe.sections WHERE id = ANY($1)",
                &[&wanted],
            )
            .await
            .map_err(fail)?
        {
            sections.insert(row.get(0), (row.get(1), row.get(2), row.get(3)));
        }
    }
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let Some(mut stored) = found.get(id).cloned() else {
            out.push(None);
            continue;
        };
        for section in stored.slots.iter().filter_map(Slot::section) {
            if held.contains(&section) || stored.sections.contains_key(&section) {
                continue;
            }
            let Some(body) = sections.get(&section) else {
                return Err(bad(format!(
                    "snapshot {id} needs section {section}, which is missing"
                )));
            };
            stored.sections.insert(section, body.clone());
        }
        out.push(Some(stored));
    }
    Ok(out)
}

/// The stored fingerprint columns of `ids` ([`crate::fingerprint::Column`]), in one statement.
pub(super) async fn fingerprint_columns(
    client: &impl GenericClient,
    ids: &[String],
) -> Result<Vec<crate::fingerprint::Column>, tokio_postgres::Error> {
    let rows = client
        .query(
            "SELECT id, fingerprint FROM probe.snapshots WHERE id = ANY($1)",
            &[&ids],
        )
        .await?;
    let found: HashMap<String, Option<Vec<u8>>> =
        rows.iter().map(|row| (row.get(0), row.get(1))).collect();
    Ok(ids.iter().map(|id| found.get(id).cloned()).collect())
}
