//! Layout 4: a snapshot's slots, and its own frame.
//!
//! A snapshot is a list of *slots*: its layout first, then its sections in document order. A slot
//! is either *shared*, a section of the `sections` table (content-addressed, compressed alone,
//! what hosts and hours have in common), or the snapshot's *own*: its bytes are in the
//! snapshot's frame, one zstd frame per snapshot holding every own slot, compressed with the
//! slots' *bases* (shared sections of the same host's earlier version of that slot) as its
//! dictionary. A read decodes each base (a frame alone) and the own frame: never a chain.

use super::error::ContentError;
use super::section::{MAX_SECTION_BYTES, Section, Split};

/// How one slot of a stored snapshot is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The section with this id holds the bytes.
    Shared(i64),
    /// `len` bytes of the snapshot's own frame, which is compressed against the bytes of
    /// section `base` (with those of the other own slots' bases); `depth` counts the snapshots
    /// of this host since the base was stored (1: the next one).
    Own {
        base: Option<i64>,
        depth: u32,
        len: usize,
    },
}

impl Slot {
    /// The section a slot needs to be read: its own, or its base.
    pub fn section(&self) -> Option<i64> {
        match self {
            Slot::Shared(id) => Some(*id),
            Slot::Own { base, .. } => *base,
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn get_varint(bytes: &[u8], at: &mut usize) -> Result<u64, ContentError> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or("the slot list ends early")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(ContentError::from("a number in the slot list is too long"))
}

/// The slot list as stored: a count, then per slot its section (0: none) and depth (0:
/// shared), and for an own slot its length, each as a LEB128 number.
pub(crate) fn encode_slots(slots: &[Slot]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + 4 * slots.len());
    put_varint(&mut out, slots.len() as u64);
    for slot in slots {
        match *slot {
            Slot::Shared(id) => {
                put_varint(&mut out, id as u64);
                put_varint(&mut out, 0);
            }
            Slot::Own { base, depth, len } => {
                put_varint(&mut out, base.unwrap_or(0) as u64);
                put_varint(&mut out, u64::from(depth.max(1)));
                put_varint(&mut out, len as u64);
            }
        }
    }
    out
}

/// Reads [`encode_slots`]'s output.
pub(crate) fn decode_slots(bytes: &[u8]) -> Result<Vec<Slot>, ContentError> {
    let mut at = 0;
    let count = get_varint(bytes, &mut at)?;
    if count > bytes.len() as u64 {
        return Err(ContentError::Damaged(format!(
            "the slot list claims {count} slots"
        )));
    }
    let mut slots = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let id = i64::try_from(get_varint(bytes, &mut at)?).map_err(ContentError::from)?;
        let depth = get_varint(bytes, &mut at)?;
        if depth == 0 {
            if id == 0 {
                return Err(ContentError::from("a shared slot without its section"));
            }
            slots.push(Slot::Shared(id));
        } else {
            let len = usize::try_from(get_varint(bytes, &mut at)?)
                .ok()
                .filter(|len| *len <= MAX_SECTION_BYTES)
                .ok_or("an own slot claims too many bytes")?;
            slots.push(Slot::Own {
                base: (id != 0).then_some(id),
                depth: u32::try_from(depth).unwrap_or(u32::MAX),
                len,
            });
        }
    }
    if at != bytes.len() {
        return Err(ContentError::from("bytes after the slot list"));
    }
    Ok(slots)
}

/// A document's slots: its layout, then its sections.
pub(crate) fn slots_of(split: &Split) -> Vec<Section> {
    let mut slots = Vec::with_capacity(split.sections.len() + 1);
    slots.push(Section::of(split.layout.as_bytes()));
    slots.extend(split.sections.iter().cloned());
    slots
}
