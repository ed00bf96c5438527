//! Secrets in free text: command options, `KEY=VALUE` and `'key': value` assignments (also
//! inside an unquoted outer assignment: `Environment=DB_PASSWORD=x`, `--env=HF_TOKEN=x`),
//! `--flag value`, credentials in URLs, bearer tokens and well-known token shapes.

use std::borrow::Cow;

use regex::{Captures, Regex};

use super::{Redactor, is_reference, marker};

/// Nested assignments looked into (`--env=A=B` is two), and the longest value looked into.
const MAX_DEPTH: u8 = 3;
const MAX_INNER: usize = 4096;

/// Replaces every match of `re` in `cur` by `f(captures, haystack)`.
fn apply(cur: &mut Cow<'_, str>, re: &Regex, mut f: impl FnMut(&Captures<'_>, &str) -> String) {
    let hay: &str = cur;
    let replaced = re.replace_all(hay, |c: &Captures<'_>| f(c, hay));
    if let Cow::Owned(o) = replaced {
        *cur = Cow::Owned(o);
    }
}

fn group<'t>(c: &Captures<'t>, name: &str) -> &'t str {
    c.name(name).map_or("", |m| m.as_str())
}

fn whole<'t>(c: &Captures<'t>) -> &'t str {
    c.get(0).map_or("", |m| m.as_str())
}

impl Redactor {
    /// Redacts secrets in free text. Idempotent; variable references are kept.
    pub fn redact_text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        self.redact_text_at(s, 0)
    }

    fn redact_text_at<'a>(&self, s: &'a str, depth: u8) -> Cow<'a, str> {
        let mut cur = Cow::Borrowed(s);
        // No rule matches: each pass below would find nothing and leave the text as it is.
        if !self.any_text_rule.is_match(s) {
            return cur;
        }
        for rule in &self.command_options {
            apply(&mut cur, &rule.text, |c, _| {
                let (sep, val) = (group(c, "sep"), group(c, "val"));
                let (bare, q) = (unquote(val), quote_of(val));
                match rule.secret_part(bare) {
                    Some(secret) if rule.takes_sep(sep) && self.is_literal(secret) => {
                        let kept = bare.get(..bare.len() - secret.len()).unwrap_or("");
                        format!("{}{sep}{q}{kept}{}{q}", group(c, "pre"), marker(secret))
                    }
                    _ => whole(c).to_string(),
                }
            });
        }
        for re in &self.key_value_commands {
            apply(&mut cur, re, |c, _| {
                let (all, val) = (c.get(0), c.name("val"));
                match (all, val) {
                    (Some(all), Some(val))
                        if self.is_secret_value(group(c, "key"), val.as_str()) =>
                    {
                        let (s, e) = (val.start() - all.start(), val.end() - all.start());
                        let w = all.as_str();
                        format!("{}{}{}", &w[..s], marker(val.as_str()), &w[e..])
                    }
                    _ => whole(c).to_string(),
                }
            });
        }
        apply(&mut cur, &self.assign, |c, hay| {
            self.assignment(c, hay, depth)
        });
        apply(&mut cur, &self.flag, |c, _| {
            let (flag, val) = (group(c, "flag"), group(c, "val"));
            let (bare, q) = (unquote(val), quote_of(val));
            if self.is_secret_key(flag) && self.is_secret_value(flag, bare) {
                format!("{flag}{}{q}{}{q}", group(c, "sep"), marker(bare))
            } else {
                whole(c).to_string()
            }
        });
        apply(&mut cur, &self.url_cred, |c, _| {
            let (pre, user, val) = (group(c, "pre"), group(c, "user"), group(c, "val"));
            if !group(c, "colon").is_empty() {
                if self.is_literal(val) {
                    return format!("{pre}{user}:{}@", marker(val));
                }
            } else if self.is_literal(user) && self.entropy.is_random(user) {
                return format!("{pre}{}@", marker(user));
            }
            whole(c).to_string()
        });
        apply(&mut cur, &self.bearer, |c, _| {
            format!("{}{}", group(c, "pre"), marker(group(c, "val")))
        });
        for shape in &self.shapes {
            apply(&mut cur, shape, |c, _| marker(whole(c)));
        }
        cur
    }

    /// A literal value (not empty, not a placeholder, marker or variable reference).
    fn is_literal(&self, v: &str) -> bool {
        !v.is_empty() && !self.is_placeholder(v) && !is_reference(v)
    }

    /// One `key <sep> value` match.
    fn assignment(&self, c: &Captures<'_>, hay: &str, depth: u8) -> String {
        let (key, sep, val) = (group(c, "key"), group(c, "sep"), group(c, "val"));
        let start = c.get(0).map_or(0, |m| m.start());
        let before = hay.get(..start).unwrap_or("");
        // `${HF_TOKEN:-}` / `$HF_TOKEN`: a reference, not an assignment.
        if before.ends_with('$') || before.ends_with("${") {
            return whole(c).to_string();
        }
        if val.starts_with('[') {
            if !self.is_secret_key(key) {
                return whole(c).to_string();
            }
            let list = self.list_item.replace_all(val, |m: &Captures<'_>| {
                let item = whole(m);
                let (bare, q) = (unquote(item), quote_of(item));
                if self.is_literal(bare) {
                    format!("{q}{}{q}", marker(bare))
                } else {
                    item.to_string()
                }
            });
            return format!("{key}{sep}{list}");
        }
        let (bare, q) = (unquote(val), quote_of(val));
        let scheme = ["bearer", "basic", "token"]
            .iter()
            .any(|w| bare.eq_ignore_ascii_case(w));
        if !scheme && self.is_secret_value(key, bare) {
            return format!("{key}{sep}{q}{}{q}", marker(bare));
        }
        if depth < MAX_DEPTH && bare.len() <= MAX_INNER && bare.contains(['=', ':']) {
            // `Environment=DB_PASSWORD=x`, `--env=HF_TOKEN=x`, `Environment="API_KEY=x"`.
            if let Cow::Owned(inner) = self.redact_text_at(bare, depth + 1) {
                return format!("{key}{sep}{q}{inner}{q}");
            }
        }
        whole(c).to_string()
    }
}

pub(super) fn unquote(v: &str) -> &str {
    for q in ['\'', '"'] {
        if v.len() >= 2 && v.starts_with(q) && v.ends_with(q) {
            return v.get(1..v.len() - 1).unwrap_or(v);
        }
    }
    v
}

fn quote_of(v: &str) -> &'static str {
    if v.len() >= 2 && v.starts_with('\'') && v.ends_with('\'') {
        "'"
    } else if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
        "\""
    } else {
        ""
    }
}
