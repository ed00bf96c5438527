//! Terminal-safe text: every string that came from a remote host goes through here at parse
//! time, so nothing in a [`probe_model::Snapshot`] can move a cursor, change a title or hide
//! text when printed. The one sanitiser lives in [`probe_model::text`] (shared with the CLI);
//! this module names it for the parsers.

pub use probe_model::text::{line, sanitize_line, sanitize_terminal, text};
