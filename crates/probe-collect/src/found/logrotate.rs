//! logrotate configs: the `olddir` a log's rotated copies are moved to (with `dateext`, named
//! `server.log-20261130[.gz]`; else `server.log.1`, `.2.gz`).

use super::{FoundMode, FoundPlace, PlaceText, dir_allowed, glob_match, pattern_allowed};

/// Blocks read per config at most.
const MAX_BLOCKS: usize = 256;

/// One `PATHS { ... }` block: its path patterns and its `olddir`.
#[derive(Debug, Default)]
struct Block {
    paths: Vec<String>,
    olddir: Option<String>,
    line: usize,
}

/// The olddirs of the blocks of `t` that rotate one of `logs` (paths, or a found place's
/// `dir/pattern`): the copies of each there, by its name.
pub fn olddirs(t: &PlaceText, logs: &[String]) -> Vec<FoundPlace> {
    let mut out = Vec::new();
    for b in blocks(&t.text) {
        let Some(old) = &b.olddir else { continue };
        for log in logs {
            let Some((dir, name)) = log.rsplit_once('/') else {
                continue;
            };
            if !b.paths.iter().any(|p| glob_match(p, log)) {
                continue;
            }
            let old_dir = if old.starts_with('/') {
                old.trim_end_matches('/').to_string()
            } else {
                format!("{dir}/{}", old.trim_end_matches('/'))
            };
            let pattern = format!("{}*", name.trim_end_matches('*'));
            if !dir_allowed(&old_dir) || !pattern_allowed(&pattern) {
                continue;
            }
            out.push(FoundPlace {
                mode: FoundMode::Text,
                dir: old_dir.clone(),
                pattern,
                reason: format!(
                    "logrotate:{} line {} moves the rotated copies of {log} to olddir {old_dir}",
                    t.path, b.line
                ),
            });
        }
    }
    out
}

/// The blocks of a logrotate config (quoted paths unquoted; `include` and globals left out).
fn blocks(text: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut cur: Option<Block> = None;
    let mut pending: Vec<String> = Vec::new();
    for (i, raw) in text.lines().take(20_000).enumerate() {
        let l = raw.split('#').next().unwrap_or("").trim();
        if l.is_empty() {
            continue;
        }
        if let Some(b) = cur.as_mut() {
            if l.starts_with('}') {
                if out.len() < MAX_BLOCKS {
                    out.extend(cur.take());
                }
                cur = None;
                continue;
            }
            let mut w = l.split_whitespace();
            if w.next() == Some("olddir") {
                b.olddir = w.next().map(|d| d.trim_matches('"').to_string());
            }
            continue;
        }
        let (head, opens) = match l.split_once('{') {
            Some((h, _)) => (h, true),
            None => (l, false),
        };
        if head.starts_with('/') || head.starts_with('"') {
            pending.extend(
                head.split_whitespace()
                    .map(|p| p.trim_matches('"').to_string())
                    .filter(|p| p.starts_with('/')),
            );
        }
        if opens {
            cur = Some(Block {
                paths: std::mem::take(&mut pending),
                olddir: None,
                line: i + 1,
            });
        }
    }
    out
}
