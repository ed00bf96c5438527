//! The `self_installed` section (and the `git` records of `python_envs`): program files that
//! running servers run, the git checkouts they were built in or installed editable from (read
//! as files by the script's `gitref`), and the model names a content-addressed store's
//! manifests give its blobs. Everything bounded: [`MAX_ENTRIES`] of each kind.

use probe_model::{BlobName, Checkout, InstalledBinary, SelfInstalled};

use crate::frame::records;
use crate::sanitize::sanitize_line;

/// Binaries, checkouts and blob names kept at most.
pub const MAX_ENTRIES: usize = 400;

/// Parses the records of a section body into `into` (checkouts already there are kept; one
/// directory read twice counts once).
pub fn parse_into(body: &[u8], boundary: &str, into: &mut SelfInstalled) {
    for r in records(body, boundary) {
        if r.kind != 'R' {
            continue;
        }
        let text = String::from_utf8_lossy(r.data);
        match r.header.split_once(' ') {
            Some(("bin", path)) if into.binaries.len() < MAX_ENTRIES => {
                into.binaries.push(binary(path, &text));
            }
            Some(("git", dir)) => {
                let c = checkout(dir, &text);
                if let Some(b) = into.binaries.last_mut()
                    && b.checkout.is_none()
                    && b.path.starts_with(&format!("{}/", c.dir))
                {
                    b.checkout = Some(c.dir.clone());
                }
                if into.checkouts.len() < MAX_ENTRIES
                    && !into.checkouts.iter().any(|x| x.dir == c.dir)
                {
                    into.checkouts.push(c);
                }
            }
            Some(("store", dir)) => blob_names(&sanitize_line(dir), &text, into),
            _ => {}
        }
    }
}

/// Parses a section body on its own.
pub fn parse(body: &[u8], boundary: &str) -> SelfInstalled {
    let mut out = SelfInstalled::default();
    parse_into(body, boundary, &mut out);
    out
}

/// `MTIME SIZE TYPE` of `stat -c '%Y %s %F'`.
fn binary(path: &str, text: &str) -> InstalledBinary {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    let mut words = first.splitn(3, ' ');
    let mtime = words.next().and_then(|w| w.trim().parse().ok());
    let size = words.next().and_then(|w| w.trim().parse().ok());
    let kind = words.next().unwrap_or("").trim();
    InstalledBinary {
        path: sanitize_line(path),
        mtime,
        size,
        link: kind == "symbolic link",
        checkout: None,
    }
}

/// A commit id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
fn commit_id(w: &str) -> Option<String> {
    (matches!(w.len(), 40 | 64)
        && w.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    .then(|| w.to_string())
}

/// `HEAD ref: refs/heads/X` or `HEAD <commit>`, `ref MTIME COMMIT`, `packed COMMIT`,
/// `FETCH_HEAD MTIME`, `ORIG_HEAD MTIME`.
fn checkout(dir: &str, text: &str) -> Checkout {
    let mut c = Checkout {
        dir: sanitize_line(dir.trim_end_matches('/')),
        ..Checkout::default()
    };
    for l in text.lines().take(16) {
        let mut w = l.split_whitespace();
        match (w.next(), w.next(), w.next()) {
            (Some("HEAD"), Some("ref:"), Some(r)) if r.starts_with("refs/") => {
                c.branch = Some(sanitize_line(r));
            }
            (Some("HEAD"), Some(id), None) => c.commit = commit_id(id),
            (Some("ref"), Some(m), Some(id)) => {
                c.ref_mtime = m.parse().ok();
                c.commit = commit_id(id);
            }
            (Some("packed"), Some(id), None) => c.commit = commit_id(id),
            (Some("FETCH_HEAD"), Some(m), None) => c.fetched_at = m.parse().ok(),
            (Some("ORIG_HEAD"), Some(m), id) => {
                c.moved_at = m.parse().ok();
                c.moved_from = id.and_then(commit_id);
            }
            _ => {}
        }
    }
    c
}

/// `m sha256:HEX REL` lines: the manifest at `STORE/manifests/REL` names the blob
/// `sha256-HEX` (REL is `NAME/TAG` for the default registry's library, which the script
/// leaves out, else `REG/NS/NAME/TAG`).
fn blob_names(store: &str, text: &str, into: &mut SelfInstalled) {
    for l in text.lines() {
        if into.model_names.len() >= MAX_ENTRIES {
            return;
        }
        let Some(rest) = l.strip_prefix("m ") else {
            continue;
        };
        let Some((digest, path)) = rest.split_once(' ') else {
            continue;
        };
        let Some(hex) = digest
            .strip_prefix("sha256:")
            .or_else(|| digest.strip_prefix("sha256-"))
            .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
        else {
            continue;
        };
        let Some(name) = model_name(path) else {
            continue;
        };
        into.model_names.push(BlobName {
            store: store.to_string(),
            blob: format!("sha256-{hex}"),
            name: sanitize_line(&name),
        });
    }
}

/// `llama3.3/70b` → `llama3.3:70b`; `hf.co/bartowski/Qwen2.5-7B-GGUF/Q4_K_M` →
/// `hf.co/bartowski/Qwen2.5-7B-GGUF:Q4_K_M`.
fn model_name(rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel.split('/').collect();
    if !matches!(parts.len(), 2 | 4) || parts.iter().any(|p| p.is_empty() || p.starts_with('.')) {
        return None;
    }
    let (path, tag) = rel.rsplit_once('/')?;
    Some(format!("{path}:{tag}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "7b91f419b61e9f5680873fe674dc58b0374f469fe3e01edada6bb5639dfcfbd4";

    #[test]
    fn records_to_binaries_checkouts_and_names() {
        let b = "B";
        let body = format!(
            "\n{b} R bin /home/ana/llama.cpp/build/bin/llama-server\n1796300000 5242880 regular file\n\
             \n{b} R git /home/ana/llama.cpp\nHEAD ref: refs/heads/master\nref 1796290000 {c}\nFETCH_HEAD 1796289000\n\
             \n{b} R bin /usr/local/bin/ollama\n1795000000 31457280 symbolic link\n\
             \n{b} R git /opt/src/vllm\nHEAD {c2}\n\
             \n{b} R store /usr/share/ollama/.ollama/models\nm sha256:{D} llama3.3/70b\n\
             m sha256:{D} hf.co/bartowski/Qwen2.5-7B-GGUF/Q4_K_M\n\
             m sha256:{D} a/b/c\n\
             m sha256:abc short/1\n",
            c = "3f4ae8ad".repeat(5),
            c2 = "ab".repeat(20),
        );
        let s = parse(body.as_bytes(), b);
        assert_eq!(s.binaries.len(), 2);
        assert_eq!(s.binaries[0].mtime, Some(1_796_300_000));
        assert_eq!(s.binaries[0].size, Some(5_242_880));
        assert_eq!(
            s.binaries[0].checkout.as_deref(),
            Some("/home/ana/llama.cpp")
        );
        assert!(s.binaries[1].link);
        assert_eq!(s.binaries[1].checkout, None);
        assert_eq!(s.checkouts[0].branch.as_deref(), Some("refs/heads/master"));
        assert_eq!(s.checkouts[0].short(), Some("3f4ae8a"));
        assert_eq!(s.checkouts[0].ref_mtime, Some(1_796_290_000));
        assert_eq!(s.checkouts[0].fetched_at, Some(1_796_289_000));
        assert_eq!(s.checkouts[1].branch, None);
        assert_eq!(
            s.checkouts[1].commit.as_deref(),
            Some("ab".repeat(20).as_str())
        );
        let names: Vec<&str> = s.model_names.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            ["llama3.3:70b", "hf.co/bartowski/Qwen2.5-7B-GGUF:Q4_K_M"]
        );
        assert_eq!(s.model_names[0].blob, format!("sha256-{D}"));
    }

    #[test]
    fn bad_lines_give_nothing() {
        for (body, binaries, checkouts) in [
            ("\nB R git /x\nHEAD zz\nref x y\npacked 123\n", 0, 1),
            ("\nB R bin /x\n\n", 1, 0),
            (
                "\nB R store /s\nm\nm sha256:\nm  /s/manifests/a/b/c/d\n",
                0,
                0,
            ),
        ] {
            let s = parse(body.as_bytes(), "B");
            assert_eq!(s.binaries.len(), binaries, "{body}");
            assert_eq!(s.checkouts.len(), checkouts, "{body}");
            assert!(s.checkouts.iter().all(|c| c.commit.is_none()), "{body}");
            assert!(s.model_names.is_empty(), "{body}");
        }
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_parse(body in proptest::collection::vec(proptest::num::u8::ANY, 0..2048)) {
            let _ = parse(&body, "B");
        }
    }
}
