//! A Go `map[string]string` as `fmt` prints it with `%v` (`map[K1:V1 K2:V2]`, keys sorted), the
//! shape of the settings some engines log at start-up (Ollama's `server config` line:
//! `env="map[OLLAMA_CONTEXT_LENGTH:4096 OLLAMA_HOST:http://127.0.0.1:11434 ...]"`).
//!
//! `fmt` does not quote: a value holding a space is ambiguous. Ollama's values with spaces are
//! Go slices printed as `[a b c]`, so a space inside brackets belongs to the value; elsewhere a
//! space starts the next `KEY:` pair when what follows looks like a key (`[A-Za-z_][A-Za-z0-9_]*:`),
//! else it is part of the value. Bounded: at most [`MAX_PAIRS`] pairs, never panics.

use std::collections::BTreeMap;

/// Pairs read at most.
pub const MAX_PAIRS: usize = 512;

/// The pairs of `map[...]` (`None`: not such a text).
pub fn parse(text: &str) -> Option<BTreeMap<String, String>> {
    let body = text.trim().strip_prefix("map[")?.strip_suffix(']')?;
    let mut out = BTreeMap::new();
    let mut pairs: Vec<(usize, usize)> = Vec::new();
    // Start offsets of each pair: 0 and every depth-0 space followed by `KEY:`.
    let bytes = body.as_bytes();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'[' => depth += 1,
            b']' => depth = depth.saturating_sub(1),
            b' ' if depth == 0 && looks_like_key(body.get(i + 1..).unwrap_or("")) => {
                pairs.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    pairs.push((start, body.len()));
    for (a, b) in pairs.into_iter().take(MAX_PAIRS) {
        let Some(pair) = body.get(a..b) else { continue };
        let Some((k, v)) = pair.split_once(':') else {
            continue;
        };
        // Keys are variable names; anything else is not a pair.
        if !looks_like_key(&format!("{k}:")) {
            continue;
        }
        out.insert(k.to_string(), v.to_string());
    }
    Some(out)
}

/// Go's largest `time.Duration` as `fmt` prints it: what a negative duration setting ("keep
/// forever", `-1`) is stored as.
const MAX_DURATION: &str = "2562047h47m16.854775807s";

/// A value as it would be written in the environment: a Go `time.Duration` as `fmt` prints it
/// (`5m0s`, `1h0m0s`) without its zero parts (`5m`, `1h`), the largest duration as `-1`; any
/// other value unchanged.
pub fn as_written(value: &str) -> String {
    if value == MAX_DURATION {
        return "-1".to_string();
    }
    let Some(parts) = duration_parts(value) else {
        return value.to_string();
    };
    let mut out = String::new();
    for (n, unit) in &parts {
        if n.trim_start_matches('0').is_empty() || *n == "0" {
            continue;
        }
        out.push_str(n);
        out.push(*unit);
    }
    if out.is_empty() {
        "0s".to_string()
    } else {
        out
    }
}

/// `1h2m3.5s` as its parts (`[("1",'h'),("2",'m'),("3.5",'s')]`), when it is a Go duration of
/// hours, minutes and seconds ending in `s` (`0s`, `45s`, `5m0s`).
fn duration_parts(value: &str) -> Option<Vec<(&str, char)>> {
    if !value.ends_with('s')
        || value.ends_with("ms")
        || value.ends_with("us")
        || value.ends_with("ns")
    {
        return None;
    }
    let mut parts = Vec::new();
    let mut start = 0;
    for (i, c) in value.char_indices() {
        if matches!(c, 'h' | 'm' | 's') {
            let n = value.get(start..i)?;
            if n.is_empty() || !n.chars().all(|c| c.is_ascii_digit() || c == '.') {
                return None;
            }
            parts.push((n, c));
            start = i + 1;
        } else if !(c.is_ascii_digit() || c == '.') {
            return None;
        }
    }
    let units: String = parts.iter().map(|(_, u)| *u).collect();
    matches!(units.as_str(), "s" | "ms" | "hms").then_some(parts)
}

fn looks_like_key(s: &str) -> bool {
    let mut chars = s.char_indices();
    match chars.next() {
        Some((_, c)) if c.is_ascii_alphabetic() || c == '_' => {}
        _ => return false,
    }
    for (_, c) in chars {
        if c == ':' {
            return true;
        }
        if !(c.is_ascii_alphanumeric() || c == '_') {
            return false;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "tests")]
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn reads_go_maps_table() {
        type Case = (
            &'static str,
            Option<&'static [(&'static str, &'static str)]>,
        );
        let cases: &[Case] = &[
            ("map[]", Some(&[])),
            ("map[A:1]", Some(&[("A", "1")])),
            (
                "map[CUDA_VISIBLE_DEVICES: OLLAMA_CONTEXT_LENGTH:8192 OLLAMA_HOST:http://127.0.0.1:11434]",
                Some(&[
                    ("CUDA_VISIBLE_DEVICES", ""),
                    ("OLLAMA_CONTEXT_LENGTH", "8192"),
                    ("OLLAMA_HOST", "http://127.0.0.1:11434"),
                ]),
            ),
            (
                "map[OLLAMA_ORIGINS:[http://localhost app://* file://*] OLLAMA_REMOTES:[ollama.com] X:y]",
                Some(&[
                    ("OLLAMA_ORIGINS", "[http://localhost app://* file://*]"),
                    ("OLLAMA_REMOTES", "[ollama.com]"),
                    ("X", "y"),
                ]),
            ),
            // A value with a space that is not followed by a key stays one value.
            ("map[A:x y B:2]", Some(&[("A", "x y"), ("B", "2")])),
            ("map[A:1", None),
            ("A:1", None),
            ("map[:1 B:2]", Some(&[("B", "2")])),
            ("map[[a b:c]]", Some(&[])),
        ];
        for (text, want) in cases {
            let got = parse(text);
            let want = want.map(|w| {
                w.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>()
            });
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn durations_as_written_table() {
        for (logged, written) in [
            ("5m0s", "5m"),
            ("30m0s", "30m"),
            ("1h0m0s", "1h"),
            ("1h30m0s", "1h30m"),
            ("45s", "45s"),
            ("0s", "0s"),
            ("1.5s", "1.5s"),
            ("2562047h47m16.854775807s", "-1"),
            ("4096", "4096"),
            ("true", "true"),
            ("http://127.0.0.1:11434", "http://127.0.0.1:11434"),
            ("[ollama.com]", "[ollama.com]"),
            ("10ms", "10ms"),
            ("m0s", "m0s"),
        ] {
            assert_eq!(as_written(logged), written, "{logged}");
        }
    }

    /// Ollama's `server config` record read into a launch: the catalog's `env` options, empty
    /// variables unset, durations as written.
    #[test]
    fn an_ollama_server_config_record_is_a_launch() {
        let record = probe_model::StartupRecord {
            time: Some(1_794_220_813),
            engine: probe_model::Engine::Ollama,
            text: "map[CUDA_VISIBLE_DEVICES: OLLAMA_CONTEXT_LENGTH:8192 OLLAMA_FLASH_ATTENTION:true \
                   OLLAMA_HOST:http://127.0.0.53:11434 OLLAMA_KEEP_ALIVE:30m0s \
                   OLLAMA_KV_CACHE_TYPE: OLLAMA_NUM_PARALLEL:4 OLLAMA_ORIGINS:[http://localhost app://*]]"
                .to_string(),
            version: Some("0.13.5".to_string()),
        };
        let launch = crate::from_startup_log(&record, &crate::ParseHints::default()).unwrap();
        assert_eq!(launch.engine, probe_model::Engine::Ollama);
        let value = |k: &str| launch.options.get(k).map(|o| o.value.clone());
        for (option, want) in [
            ("context-length", Some(serde_json::json!(8192))),
            ("num-parallel", Some(serde_json::json!(4))),
            ("keep-alive", Some(serde_json::json!("30m"))),
            ("flash-attention", Some(serde_json::json!("true"))),
            ("host", Some(serde_json::json!("127.0.0.53"))),
            ("port", Some(serde_json::json!(11434))),
            ("kv-cache-type", None),
        ] {
            assert_eq!(value(option), want, "{option}");
        }
        assert_eq!(
            launch.options["context-length"].written,
            "OLLAMA_CONTEXT_LENGTH=8192"
        );
        assert_eq!(launch.source.time.at, Some(1_794_220_813));
    }

    proptest! {
        #[test]
        fn any_text_is_read_without_panic(s in "map\\[[ -~\\[\\]]{0,200}\\]") {
            let m = parse(&s).unwrap();
            prop_assert!(m.len() <= MAX_PAIRS);
            for k in m.keys() {
                prop_assert!(!k.is_empty() && !k.contains(' '));
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(s in "\\PC{0,300}") {
            let _ = parse(&s);
        }
    }
}
