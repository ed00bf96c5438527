//! PostgreSQL's audit records: one row per run and host, the newest of each host read back.

use deadpool_postgres::Pool;

use super::connect::{clean, clean_opt, connection, pg_error};
use crate::audit::AuditRow;
use crate::{AuditRun, StoreError};

/// One audited host's record, owned (the work runs on the store's runtime), its text cleaned.
pub(super) struct AuditWrite {
    pub(super) run: AuditRun,
    pub(super) host: String,
    pub(super) status: &'static str,
    pub(super) snapshot_id: Option<String>,
    /// The record's JSON.
    pub(super) text: String,
    pub(super) recorded_at: i64,
}

/// Records `write` (replacing an earlier record of the same run and host).
pub(super) async fn record(pool: Pool, store: String, write: AuditWrite) -> Result<(), StoreError> {
    let AuditWrite {
        run,
        host,
        status,
        snapshot_id,
        text,
        recorded_at,
    } = write;
    let client = connection(&pool, &store).await?;
    client
        .execute(
            "INSERT INTO probe.audit_records
               (run_id, host, shard, runner, inventory, started_at, recorded_at, status,
                snapshot_id, record)
             VALUES ($1, $2, $3, $4, $5, to_timestamp($6), to_timestamp($7), $8, $9,
                     $10::text::jsonb)
             ON CONFLICT (run_id, host) DO UPDATE SET
               shard = excluded.shard, runner = excluded.runner,
               inventory = excluded.inventory, recorded_at = excluded.recorded_at,
               status = excluded.status, snapshot_id = excluded.snapshot_id,
               record = excluded.record, seq = DEFAULT",
            &[
                &clean(&run.run_id),
                &host,
                &clean_opt(run.shard.as_deref()),
                &clean(&run.runner),
                &clean(&run.inventory),
                &(run.started_at as f64),
                &(recorded_at as f64),
                &status,
                &snapshot_id,
                &text,
            ],
        )
        .await
        .map(|_| ())
        .map_err(|err| pg_error(&store, &err))
}

/// The newest audit row of every host, by host.
pub(super) async fn last_rows(pool: Pool, store: String) -> Result<Vec<AuditRow>, StoreError> {
    let client = connection(&pool, &store).await?;
    let rows = client
        .query(
            "SELECT DISTINCT ON (host) run_id, shard, runner, inventory,
                    extract(epoch from started_at)::bigint,
                    extract(epoch from recorded_at)::bigint, record::text
             FROM probe.audit_records ORDER BY host, recorded_at DESC, seq DESC",
            &[],
        )
        .await
        .map_err(|err| pg_error(&store, &err))?;
    Ok(rows
        .iter()
        .map(|row| {
            (
                AuditRun {
                    run_id: row.get(0),
                    shard: row.get(1),
                    runner: row.get(2),
                    inventory: row.get(3),
                    started_at: row.get(4),
                },
                row.get(5),
                row.get(6),
            )
        })
        .collect())
}
