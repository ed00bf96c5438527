//! The `Host` entries of an ssh_config file: every alias without wildcards or negation.

use std::path::Path;

use super::{InventoryError, InventoryHost, error, valid_host_name};

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<InventoryHost>, InventoryError> {
    let mut hosts = Vec::new();
    for (index, raw_line) in text.lines().enumerate() {
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (keyword, rest) = match line.find(|c: char| c.is_whitespace() || c == '=') {
            Some(at) => (
                line.get(..at).unwrap_or(""),
                line.get(at..)
                    .unwrap_or("")
                    .trim_start_matches(|c: char| c.is_whitespace() || c == '='),
            ),
            None => (line, ""),
        };
        if !keyword.eq_ignore_ascii_case("host") {
            continue;
        }
        let patterns: Vec<&str> = rest
            .split_whitespace()
            .map(|p| p.trim_matches('"'))
            .collect();
        if patterns.is_empty() {
            return Err(error(path, Some(index + 1), "`Host` without a pattern"));
        }
        for pattern in patterns {
            if pattern.contains(['*', '?', '!']) || !valid_host_name(pattern) {
                continue;
            }
            hosts.push(InventoryHost {
                name: pattern.to_string(),
                address: pattern.to_string(),
                ..InventoryHost::default()
            });
        }
    }
    Ok(hosts)
}
