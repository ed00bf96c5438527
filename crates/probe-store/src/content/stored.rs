//! Reading a stored snapshot back: its slots' bytes from the shared sections (checked, cached
//! across a batch) and its own frame, put back together.

use super::error::ContentError;
use std::collections::HashMap;
use std::sync::Arc;

use super::section::{MAX_SECTION_BYTES, assemble, decompress, decompress_with};
use super::slots::Slot;

/// The same host's newest stored snapshot, as the next one is planned against it: its slots,
/// the bytes of its own ones, and its stored sections (decompressed only when a base is needed).
#[derive(Debug, Default)]
pub(crate) struct Previous {
    pub slots: Vec<Slot>,
    pub own: Vec<Option<Arc<[u8]>>>,
    pub stored: Stored,
}

impl Previous {
    pub(super) fn section(&self, id: i64) -> Option<Arc<[u8]>> {
        let (hash, size, body) = self.stored.sections.get(&id)?;
        decompress(body, *size, hash).ok().map(Into::into)
    }
}

/// How [`Stored::parts`] gets a section's bytes.
type ReadSection<'a> =
    dyn FnMut(i64, &mut zstd::bulk::Decompressor<'_>) -> Result<Arc<[u8]>, ContentError> + 'a;

/// The bytes of one slot, and the shared section they are (`None`: the snapshot's own).
pub(crate) type Part = (Option<i64>, Arc<[u8]>);

/// A stored snapshot before it is put back together: its slots, its own frame and the stored
/// (hash, size, compressed body) of the sections they need.
#[derive(Debug, Default, Clone)]
pub(crate) struct Stored {
    pub slots: Vec<Slot>,
    pub frame: Vec<u8>,
    pub sections: HashMap<i64, (Vec<u8>, i64, Vec<u8>)>,
}

impl Stored {
    /// The bytes of every slot (with the shared section behind it), each section checked
    /// against its size and address and the own frame against its checksum. Sections are taken
    /// from `cache` when it holds them, and left in it.
    pub fn parts(&self, cache: &mut SectionCache) -> Result<Vec<Part>, ContentError> {
        let mut zstd = zstd::bulk::Decompressor::new().map_err(ContentError::Zstd)?;
        let mut read = |id: i64, zstd: &mut zstd::bulk::Decompressor<'_>| {
            if let Some(bytes) = cache.bytes.get(&id) {
                return Ok(bytes.clone());
            }
            let bytes = self.section(id, zstd)?;
            cache.keep(id, &bytes);
            Ok(bytes)
        };
        self.parts_by(&mut read, &mut zstd)
    }

    /// [`Stored::parts`], taking from `cache` what it holds and decompressing the rest with
    /// `zstd` (which has no dictionary before or after), keeping nothing.
    pub fn parts_shared(
        &self,
        cache: &SectionCache,
        zstd: &mut zstd::bulk::Decompressor<'_>,
    ) -> Result<Vec<Part>, ContentError> {
        let mut read = |id: i64, zstd: &mut zstd::bulk::Decompressor<'_>| match cache.bytes.get(&id)
        {
            Some(bytes) => Ok(bytes.clone()),
            None => self.section(id, zstd),
        };
        self.parts_by(&mut read, zstd)
    }

    /// Section `id`, decompressed and checked.
    pub fn section(
        &self,
        id: i64,
        zstd: &mut zstd::bulk::Decompressor<'_>,
    ) -> Result<Arc<[u8]>, ContentError> {
        let (hash, size, body) = self
            .sections
            .get(&id)
            .ok_or_else(|| ContentError::Damaged(format!("section {id} is missing")))?;
        Ok(decompress_with(zstd, body, *size, hash)?.into())
    }

    fn parts_by(
        &self,
        section: &mut ReadSection<'_>,
        zstd: &mut zstd::bulk::Decompressor<'_>,
    ) -> Result<Vec<Part>, ContentError> {
        let mut dictionary = Vec::new();
        let mut own_len = 0usize;
        for slot in &self.slots {
            if let Slot::Own { base, len, .. } = slot {
                if let Some(base) = base {
                    dictionary.extend_from_slice(&section(*base, zstd)?);
                }
                own_len = own_len
                    .checked_add(*len)
                    .filter(|total| *total <= MAX_SECTION_BYTES)
                    .ok_or("the own slots claim too many bytes")?;
            }
        }
        let own = if own_len == 0 && self.frame.is_empty() {
            Vec::new()
        } else {
            let fail = ContentError::Zstd;
            zstd.set_dictionary(&dictionary).map_err(fail)?;
            let own = zstd.decompress(&self.frame, own_len);
            zstd.set_dictionary(&[]).map_err(fail)?;
            own.map_err(fail)?
        };
        if own.len() != own_len {
            return Err(ContentError::Damaged(format!(
                "a snapshot's own frame decompressed to {} bytes, {own_len} were stored",
                own.len()
            )));
        }
        let mut at = 0;
        let mut parts = Vec::with_capacity(self.slots.len());
        for slot in &self.slots {
            match slot {
                Slot::Shared(id) => parts.push((Some(*id), section(*id, zstd)?)),
                Slot::Own { len, .. } => {
                    parts.push((None, own[at..at + len].into()));
                    at += len;
                }
            }
        }
        Ok(parts)
    }

    /// The document.
    pub fn assemble(&self, cache: &mut SectionCache) -> Result<String, ContentError> {
        let parts = self.parts(cache)?;
        assemble_slots(&parts)
    }

    /// This snapshot as the next one of its host is planned against it. Only its own frame and
    /// the bases it needs are decoded.
    pub fn into_previous(self) -> Result<Previous, ContentError> {
        let own = if self
            .slots
            .iter()
            .any(|slot| matches!(slot, Slot::Own { .. }))
        {
            let wanted: Vec<i64> = self
                .slots
                .iter()
                .filter_map(|slot| match slot {
                    Slot::Own { base, .. } => *base,
                    Slot::Shared(_) => None,
                })
                .collect();
            let bases = Stored {
                slots: self
                    .slots
                    .iter()
                    .copied()
                    .filter(|slot| matches!(slot, Slot::Own { .. }))
                    .collect(),
                frame: self.frame.clone(),
                sections: self
                    .sections
                    .iter()
                    .filter(|(id, _)| wanted.contains(id))
                    .map(|(id, stored)| (*id, stored.clone()))
                    .collect(),
            };
            let mut parts = bases.parts(&mut SectionCache::default())?.into_iter();
            self.slots
                .iter()
                .map(|slot| match slot {
                    Slot::Own { .. } => parts.next().map(|(_, bytes)| bytes),
                    Slot::Shared(_) => None,
                })
                .collect()
        } else {
            vec![None; self.slots.len()]
        };
        Ok(Previous {
            slots: self.slots.clone(),
            own,
            stored: self,
        })
    }
}

/// The document of its slots' bytes (the layout first).
pub(crate) fn assemble_slots(parts: &[Part]) -> Result<String, ContentError> {
    let Some(((_, layout), sections)) = parts.split_first() else {
        return Err(ContentError::from("a snapshot without slots"));
    };
    let layout = std::str::from_utf8(layout).map_err(ContentError::from)?;
    let bodies: Vec<Vec<u8>> = sections.iter().map(|(_, bytes)| bytes.to_vec()).collect();
    assemble(layout, &bodies)
}

/// Sections already decompressed and checked, by id, while one caller reads many snapshots
/// (hosts of one image share their packages, package events and histories).
/// [`SectionCache::trim`] starts over past [`SectionCache::LIMIT`] bytes, between batches
/// (never while a batch read without the bodies it holds is being put together).
#[derive(Default)]
pub(crate) struct SectionCache {
    bytes: HashMap<i64, Arc<[u8]>>,
    held: usize,
}

impl SectionCache {
    const LIMIT: usize = 256 << 20;

    fn keep(&mut self, id: i64, bytes: &Arc<[u8]>) {
        self.held += bytes.len();
        self.bytes.insert(id, bytes.clone());
    }

    /// The ids held.
    pub fn held(&self) -> std::collections::BTreeSet<i64> {
        self.bytes.keys().copied().collect()
    }

    /// Whether section `id` is held.
    pub fn holds(&self, id: i64) -> bool {
        self.bytes.contains_key(&id)
    }

    /// Keeps section `id`.
    pub fn insert(&mut self, id: i64, bytes: Arc<[u8]>) {
        self.keep(id, &bytes);
    }

    /// Starts over when it holds more than [`SectionCache::LIMIT`] bytes.
    pub fn trim(&mut self) {
        if self.held > Self::LIMIT {
            self.bytes.clear();
            self.held = 0;
        }
    }
}
