//! PostgreSQL writes: a snapshot's slots planned against its host's newest snapshot and filed
//! in one transaction per snapshot (writers of one host queue on an advisory lock of its
//! identity; conflicts retried), counted sections, version sets, deletions and their garbage.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::Duration;

use deadpool_postgres::{GenericClient, Pool};
use probe_model::UnixTime;

use super::connect::{connection, pg_error, retryable};
use super::hosts::identify_host;
use super::read::read_stored_in;
use crate::StoreError;
use crate::content::{self, Plan, Planned, Previous, Section, Slot};
use crate::identity::HostKey;

/// Attempts of a write transaction that failed on a serialization failure or deadlock.
const WRITE_ATTEMPTS: u32 = 4;

/// Key of the advisory lock between writers (shared) and the removal of unreferenced sections
/// (exclusive): a writer that found a section keeps it alive until it has committed its
/// reference.
const SECTIONS_LOCK: i64 = 0x70_72_6f_62_65_73;

/// What `put` needs of a snapshot, owned (the work runs on the store's runtime).
pub(super) struct PutRow {
    pub(super) id: String,
    pub(super) identity: HostKey,
    pub(super) address: Option<String>,
    pub(super) collected_at: UnixTime,
    pub(super) schema_version: i32,
    pub(super) engines: Vec<String>,
    pub(super) versions: String,
    pub(super) slots: Vec<Section>,
    pub(super) collected_by: String,
    /// The configuration fingerprint, as stored (empty: none).
    pub(super) fingerprint: Vec<u8>,
}

/// A write that failed: in the database, or making a section's body.
pub(super) enum WriteError {
    Pg(tokio_postgres::Error),
    Content(crate::content::ContentError),
    Store(StoreError),
}

impl From<tokio_postgres::Error> for WriteError {
    fn from(err: tokio_postgres::Error) -> WriteError {
        WriteError::Pg(err)
    }
}

impl WriteError {
    pub(super) fn into_store(self, store: &str) -> StoreError {
        match self {
            WriteError::Pg(err) => pg_error(store, &err),
            WriteError::Content(cause) => StoreError::Postgres {
                store: store.to_string(),
                cause: cause.to_string(),
            },
            WriteError::Store(err) => err,
        }
    }
}

pub(super) async fn put_row(pool: Pool, store: String, row: PutRow) -> Result<i64, StoreError> {
    let mut client = connection(&pool, &store).await?;
    let planned = plan_put(&client, &store, &row).await?;
    let mut attempt = 0;
    let (host_id, replaced) = loop {
        attempt += 1;
        match put_once(&mut client, &store, &row, &planned).await {
            Ok(done) => break done,
            Err(WriteError::Pg(err)) if retryable(&err) && attempt < WRITE_ATTEMPTS => {
                tracing::debug!(store = %store, attempt, "write conflict, retrying");
                tokio::time::sleep(Duration::from_millis(20 * u64::from(attempt))).await;
            }
            Err(err) => return Err(err.into_store(&store)),
        }
    };
    if !replaced.is_empty() {
        // The replaced snapshot's sections that nothing needs any more. The snapshot is
        // committed: a failure here leaves unreferenced sections (space, not data) for the next
        // prune, so it is logged, not returned.
        if let Err(err) = collect_garbage_now(&mut client, &replaced).await {
            tracing::warn!(store = %store, "{}", pg_error(&store, &err));
        }
    }
    Ok(host_id)
}

/// How the slots of `row` will be stored, against its host's newest snapshot. `put` plans
/// (and compresses) before its write transaction so that it stays short, and again inside it
/// only when a section the plan uses went meanwhile.
async fn plan_put(
    client: &impl GenericClient,
    store: &str,
    row: &PutRow,
) -> Result<Plan, StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(store, &err);
    let hashes: Vec<&[u8]> = row.slots.iter().map(|s| s.hash.as_slice()).collect();
    let known: HashMap<[u8; 32], i64> = client
        .query(
            "SELECT hash, id FROM probe.sections WHERE hash = ANY($1)",
            &[&hashes],
        )
        .await
        .map_err(fail)?
        .iter()
        .filter_map(|found| {
            let hash: Vec<u8> = found.get(0);
            Some((<[u8; 32]>::try_from(hash.as_slice()).ok()?, found.get(1)))
        })
        .collect();
    let newest: Option<String> = match identify_host(client, &row.identity, false)
        .await
        .map_err(fail)?
    {
        Some(host_id) => client
            .query_opt(
                "SELECT id FROM probe.snapshots WHERE host_id = $1
                 ORDER BY collected_at DESC, seq DESC LIMIT 1",
                &[&host_id],
            )
            .await
            .map_err(fail)?
            .map(|found| found.get(0)),
        None => None,
    };
    let previous: Option<Previous> = match newest {
        // A previous snapshot that cannot be read (pruned meanwhile) is no base: the new one is
        // stored whole.
        Some(id) => read_stored_in(client, (&[id], &BTreeSet::new()), store)
            .await
            .ok()
            .and_then(|mut stored| stored.pop().flatten())
            .and_then(|stored| stored.into_previous().ok()),
        None => None,
    };
    content::plan(&row.slots, &known, previous.as_ref()).map_err(|cause| StoreError::Postgres {
        store: store.to_string(),
        cause: cause.to_string(),
    })
}

/// Stores the new sections of `plan` (or finds them, stored by another writer) and gives the
/// slots. The caller holds [`SECTIONS_LOCK`] (shared). They are inserted in hash order, so two
/// writers storing the same new sections wait for each other in one order, never in a cycle.
async fn file_new_sections(
    client: &impl GenericClient,
    plan: &Plan,
) -> Result<Vec<Slot>, WriteError> {
    let mut new: Vec<(&Section, &Vec<u8>)> = plan
        .slots
        .iter()
        .filter_map(|slot| match slot {
            Planned::New { section, body } => Some((section, body)),
            _ => None,
        })
        .collect();
    let in_order: Vec<[u8; 32]> = new.iter().map(|(section, _)| section.hash).collect();
    new.sort_by_key(|(section, _)| section.hash);
    new.dedup_by_key(|(section, _)| section.hash);
    let mut filed: HashMap<[u8; 32], i64> = HashMap::new();
    for (section, body) in new {
        filed.insert(section.hash, insert_section(client, section, body).await?);
    }
    let ids: Vec<i64> = in_order
        .iter()
        .filter_map(|hash| filed.get(hash).copied())
        .collect();
    plan.slots_with(&ids).map_err(WriteError::Content)
}

/// Stores `section` with its compressed `body` (its count 0 until the caller raises it), or
/// finds it, stored by another writer; its id.
pub(super) async fn insert_section(
    client: &impl GenericClient,
    section: &Section,
    body: &[u8],
) -> Result<i64, tokio_postgres::Error> {
    let size = i64::try_from(section.bytes.len()).unwrap_or(i64::MAX);
    let inserted = client
        .query_opt(
            "INSERT INTO probe.sections (hash, size, body) VALUES ($1, $2, $3)
             ON CONFLICT (hash) DO NOTHING RETURNING id",
            &[&section.hash.as_slice(), &size, &body],
        )
        .await?;
    Ok(match inserted {
        Some(row) => row.get(0),
        // Another writer stored it first (and has committed: the insert waited for it).
        None => client
            .query_one(
                "SELECT id FROM probe.sections WHERE hash = $1",
                &[&section.hash.as_slice()],
            )
            .await?
            .get(0),
    })
}

/// Adds `counts` to the reference counts of their sections. The rows are locked in id order
/// first, so writers sharing sections never deadlock.
pub(super) async fn adjust_refs(
    client: &impl GenericClient,
    counts: &BTreeMap<i64, i64>,
) -> Result<(), tokio_postgres::Error> {
    let (ids, deltas): (Vec<i64>, Vec<i64>) = counts
        .iter()
        .filter(|(_, delta)| **delta != 0)
        .map(|(id, delta)| (*id, *delta))
        .unzip();
    if ids.is_empty() {
        return Ok(());
    }
    client
        .query(
            "SELECT id FROM probe.sections WHERE id = ANY($1) ORDER BY id FOR UPDATE",
            &[&ids],
        )
        .await?;
    client
        .execute(
            "UPDATE probe.sections c SET refs = c.refs + d.n
             FROM unnest($1::bigint[], $2::bigint[]) AS d(id, n) WHERE c.id = d.id",
            &[&ids, &deltas],
        )
        .await?;
    Ok(())
}

/// The id of the set of indexed versions `versions` (JSON text), recorded when new.
async fn version_set(client: &impl GenericClient, versions: &str) -> Result<i64, WriteError> {
    let inserted = client
        .query_opt(
            "INSERT INTO probe.version_sets (versions) VALUES ($1::text::jsonb)
             ON CONFLICT (versions) DO NOTHING RETURNING id",
            &[&versions],
        )
        .await?;
    Ok(match inserted {
        Some(found) => found.get(0),
        None => client
            .query_one(
                "SELECT id FROM probe.version_sets WHERE versions = $1::text::jsonb",
                &[&versions],
            )
            .await?
            .get(0),
    })
}

/// One write: returns the host id and the sections a snapshot it replaced needed.
async fn put_once(
    client: &mut deadpool_postgres::Object,
    store: &str,
    row: &PutRow,
    planned: &Plan,
) -> Result<(i64, Vec<i64>), WriteError> {
    let transaction = client.transaction().await?;
    transaction
        .execute(
            "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))",
            &[&row.identity.lock_key()],
        )
        .await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock_shared($1)", &[&SECTIONS_LOCK])
        .await?;
    let host_id = identify_host(&transaction, &row.identity, true)
        .await?
        .unwrap_or_default();
    let replaced = replaced_sections(&transaction, &row.id).await?;
    let replanned = replanned(&transaction, store, row, planned).await?;
    let plan = replanned.as_ref().unwrap_or(planned);
    let slots = file_new_sections(&transaction, plan).await?;
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for id in slots.iter().filter_map(Slot::section) {
        *counts.entry(id).or_default() += 1;
    }
    for id in &replaced {
        *counts.entry(*id).or_default() -= 1;
    }
    adjust_refs(&transaction, &counts).await?;
    let version_set = version_set(&transaction, &row.versions).await?;
    insert_row(
        &transaction,
        row,
        host_id,
        version_set,
        (&slots, &plan.frame),
    )
    .await?;
    transaction.commit().await?;
    Ok((host_id, replaced))
}

/// The sections the stored snapshot `id` (which this write replaces) needs, its row locked.
async fn replaced_sections(client: &impl GenericClient, id: &str) -> Result<Vec<i64>, WriteError> {
    Ok(
        match client
            .query_opt(
                "SELECT slots FROM probe.snapshots WHERE id = $1 FOR UPDATE",
                &[&id],
            )
            .await?
        {
            Some(old) => content::decode_slots(&old.get::<_, Vec<u8>>(0))
                .map_err(WriteError::Content)?
                .iter()
                .filter_map(Slot::section)
                .collect(),
            None => Vec::new(),
        },
    )
}

/// A new plan when a section `planned` uses went meanwhile (planned before the locks; none
/// can go now, while the shared lock is held), else `None`.
async fn replanned(
    client: &impl GenericClient,
    store: &str,
    row: &PutRow,
    planned: &Plan,
) -> Result<Option<Plan>, WriteError> {
    let uses = planned.uses();
    let present: i64 = client
        .query_one(
            "SELECT count(*) FROM probe.sections WHERE id = ANY($1)",
            &[&uses],
        )
        .await?
        .get(0);
    if present == uses.len() as i64 {
        return Ok(None);
    }
    plan_put(client, store, row)
        .await
        .map(Some)
        .map_err(WriteError::Store)
}

/// The snapshot's row, replacing one of the same id, with its `slots` and own `frame`.
async fn insert_row(
    client: &impl GenericClient,
    row: &PutRow,
    host_id: i64,
    version_set: i64,
    (slots, frame): (&[Slot], &[u8]),
) -> Result<(), tokio_postgres::Error> {
    let encoded = content::encode_slots(slots);
    let own: Option<&[u8]> = (!frame.is_empty()).then_some(frame);
    client
        .execute(
            "INSERT INTO probe.snapshots
               (id, host_id, target, address, hostname, machine_id, collected_at, collected_by,
                schema_version, engines, version_set, slots, own, redacted, fingerprint)
             VALUES ($1, $2, $3, $4, $5, $6, to_timestamp($7), $8, $9, $10, $11, $12, $13, true,
                     $14)
             ON CONFLICT (id) DO UPDATE SET
               host_id = excluded.host_id, target = excluded.target,
               address = excluded.address, hostname = excluded.hostname,
               machine_id = excluded.machine_id, collected_at = excluded.collected_at,
               collected_by = excluded.collected_by,
               schema_version = excluded.schema_version, engines = excluded.engines,
               version_set = excluded.version_set, slots = excluded.slots,
               own = excluded.own, redacted = excluded.redacted,
               fingerprint = excluded.fingerprint, seq = DEFAULT",
            &[
                &row.id,
                &host_id,
                &row.identity.target,
                &row.address,
                &row.identity.hostname,
                &row.identity.machine_id,
                &(row.collected_at as f64),
                &row.collected_by,
                &row.schema_version,
                &row.engines,
                &version_set,
                &encoded,
                &own,
                &row.fingerprint,
            ],
        )
        .await?;
    Ok(())
}

/// Removes those of `candidates` that no snapshot refers to, in a transaction of its own that
/// holds [`SECTIONS_LOCK`] exclusively.
async fn collect_garbage_now(
    client: &mut deadpool_postgres::Object,
    candidates: &[i64],
) -> Result<(), tokio_postgres::Error> {
    let transaction = client.transaction().await?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&SECTIONS_LOCK])
        .await?;
    collect_garbage(&transaction, candidates).await?;
    transaction.commit().await
}

/// Deletes those of `candidates` that no snapshot refers to. The caller holds
/// [`SECTIONS_LOCK`] exclusively.
pub(super) async fn collect_garbage(
    client: &impl GenericClient,
    candidates: &[i64],
) -> Result<u64, tokio_postgres::Error> {
    let candidates: Vec<i64> = candidates
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if candidates.is_empty() {
        return Ok(0);
    }
    client
        .execute(
            "DELETE FROM probe.sections WHERE id = ANY($1) AND refs <= 0",
            &[&candidates],
        )
        .await
}

/// Deletes snapshots `ids` in one transaction holding [`SECTIONS_LOCK`] exclusively (no
/// writer is between finding a section and committing its reference), with the sections
/// nothing needs any more.
pub(super) async fn delete(pool: Pool, store: String, ids: Vec<String>) -> Result<(), StoreError> {
    let fail = |err: tokio_postgres::Error| pg_error(&store, &err);
    let mut client = connection(&pool, &store).await?;
    let transaction = client.transaction().await.map_err(fail)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&SECTIONS_LOCK])
        .await
        .map_err(fail)?;
    let mut referenced: Vec<i64> = Vec::new();
    for row in transaction
        .query(
            "DELETE FROM probe.snapshots WHERE id = ANY($1) RETURNING slots",
            &[&ids],
        )
        .await
        .map_err(fail)?
    {
        let slots = content::decode_slots(&row.get::<_, Vec<u8>>(0)).map_err(|cause| {
            StoreError::Postgres {
                store: store.clone(),
                cause: cause.to_string(),
            }
        })?;
        referenced.extend(slots.iter().filter_map(Slot::section));
    }
    let mut counts: BTreeMap<i64, i64> = BTreeMap::new();
    for id in &referenced {
        *counts.entry(*id).or_default() -= 1;
    }
    adjust_refs(&transaction, &counts).await.map_err(fail)?;
    collect_garbage(&transaction, &referenced)
        .await
        .map_err(fail)?;
    transaction.commit().await.map_err(fail)
}
