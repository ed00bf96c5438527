//! Process exit codes of the `probe` binary, in one place so scripts can rely on them.
//!
//! They follow diff(1): 0 means nothing (meaningful) differs, 1 means something does, 2 means an
//! error. Audits add codes for the partial outcomes an operator's timer wants to tell apart.

/// Success; for `diff` and `audit --fail-on drift`: nothing meaningful differs.
pub const OK: u8 = 0;
/// Differences were found (`probe diff`, `probe audit --fail-on drift`).
pub const DIFFERENCES: u8 = 1;
/// Usage error, bad input, or the operation failed.
pub const ERROR: u8 = 2;
/// `probe audit`: at least one host could not be reached or authenticated (`--fail-on error`).
pub const HOSTS_FAILED: u8 = 3;
/// A host key was changed or revoked: always refused, reported with its own code.
pub const HOST_KEY_REFUSED: u8 = 4;
/// The collection succeeded and its report was written, but the snapshot could not be stored
/// (a full disk, a read-only store, a store file the user cannot write, a shared store that
/// does not answer). The snapshot was kept in the spool directory when that could be written,
/// for `probe snapshots import`. Below 3 and 4 in an audit's severity order, above 1.
pub const NOT_STORED: u8 = 5;
/// `probe host`, and `probe audit` (`--fail-on drift` or `error`): every host was collected and
/// stored, but at least one snapshot lost sections to the connection (a channel the server
/// refused to the end, a dropped link); the snapshot is still reported and stored, a notice
/// names the sections, and the audit's host status is `partial`. Below 4, 3 and 5 in severity,
/// above 1 (drift seen on a snapshot that lost sections may be the loss itself).
pub const INCOMPLETE: u8 = 6;
