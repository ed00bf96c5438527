//! Comparing launches and snapshots; impact ranking.
