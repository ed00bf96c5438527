//! How two snapshots are compared.

/// How two snapshots are compared.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompareOptions {
    /// Also count volatile differences (PIDs, uptime, utilisation, temperatures) as changes.
    pub include_volatile: bool,
}
