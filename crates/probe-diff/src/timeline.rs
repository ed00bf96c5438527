//! The launch timeline of one snapshot.
