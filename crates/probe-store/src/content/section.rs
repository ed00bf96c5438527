//! Sections: a document split at its top level into content-addressed sections (exact bytes,
//! SHA-256, zstd) and a layout of its scalars, and put back together byte for byte.

use super::error::ContentError;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use sha2::{Digest, Sha256};

/// The zstd level of section bodies. On the store bench's fleet (1,000 hosts) level 19 stored
/// 9% less than level 9 but took 10x as long per `put` (30.8 ms against 2.9 ms), and the
/// hourly cost of one host did not change; level 9 it is.
const ZSTD_LEVEL: i32 = 9;

/// The largest section a store reads back (a stored size above this is damage, not data).
pub(super) const MAX_SECTION_BYTES: usize = 1 << 30;

/// The layout that means "the whole document is the one section".
pub(crate) const WHOLE: &str = "";

/// One section: the exact bytes of a top-level value, and their SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section {
    pub hash: [u8; 32],
    pub bytes: Vec<u8>,
}

impl Section {
    pub(super) fn of(bytes: &[u8]) -> Section {
        Section {
            hash: Sha256::digest(bytes).into(),
            bytes: bytes.to_vec(),
        }
    }

    /// The body as stored: zstd at [`ZSTD_LEVEL`], by one compressor per thread (making
    /// zstd's context cost more than compressing a small section).
    pub fn compressed(&self) -> Result<Vec<u8>, ContentError> {
        thread_local! {
            static COMPRESSOR: std::cell::RefCell<Option<zstd::bulk::Compressor<'static>>> =
                const { std::cell::RefCell::new(None) };
        }
        COMPRESSOR.with_borrow_mut(|kept| {
            let compressor = match kept {
                Some(compressor) => compressor,
                None => kept
                    .insert(zstd::bulk::Compressor::new(ZSTD_LEVEL).map_err(ContentError::Zstd)?),
            };
            compressor.compress(&self.bytes).map_err(ContentError::Zstd)
        })
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
            if assemble_parts(&split.layout, &split.sections)
                .ok()
                .as_deref()
                == Some(document) =>
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
pub(crate) fn assemble(layout: &str, sections: &[Vec<u8>]) -> Result<String, ContentError> {
    if layout == WHOLE {
        return match sections {
            [whole] => String::from_utf8(whole.clone()).map_err(ContentError::from),
            _ => Err(ContentError::Damaged(format!(
                "a whole-document layout needs 1 section, found {}",
                sections.len()
            ))),
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
            document.push_str(&serde_json::to_string(key).map_err(ContentError::from)?);
            document.push_str(": ");
            if value.get() == "{}" {
                let body = bodies
                    .next()
                    .ok_or("the layout names more sections than are stored")?;
                document.push_str(std::str::from_utf8(body).map_err(ContentError::from)?);
            } else {
                document.push_str(value.get());
            }
        }
        document.push_str("\n}");
    }
    if bodies.next().is_some() {
        return Err(ContentError::from(
            "more sections are stored than the layout names",
        ));
    }
    Ok(document)
}

/// Decompresses a stored body and checks it against its address and size.
pub(crate) fn decompress(body: &[u8], size: i64, hash: &[u8]) -> Result<Vec<u8>, ContentError> {
    let mut zstd = zstd::bulk::Decompressor::new().map_err(ContentError::Zstd)?;
    decompress_with(&mut zstd, body, size, hash)
}

/// [`decompress`] with a decompressor that has no dictionary (reused across sections).
pub(super) fn decompress_with(
    zstd: &mut zstd::bulk::Decompressor<'_>,
    body: &[u8],
    size: i64,
    hash: &[u8],
) -> Result<Vec<u8>, ContentError> {
    let size = usize::try_from(size)
        .ok()
        .filter(|size| *size <= MAX_SECTION_BYTES)
        .ok_or_else(|| ContentError::Damaged(format!("a section claims {size} bytes")))?;
    let bytes = zstd.decompress(body, size).map_err(ContentError::Zstd)?;
    if bytes.len() != size {
        return Err(ContentError::Damaged(format!(
            "a section decompressed to {} bytes, {size} were stored",
            bytes.len()
        )));
    }
    if Sha256::digest(&bytes).as_slice() != hash {
        return Err(ContentError::from(
            "a section does not match its SHA-256 address",
        ));
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

fn assemble_parts(layout: &str, sections: &[Section]) -> Result<String, ContentError> {
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
