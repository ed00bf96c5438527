//! Content-addressed sections: how both stores keep a snapshot document so that what did not
//! change since the last snapshot costs a reference, not a copy.
//!
//! A document (the pretty JSON `to_json` writes) is split at its top level. Every field whose
//! value is an object or an array (`host`, `processes`, `gpu`, `logs`, ...) becomes a
//! [`Section`]: the exact bytes of that value in the document, addressed by their SHA-256 and
//! kept zstd-compressed, once per store however many snapshots (of however many hosts) hold
//! the same bytes. The scalar fields (`id`, `collected_at`, `duration_ms`, ...) differ from one
//! snapshot to the next anyway, so they stay inline in the snapshot's *layout*: the top-level
//! object written compactly, with `{}` in place of each section (a scalar is never an object,
//! so `{}` is unambiguous).
//!
//! [`assemble`](section::assemble) puts the bytes back together, and [`split`] checks that it
//! does before it answers: a document it cannot give back byte for byte (never the case for
//! `to_json` output, but an imported text could be anything) is kept whole, as one section
//! under the empty layout. Either way the export of a stored snapshot is byte-identical to what was stored.
//!
//! Layout 4 stores a snapshot as [`Slot`]s (its layout, then its sections): a slot is a shared
//! section, or the snapshot's own bytes, in one zstd frame per snapshot compressed with the
//! slots' bases (the same host's earlier shared copy of each) as dictionary. [`plan`] decides
//! which, [`Stored::parts`] reads them back; a read decodes bases and the own frame, never a
//! chain.

mod error;
mod plan;
mod section;
mod slots;
mod stored;

pub(crate) use error::ContentError;
pub(crate) use plan::{Plan, Planned, layout_alone, plan};
pub(crate) use section::{Section, WHOLE, split, top_level_entries};
pub(crate) use slots::{Slot, decode_slots, encode_slots, slots_of};
pub(crate) use stored::{Part, Previous, SectionCache, Stored, assemble_slots};
