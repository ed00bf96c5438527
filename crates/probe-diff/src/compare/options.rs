//! How two snapshots are compared.

/// How two snapshots are compared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Also count volatile differences (PIDs, uptime, utilisation, temperatures) as changes.
    pub include_volatile: bool,
    /// The period named good (`--baseline`): the verdict compares it, read from the before
    /// side's logs, with the after side's now instead of the two running runs.
    pub baseline: Option<crate::baseline::Baseline>,
}
