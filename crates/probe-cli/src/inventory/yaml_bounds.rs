//! Bounds on a YAML inventory before it is loaded: the loader expands every alias into a copy
//! of its anchor, so a "billion laughs" document of a few hundred bytes would grow without end.
//! The event stream is scanned first, computing what each anchor expands to without expanding
//! it; a document that would expand beyond [`MAX_NODES`] nodes, or nests deeper than
//! [`MAX_DEPTH`], is refused with its line.

use std::collections::HashMap;
use std::path::Path;

use yaml_rust2::parser::{Event, Parser};

use super::{InventoryError, error};

/// Nodes a document may expand to (aliases counted as the size of what they copy). A large
/// real inventory has a few thousand.
pub(super) const MAX_NODES: u64 = 200_000;
/// Nesting of sequences and mappings (an inventory nests groups a handful of levels).
pub(super) const MAX_DEPTH: usize = 64;

/// Refuses a document whose expansion or nesting exceeds the bounds. Syntax errors are left to
/// the loader, which reports them with their line.
pub(super) fn check(text: &str, path: &Path) -> Result<(), InventoryError> {
    let mut parser = Parser::new_from_str(text);
    // Expanded size of each anchor, and the open collections (anchor, size before it).
    let mut sizes: HashMap<usize, u64> = HashMap::new();
    let mut open: Vec<(usize, u64)> = Vec::new();
    let mut total: u64 = 0;
    loop {
        let Ok((event, mark)) = parser.next_token() else {
            return Ok(());
        };
        match event {
            Event::StreamEnd => return Ok(()),
            Event::Scalar(_, _, anchor, _) => {
                total += 1;
                if anchor > 0 {
                    sizes.insert(anchor, 1);
                }
            }
            Event::Alias(id) => {
                total = total.saturating_add(sizes.get(&id).copied().unwrap_or(1));
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                open.push((anchor, total));
                total += 1;
                if open.len() > MAX_DEPTH {
                    return Err(error(
                        path,
                        Some(mark.line().max(1)),
                        format!("YAML nested deeper than {MAX_DEPTH} levels; refused"),
                    ));
                }
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some((anchor, start)) = open.pop()
                    && anchor > 0
                {
                    sizes.insert(anchor, total - start);
                }
            }
            _ => {}
        }
        if total > MAX_NODES {
            return Err(error(
                path,
                Some(mark.line().max(1)),
                format!(
                    "YAML aliases expand to more than {MAX_NODES} nodes (an alias bomb?); refused"
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bomb(levels: usize) -> String {
        let mut t = String::from(
            "a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        for i in 1..levels {
            let refs = vec![format!("*a{}", i - 1); 9].join(",");
            t.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
        }
        t
    }

    #[test]
    fn table() {
        let deep = format!("{}x{}", "[".repeat(100), "]".repeat(100));
        let cases: Vec<(String, Option<&str>)> = vec![
            (bomb(9), Some("p.yml:6: YAML aliases expand to more than")),
            (bomb(3), None),
            (deep, Some("p.yml:1: YAML nested deeper than 64 levels")),
            (
                "all:\n  vars: &v {ansible_user: root}\n  children:\n    a: {vars: *v, hosts: {h1: }}\n"
                    .into(),
                None,
            ),
            ("all: [unclosed\n".into(), None),
        ];
        for (text, expected) in cases {
            let got = check(&text, Path::new("p.yml"))
                .err()
                .map(|e| e.to_string());
            match expected {
                Some(prefix) => assert!(
                    got.as_deref().is_some_and(|g| g.starts_with(prefix)),
                    "{got:?}"
                ),
                None => assert_eq!(got, None),
            }
        }
    }
}
