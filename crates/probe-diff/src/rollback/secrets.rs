//! Secrets in a plan: a value the snapshot holds redacted (`<redacted:3f2a9c1e>`) becomes a
//! named placeholder (`<REDACTED:HF_TOKEN>`) that the person running the plan fills in, and the
//! plan says where the real value lives. The marker itself (a hash) never reaches a step.

use probe_model::Placeholder;
use probe_model::rollback::placeholder;
use probe_model::text::REDACTED_PREFIX;

/// The placeholders a plan uses, each once.
#[derive(Debug)]
pub(crate) struct Secrets {
    /// The host whose values the plan restores.
    host: String,
    used: Vec<Placeholder>,
}

impl Secrets {
    pub(crate) fn new(host: &str) -> Self {
        Secrets {
            host: host.to_string(),
            used: Vec::new(),
        }
    }

    fn note(&mut self, name: &str) -> String {
        let text = placeholder(name);
        if !self.used.iter().any(|p| p.text == text) {
            self.used.push(Placeholder {
                text: text.clone(),
                name: name.to_string(),
                lives: format!(
                    "the value {name} has on {} (its snapshot holds it redacted)",
                    self.host
                ),
            });
        }
        text
    }

    /// `value` of `name`, or its placeholder when redacted.
    pub(crate) fn value(&mut self, name: &str, value: &str) -> String {
        if value.contains(REDACTED_PREFIX) {
            self.fill(value, name)
        } else {
            value.to_string()
        }
    }

    /// `text` with every redaction marker replaced by a placeholder named for what it is the
    /// value of: the variable of `VAR=<marker>`, the flag before it (`--api-key <marker>`),
    /// else `name`.
    pub(crate) fn fill(&mut self, text: &str, name: &str) -> String {
        let mut out = String::new();
        let mut rest = text;
        while let Some(at) = rest.find(REDACTED_PREFIX) {
            let (head, tail) = rest.split_at(at);
            let end = tail.find('>').map_or(tail.len(), |e| e + 1);
            let before: String = out.clone() + head;
            let named = owner(&before).unwrap_or(name).to_string();
            out.push_str(head);
            out.push_str(&self.note(&named));
            rest = tail.get(end..).unwrap_or_default();
        }
        out.push_str(rest);
        out
    }

    pub(crate) fn into_placeholders(self) -> Vec<Placeholder> {
        self.used
    }
}

/// What the value after `before` belongs to: `VAR` of a trailing `VAR=`, or the flag of a
/// trailing `--flag ` / `--flag=`.
fn owner(before: &str) -> Option<&str> {
    let word = before
        .trim_end_matches(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .rsplit(|c: char| c.is_whitespace() || c == '"' || c == '\'')
        .next()?;
    if let Some(var) = word.strip_suffix('=') {
        let var = var.rsplit('=').next().unwrap_or(var);
        let var = var.trim_start_matches('-');
        return (!var.is_empty()).then_some(var);
    }
    let flag = word.trim_start_matches('-');
    (word.starts_with('-') && !flag.is_empty()).then_some(flag)
}

/// Whether a text still holds a placeholder to fill in.
#[cfg(test)]
fn holds_placeholder(text: &str) -> bool {
    text.contains(probe_model::rollback::PLACEHOLDER_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (text, fallback name) -> the text with placeholders.
    #[test]
    fn markers_become_named_placeholders() {
        let cases = [
            (
                "HF_TOKEN=<redacted:3f2a9c1e>",
                "x",
                "HF_TOKEN=<REDACTED:HF_TOKEN>",
            ),
            (
                "ExecStart=/v serve /m --api-key <redacted:00ff00ff> --port 8000",
                "ExecStart",
                "ExecStart=/v serve /m --api-key <REDACTED:api-key> --port 8000",
            ),
            ("<redacted:abcd1234>", "HF_TOKEN", "<REDACTED:HF_TOKEN>"),
            ("no secret", "x", "no secret"),
        ];
        for (text, name, want) in cases {
            let mut s = Secrets::new("a");
            let got = s.fill(text, name);
            assert_eq!(got, want);
            assert!(!got.contains(REDACTED_PREFIX));
            assert_eq!(holds_placeholder(&got), text.contains(REDACTED_PREFIX));
            let placeholders = s.into_placeholders();
            assert_eq!(
                placeholders.len(),
                usize::from(text.contains(REDACTED_PREFIX))
            );
        }
    }
}
