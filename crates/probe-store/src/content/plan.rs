//! Planning a put: which slots of a snapshot are stored shared and which go into its own frame,
//! compressed against the same host's earlier bases.

use super::error::ContentError;
use std::collections::HashMap;

use super::section::Section;
use super::slots::Slot;
use super::stored::Previous;

/// The zstd level of a snapshot's own frame (its difference from its bases). On the store
/// bench's hourly host, levels 15 to 19 stored the same bytes (1,065 per snapshot, against
/// 1,147 at 13 and at 9) and 15 took two thirds of 19's CPU per put.
const OWN_LEVEL: i32 = 15;

/// A slot's bytes are its own (compressed against a base) for at most this many snapshots in
/// a row; then the slot is stored whole, as a shared section, and becomes the next base.
/// Hourly audits store a base a day.
pub(crate) const BASE_EVERY: u32 = 24;

/// How a new snapshot's slot will be kept.
#[derive(Debug, Clone)]
pub(crate) enum Planned {
    /// A section the store holds.
    Existing(i64),
    /// A new shared section, stored whole (the body is compressed already).
    New { section: Section, body: Vec<u8> },
    /// The snapshot's own, against `base` (a section the store holds).
    Own {
        base: Option<i64>,
        depth: u32,
        len: usize,
    },
}

/// A snapshot to store: how each slot is kept, and its own frame (empty when it has no own
/// slot).
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub slots: Vec<Planned>,
    pub frame: Vec<u8>,
}

impl Plan {
    /// The sections the plan uses that must still be there when it is written.
    pub fn uses(&self) -> Vec<i64> {
        let mut ids: Vec<i64> = self
            .slots
            .iter()
            .filter_map(|slot| match slot {
                Planned::Existing(id) => Some(*id),
                Planned::Own { base, .. } => *base,
                Planned::New { .. } => None,
            })
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The stored slot list, once the new sections have ids (`new_ids`, in slot order).
    pub fn slots_with(&self, new_ids: &[i64]) -> Result<Vec<Slot>, ContentError> {
        let mut new_ids = new_ids.iter();
        self.slots
            .iter()
            .map(|slot| match slot {
                Planned::Existing(id) => Ok(Slot::Shared(*id)),
                Planned::New { .. } => new_ids
                    .next()
                    .map(|id| Slot::Shared(*id))
                    .ok_or_else(|| ContentError::from("fewer new sections than planned")),
                Planned::Own { base, depth, len } => Ok(Slot::Own {
                    base: *base,
                    depth: *depth,
                    len: *len,
                }),
            })
            .collect()
    }
}

/// Plans how to keep the slots of a new snapshot: a slot the store holds (`known`, by hash) is
/// shared; one that changed since `previous` is its own, compressed against that slot's base
/// in `previous`, unless the base is [`BASE_EVERY`] snapshots old or there is none; one that
/// did not change since `previous` held it as its own is stored whole (it has settled), as is
/// everything else. Bodies are compressed here, before any lock is taken.
pub(crate) fn plan(
    slots: &[Section],
    known: &HashMap<[u8; 32], i64>,
    previous: Option<&Previous>,
) -> Result<Plan, ContentError> {
    let mut planned = Vec::with_capacity(slots.len());
    let mut own: Vec<u8> = Vec::new();
    let mut dictionary: Vec<u8> = Vec::new();
    let mut fresh: HashMap<[u8; 32], usize> = HashMap::new();
    for (index, slot) in slots.iter().enumerate() {
        if let Some(id) = known.get(&slot.hash) {
            planned.push(Planned::Existing(*id));
            continue;
        }
        let before = previous.and_then(|previous| {
            let kept = previous.slots.get(index)?;
            let own = previous.own.get(index)?.as_deref();
            Some((kept, own))
        });
        let against = match before {
            // Unchanged since the previous snapshot kept it as its own: it has settled.
            Some((Slot::Own { .. }, Some(bytes))) if *bytes == *slot.bytes => None,
            Some((Slot::Shared(id), _)) => Some((*id, 1)),
            Some((
                Slot::Own {
                    base: Some(id),
                    depth,
                    ..
                },
                _,
            )) if *depth + 1 < BASE_EVERY => Some((*id, depth + 1)),
            _ => None,
        };
        let base = against.and_then(|(id, depth)| {
            let bytes = previous?.section(id)?;
            Some((id, depth, bytes))
        });
        match base {
            Some((id, depth, bytes)) => {
                dictionary.extend_from_slice(&bytes);
                own.extend_from_slice(&slot.bytes);
                planned.push(Planned::Own {
                    base: Some(id),
                    depth,
                    len: slot.bytes.len(),
                });
            }
            None => {
                if let Some(&at) = fresh.get(&slot.hash) {
                    // The same bytes twice in one snapshot: one new section.
                    let Planned::New { section, body } = &planned[at] else {
                        unreachable!("fresh holds new slots only");
                    };
                    let repeat = Planned::New {
                        section: section.clone(),
                        body: body.clone(),
                    };
                    planned.push(repeat);
                    continue;
                }
                fresh.insert(slot.hash, planned.len());
                planned.push(Planned::New {
                    section: slot.clone(),
                    body: slot.compressed()?,
                });
            }
        }
    }
    let frame = if own.is_empty() {
        Vec::new()
    } else {
        compress_own(&own, &dictionary)?
    };
    Ok(Plan {
        slots: planned,
        frame,
    })
}

/// A layout as a snapshot's only own slot, without a base (what a migrated snapshot keeps).
pub(crate) fn layout_alone(layout: &str) -> Result<(Slot, Vec<u8>), ContentError> {
    let slot = Slot::Own {
        base: None,
        depth: 1,
        len: layout.len(),
    };
    let frame = if layout.is_empty() {
        Vec::new()
    } else {
        compress_own(layout.as_bytes(), &[])?
    };
    Ok((slot, frame))
}

fn compress_own(own: &[u8], dictionary: &[u8]) -> Result<Vec<u8>, ContentError> {
    let zstd = ContentError::Zstd;
    let mut compressor =
        zstd::bulk::Compressor::with_dictionary(OWN_LEVEL, dictionary).map_err(zstd)?;
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .map_err(zstd)?;
    compressor.compress(own).map_err(zstd)
}
