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
//! [`assemble`] puts the bytes back together, and [`split`] checks that it does before it
//! answers: a document it cannot give back byte for byte (never the case for `to_json` output,
//! but an imported text could be anything) is kept whole, as one section under the empty
//! layout. Either way the export of a stored snapshot is byte-identical to what was stored.
//!
//! Layout 4 stores a snapshot as [`Slot`]s (its layout, then its sections): a slot is a shared
//! section, or the snapshot's own bytes, in one zstd frame per snapshot compressed with the
//! slots' bases (the same host's earlier shared copy of each) as dictionary. [`plan`] decides
//! which, [`Stored::parts`] reads them back; a read decodes bases and the own frame, never a
//! chain.

use std::collections::HashMap;
use std::sync::Arc;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// The zstd level of section bodies. On the store bench's fleet (1,000 hosts) level 19 stored
/// 9% less than level 9 but took 10x as long per `put` (30.8 ms against 2.9 ms), and the
/// hourly cost of one host did not change; level 9 it is.
const ZSTD_LEVEL: i32 = 9;

/// The largest section a store reads back (a stored size above this is damage, not data).
const MAX_SECTION_BYTES: usize = 1 << 30;

/// The layout that means "the whole document is the one section".
pub(crate) const WHOLE: &str = "";

/// One section: the exact bytes of a top-level value, and their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub hash: [u8; 32],
    pub bytes: Vec<u8>,
}

impl Section {
    fn of(bytes: &[u8]) -> Section {
        Section {
            hash: Sha256::digest(bytes).into(),
            bytes: bytes.to_vec(),
        }
    }

    /// The body as stored: zstd at [`ZSTD_LEVEL`].
    pub fn compressed(&self) -> Result<Vec<u8>, String> {
        zstd::bulk::compress(&self.bytes, ZSTD_LEVEL).map_err(|err| format!("zstd: {err}"))
    }
}

/// A document taken apart: its layout and its sections, in document order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Split {
    pub layout: String,
    pub sections: Vec<Section>,
}

/// Splits a document into its layout and sections (see the module documentation).
pub(crate) fn split(document: &str) -> Split {
    match split_object(document) {
        Some(split)
            if assemble_parts(&split.layout, &split.sections).as_deref() == Ok(document) =>
        {
            split
        }
        _ => Split {
            layout: WHOLE.to_string(),
            sections: vec![Section::of(document.as_bytes())],
        },
    }
}

/// Puts a document back together from its layout and the bytes of its sections (in order).
pub(crate) fn assemble(layout: &str, sections: &[Vec<u8>]) -> Result<String, String> {
    if layout == WHOLE {
        return match sections {
            [whole] => String::from_utf8(whole.clone()).map_err(|err| err.to_string()),
            _ => Err(format!(
                "a whole-document layout needs 1 section, found {}",
                sections.len()
            )),
        };
    }
    let entries = top_level_entries(layout).ok_or("the layout is not a JSON object")?;
    let mut bodies = sections.iter();
    let mut document = String::with_capacity(
        layout.len() + sections.iter().map(Vec::len).sum::<usize>() + 8 * entries.len(),
    );
    if entries.is_empty() {
        document.push_str("{}");
    } else {
        document.push_str("{\n");
        for (index, (key, value)) in entries.iter().enumerate() {
            if index > 0 {
                document.push_str(",\n");
            }
            document.push_str("  ");
            document.push_str(&serde_json::to_string(key).map_err(|err| err.to_string())?);
            document.push_str(": ");
            if value.get() == "{}" {
                let body = bodies
                    .next()
                    .ok_or("the layout names more sections than are stored")?;
                document.push_str(std::str::from_utf8(body).map_err(|err| err.to_string())?);
            } else {
                document.push_str(value.get());
            }
        }
        document.push_str("\n}");
    }
    if bodies.next().is_some() {
        return Err("more sections are stored than the layout names".into());
    }
    Ok(document)
}

/// Decompresses a stored body and checks it against its address and size.
pub(crate) fn decompress(body: &[u8], size: i64, hash: &[u8]) -> Result<Vec<u8>, String> {
    let mut zstd = zstd::bulk::Decompressor::new().map_err(|err| format!("zstd: {err}"))?;
    decompress_with(&mut zstd, body, size, hash)
}

/// [`decompress`] with a decompressor that has no dictionary (reused across sections).
fn decompress_with(
    zstd: &mut zstd::bulk::Decompressor<'_>,
    body: &[u8],
    size: i64,
    hash: &[u8],
) -> Result<Vec<u8>, String> {
    let size = usize::try_from(size)
        .ok()
        .filter(|size| *size <= MAX_SECTION_BYTES)
        .ok_or_else(|| format!("a section claims {size} bytes"))?;
    let bytes = zstd
        .decompress(body, size)
        .map_err(|err| format!("zstd: {err}"))?;
    if bytes.len() != size {
        return Err(format!(
            "a section decompressed to {} bytes, {size} were stored",
            bytes.len()
        ));
    }
    if Sha256::digest(&bytes).as_slice() != hash {
        return Err("a section does not match its SHA-256 address".into());
    }
    Ok(bytes)
}

fn split_object(document: &str) -> Option<Split> {
    let entries = top_level_entries(document)?;
    let mut layout = String::with_capacity(64 * entries.len());
    let mut sections = Vec::new();
    layout.push('{');
    for (index, (key, value)) in entries.iter().enumerate() {
        if index > 0 {
            layout.push(',');
        }
        layout.push_str(&serde_json::to_string(key).ok()?);
        layout.push(':');
        let raw = value.get();
        if raw.starts_with('{') || raw.starts_with('[') {
            layout.push_str("{}");
            sections.push(Section::of(raw.as_bytes()));
        } else {
            layout.push_str(raw);
        }
    }
    layout.push('}');
    Some(Split { layout, sections })
}

fn assemble_parts(layout: &str, sections: &[Section]) -> Result<String, String> {
    let bodies: Vec<Vec<u8>> = sections.iter().map(|s| s.bytes.clone()).collect();
    assemble(layout, &bodies)
}

/// The entries of a top-level JSON object, in order, each value as its exact text.
pub(crate) fn top_level_entries(text: &str) -> Option<Vec<(String, &RawValue)>> {
    let mut deserializer = serde_json::Deserializer::from_str(text);
    let entries = deserializer.deserialize_map(EntriesVisitor).ok()?;
    deserializer.end().ok()?;
    Some(entries)
}

struct EntriesVisitor;

impl<'de> Visitor<'de> for EntriesVisitor {
    type Value = Vec<(String, &'de RawValue)>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
            entries.push(entry);
        }
        Ok(entries)
    }
}

// ---------------------------------------------------------------------------------------------
// Layout 4: a snapshot's slots, and its own frame.
//
// A snapshot is a list of *slots*: its layout first, then its sections in document order. A slot
// is either *shared*, a section of the `sections` table (content-addressed, compressed alone,
// what hosts and hours have in common), or the snapshot's *own*: its bytes are in the
// snapshot's frame, one zstd frame per snapshot holding every own slot, compressed with the
// slots' *bases* (shared sections of the same host's earlier version of that slot) as its
// dictionary. A read decodes each base (a frame alone) and the own frame: never a chain.

/// The zstd level of a snapshot's own frame (its difference from its bases). On the store
/// bench's hourly host, levels 15 to 19 stored the same bytes (1,065 per snapshot, against
/// 1,147 at 13 and at 9) and 15 took two thirds of 19's CPU per put.
const OWN_LEVEL: i32 = 15;

/// A slot's bytes are its own (compressed against a base) for at most this many snapshots in
/// a row; then the slot is stored whole, as a shared section, and becomes the next base.
/// Hourly audits store a base a day.
pub(crate) const BASE_EVERY: u32 = 24;

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

fn get_varint(bytes: &[u8], at: &mut usize) -> Result<u64, String> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let byte = *bytes.get(*at).ok_or("the slot list ends early")?;
        *at += 1;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err("a number in the slot list is too long".into())
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
pub(crate) fn decode_slots(bytes: &[u8]) -> Result<Vec<Slot>, String> {
    let mut at = 0;
    let count = get_varint(bytes, &mut at)?;
    if count > bytes.len() as u64 {
        return Err(format!("the slot list claims {count} slots"));
    }
    let mut slots = Vec::with_capacity(count as usize);
    for _ in 0..count {
        let id = i64::try_from(get_varint(bytes, &mut at)?).map_err(|err| err.to_string())?;
        let depth = get_varint(bytes, &mut at)?;
        if depth == 0 {
            if id == 0 {
                return Err("a shared slot without its section".into());
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
        return Err("bytes after the slot list".into());
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

/// The same host's newest stored snapshot, as the next one is planned against it: its slots,
/// the bytes of its own ones, and its stored sections (decompressed only when a base is needed).
#[derive(Debug, Default)]
pub(crate) struct Previous {
    pub slots: Vec<Slot>,
    pub own: Vec<Option<Arc<[u8]>>>,
    pub stored: Stored,
}

impl Previous {
    fn section(&self, id: i64) -> Option<Arc<[u8]>> {
        let (hash, size, body) = self.stored.sections.get(&id)?;
        decompress(body, *size, hash).ok().map(Into::into)
    }
}

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
    pub fn slots_with(&self, new_ids: &[i64]) -> Result<Vec<Slot>, String> {
        let mut new_ids = new_ids.iter();
        self.slots
            .iter()
            .map(|slot| match slot {
                Planned::Existing(id) => Ok(Slot::Shared(*id)),
                Planned::New { .. } => new_ids
                    .next()
                    .map(|id| Slot::Shared(*id))
                    .ok_or_else(|| "fewer new sections than planned".to_string()),
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
) -> Result<Plan, String> {
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
pub(crate) fn layout_alone(layout: &str) -> Result<(Slot, Vec<u8>), String> {
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

fn compress_own(own: &[u8], dictionary: &[u8]) -> Result<Vec<u8>, String> {
    let zstd = |err: std::io::Error| format!("zstd: {err}");
    let mut compressor =
        zstd::bulk::Compressor::with_dictionary(OWN_LEVEL, dictionary).map_err(zstd)?;
    compressor
        .set_parameter(zstd::zstd_safe::CParameter::ChecksumFlag(true))
        .map_err(zstd)?;
    compressor.compress(own).map_err(zstd)
}

/// How [`Stored::parts`] gets a section's bytes.
type ReadSection<'a> =
    dyn FnMut(i64, &mut zstd::bulk::Decompressor<'_>) -> Result<Arc<[u8]>, String> + 'a;

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
    pub fn parts(&self, cache: &mut SectionCache) -> Result<Vec<Part>, String> {
        let mut zstd = zstd::bulk::Decompressor::new().map_err(|err| format!("zstd: {err}"))?;
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
    ) -> Result<Vec<Part>, String> {
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
    ) -> Result<Arc<[u8]>, String> {
        let (hash, size, body) = self
            .sections
            .get(&id)
            .ok_or_else(|| format!("section {id} is missing"))?;
        Ok(decompress_with(zstd, body, *size, hash)?.into())
    }

    fn parts_by(
        &self,
        section: &mut ReadSection<'_>,
        zstd: &mut zstd::bulk::Decompressor<'_>,
    ) -> Result<Vec<Part>, String> {
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
            let fail = |err: std::io::Error| format!("zstd: {err}");
            zstd.set_dictionary(&dictionary).map_err(fail)?;
            let own = zstd.decompress(&self.frame, own_len);
            zstd.set_dictionary(&[]).map_err(fail)?;
            own.map_err(fail)?
        };
        if own.len() != own_len {
            return Err(format!(
                "a snapshot's own frame decompressed to {} bytes, {own_len} were stored",
                own.len()
            ));
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
    pub fn assemble(&self, cache: &mut SectionCache) -> Result<String, String> {
        let parts = self.parts(cache)?;
        assemble_slots(&parts)
    }

    /// This snapshot as the next one of its host is planned against it. Only its own frame and
    /// the bases it needs are decoded.
    pub fn into_previous(self) -> Result<Previous, String> {
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
pub(crate) fn assemble_slots(parts: &[Part]) -> Result<String, String> {
    let Some(((_, layout), sections)) = parts.split_first() else {
        return Err("a snapshot without slots".into());
    };
    let layout = std::str::from_utf8(layout).map_err(|err| err.to_string())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(document: &str) -> Split {
        let split = split(document);
        let bodies: Vec<Vec<u8>> = split.sections.iter().map(|s| s.bytes.clone()).collect();
        assert_eq!(assemble(&split.layout, &bodies).unwrap(), document);
        split
    }

    #[test]
    fn a_pretty_document_splits_into_scalars_and_sections() {
        let document = "{\n  \"id\": \"a\\\"b\",\n  \"n\": 1.5e300,\n  \"none\": null,\n  \
                        \"host\": {\n    \"x\": [\n      1\n    ]\n  },\n  \"empty\": [],\n  \
                        \"also_empty\": []\n}";
        let split = round_trip(document);
        assert_eq!(
            split.layout,
            r#"{"id":"a\"b","n":1.5e300,"none":null,"host":{},"empty":{},"also_empty":{}}"#
        );
        let texts: Vec<&str> = split
            .sections
            .iter()
            .map(|s| std::str::from_utf8(&s.bytes).unwrap())
            .collect();
        assert_eq!(texts, ["{\n    \"x\": [\n      1\n    ]\n  }", "[]", "[]"]);
        // The same bytes, the same address.
        assert_eq!(split.sections[1].hash, split.sections[2].hash);
        assert_ne!(split.sections[0].hash, split.sections[1].hash);
    }

    #[test]
    fn what_cannot_be_given_back_exactly_is_kept_whole() {
        for document in [
            "{\"compact\":{\"a\":1}}",
            "  {\n  \"lead\": []\n}",
            "[1, 2]",
            "not json",
            "{\n  \"a\": 1,\n  \"a\": 2\n}x",
            "",
            "{\n  \"k\\u0041\": []\n}",
        ] {
            let split = round_trip(document);
            assert_eq!(split.layout, WHOLE, "{document:?}");
            assert_eq!(split.sections.len(), 1);
        }
        assert_eq!(round_trip("{}").layout, "{}");
    }

    #[test]
    fn bodies_are_checked_when_read() {
        let section = Section::of(b"[1, 2, 3]");
        let body = section.compressed().unwrap();
        assert_eq!(decompress(&body, 9, &section.hash).unwrap(), b"[1, 2, 3]");
        assert!(decompress(&body, 8, &section.hash).is_err());
        assert!(decompress(&body, 9, &[0; 32]).is_err());
        assert!(decompress(b"junk", 9, &section.hash).is_err());
        assert!(decompress(&body, -1, &section.hash).is_err());
        assert!(decompress(&body, i64::MAX, &section.hash).is_err());
    }

    #[test]
    fn a_layout_and_its_sections_must_agree() {
        assert!(assemble(r#"{"a":{}}"#, &[]).is_err());
        assert!(assemble(r#"{"a":1}"#, &[b"[]".to_vec()]).is_err());
        assert!(assemble(WHOLE, &[]).is_err());
        assert!(assemble("[", &[]).is_err());
    }
}
