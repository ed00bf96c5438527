//! INI-style texts that are not systemd units (supervisord programs, podman quadlets): sections
//! of `key=value` lines, read leniently and bounded by the text.

/// One `[section]` and its entries in file order (a key may repeat).
#[derive(Debug, Default, Clone)]
pub(crate) struct Section {
    pub name: String,
    pub entries: Vec<(String, String)>,
}

impl Section {
    /// The last value of `key` (later lines override earlier ones).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order.
    pub fn all<'a>(&'a self, key: &'a str) -> impl Iterator<Item = &'a str> {
        self.entries
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The sections of `text`. Comments start with `#` or `;`; a value continues on the next line
/// after a trailing `\` (systemd style) or on indented lines (Python's configparser, which
/// supervisord uses). Lines before the first header are dropped.
pub(crate) fn sections(text: &str) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut continued = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        let indented = trimmed.len() < line.len();
        let Some(cur) = out.last_mut() else {
            if let Some(name) = header(trimmed) {
                out.push(Section {
                    name,
                    ..Section::default()
                });
            }
            continue;
        };
        if (continued || (indented && !trimmed.is_empty() && !cur.entries.is_empty()))
            && !trimmed.starts_with('#')
            && !trimmed.starts_with(';')
            && header(trimmed).is_none()
        {
            if let Some((_, v)) = cur.entries.last_mut() {
                let (part, more) = strip_continuation(trimmed);
                if !v.is_empty() {
                    v.push(' ');
                }
                v.push_str(part);
                continued = more;
            }
            continue;
        }
        continued = false;
        if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if let Some(name) = header(trimmed) {
            out.push(Section {
                name,
                ..Section::default()
            });
            continue;
        }
        if let Some((k, v)) = trimmed.split_once('=') {
            let (v, more) = strip_continuation(v.trim());
            continued = more;
            cur.entries.push((k.trim().to_string(), v.to_string()));
        }
    }
    out
}

fn header(line: &str) -> Option<String> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?;
    Some(inner.trim().to_string())
}

fn strip_continuation(v: &str) -> (&str, bool) {
    match v.strip_suffix('\\') {
        Some(head) => (head.trim_end(), true),
        None => (v, false),
    }
}

/// Whether the first line that is neither blank nor a comment is a section header: the text is
/// an INI file, not prose that quotes one.
pub(crate) fn starts_with_header(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with(';'))
        .is_some_and(|l| header(l).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continuation_lines_join_values() {
        let s = sections("junk\n[a]\nk = one \\\n  two\nx=1\n  more\n; c\n[b]\nk=2\n");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].get("k"), Some("one two"));
        assert_eq!(s[0].get("x"), Some("1 more"));
        assert_eq!(s[1].name, "b");
        assert!(starts_with_header("# c\n\n[a]\n"));
        assert!(!starts_with_header("prose\n[a]\n"));
    }
}
