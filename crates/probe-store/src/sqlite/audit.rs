//! SQLite's audit records: one row per run and host, the newest of each host read back.

use probe_model::{AuditRecord, UnixTime};
use rusqlite::{Connection, params};

use crate::AuditRun;
use crate::audit::AuditRow;

/// Records `record` of `run` (replacing an earlier record of the same run and host).
pub(super) fn record(
    connection: &mut Connection,
    run: &AuditRun,
    record: &AuditRecord,
    recorded_at: UnixTime,
) -> rusqlite::Result<()> {
    let text = serde_json::to_string(record).unwrap_or_else(|_| "{}".into());
    connection.execute(
        "INSERT OR REPLACE INTO audit_records
           (run_id, host, shard, runner, inventory, started_at, recorded_at, status,
            snapshot_id, record)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            run.run_id,
            record.host,
            run.shard,
            run.runner,
            run.inventory,
            run.started_at,
            recorded_at,
            record.status.as_str(),
            record.snapshot_id,
            text,
        ],
    )?;
    Ok(())
}

/// The newest audit row of every host, by host.
pub(super) fn last_rows(connection: &mut Connection) -> rusqlite::Result<Vec<AuditRow>> {
    let mut statement = connection.prepare(
        "SELECT run_id, shard, runner, inventory, started_at, recorded_at, record
         FROM audit_records a
         WHERE a.rowid = (SELECT b.rowid FROM audit_records b WHERE b.host = a.host
                          ORDER BY b.recorded_at DESC, b.rowid DESC LIMIT 1)
         ORDER BY a.host",
    )?;
    let rows = statement.query_map([], |row| {
        Ok((
            AuditRun {
                run_id: row.get(0)?,
                shard: row.get(1)?,
                runner: row.get(2)?,
                inventory: row.get(3)?,
                started_at: row.get(4)?,
            },
            row.get(5)?,
            row.get(6)?,
        ))
    })?;
    rows.collect()
}
