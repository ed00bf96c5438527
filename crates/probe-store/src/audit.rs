//! Audit outcomes kept in the store: one record per audited host and run, so that the fleet's
//! last audit can be read back whole when many runners (shards) each audited part of it.

use probe_model::{AuditRecord, UnixTime};

/// One run of `probe audit` (one shard of it, when sharded).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct AuditRun {
    /// Unique per run: `<started_at>-<runner>-<pid>`.
    pub run_id: String,
    /// The inventory as named on the command line.
    pub inventory: String,
    /// `I/N` when the run audited one shard of the inventory.
    pub shard: Option<String>,
    /// `user@machine` that ran the audit.
    pub runner: String,
    pub started_at: UnixTime,
}

/// The newest record of one host, with the run it came from.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredAudit {
    pub run: AuditRun,
    pub recorded_at: UnixTime,
    pub record: AuditRecord,
}

/// `user@machine` of this process, for `collected_by` and audit runs (`USER`, else the uid's
/// name in the user database, else `uidN`; the host name).
pub fn runner_name() -> String {
    let user = std::env::var("USER")
        .ok()
        .filter(|user| !user.is_empty())
        .unwrap_or_else(|| {
            let uid = nix::unistd::getuid();
            let user = nix::unistd::User::from_uid(uid).ok().flatten();
            user.map_or_else(|| format!("uid{uid}"), |u| u.name)
        });
    let host = nix::unistd::gethostname()
        .map(|name| name.to_string_lossy().trim().to_string())
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "localhost".into());
    format!("{user}@{host}")
}

/// A stored audit row as both stores read it: the run, when it was recorded, the record's JSON.
pub(crate) type AuditRow = (AuditRun, UnixTime, String);

/// The stored audits of `rows`, their records parsed (`location`: the store, for the error).
pub(crate) fn parsed(
    rows: Vec<AuditRow>,
    location: &str,
) -> Result<Vec<StoredAudit>, crate::StoreError> {
    rows.into_iter()
        .map(|(run, recorded_at, text)| {
            let record =
                serde_json::from_str(&text).map_err(|err| crate::StoreError::BadDocument {
                    what: format!("audit record of run {} in {location}", run.run_id),
                    cause: err.to_string(),
                })?;
            Ok(StoredAudit {
                run,
                recorded_at,
                record,
            })
        })
        .collect()
}
