//! Snapshot store (SQLite, WAL) behind a trait.
