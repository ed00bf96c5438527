//! Secret redaction, driven by `configs/redaction.toml`. A secret value becomes
//! `<redacted:XXXXXXXX>` (first 8 hex digits of its SHA-256), so two snapshots can tell whether
//! a secret changed without storing it. Redaction is idempotent: a redacted marker is never
//! redacted again, and a variable reference (`$4`, `${HF_TOKEN:-}`) is not a secret.
//!
//! * [`Redactor`]: the rules: which keys are secret, argv pairs, free text.
//! * [`walk`]: the one pass over a finished value ([`redact_snapshot`], [`redact_serde`]):
//!   every string of every field, with map keys as context.

mod rules;
mod text;
pub mod walk;

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};
use sha2::{Digest, Sha256};

pub use walk::{redact_serde, redact_snapshot};

use rules::{CommandOption, Entropy};

const RULES: &str = include_str!("../../../configs/redaction.toml");

/// Redacts secret values in argv, environments and free text.
#[derive(Debug)]
pub struct Redactor {
    components: Vec<String>,
    keys: Vec<String>,
    not_secret: Vec<String>,
    substrings: Vec<String>,
    placeholders: Vec<String>,
    entropy: Entropy,
    shapes: Vec<Regex>,
    command_options: Vec<CommandOption>,
    key_value_commands: Vec<Regex>,
    /// `KEY=VALUE` / `KEY: VALUE` / `'key': 'value'` / `'key': ['value']` in text.
    assign: Regex,
    /// `--flag VALUE` / `--flag=VALUE` in text.
    flag: Regex,
    /// `scheme://userinfo@`.
    url_cred: Regex,
    /// `Bearer TOKEN` / `Basic TOKEN`.
    bearer: Regex,
    /// One quoted item of a list value.
    list_item: Regex,
    /// Every pattern of the free-text pass at once: text none of them matches is returned as it
    /// is after one scan instead of one scan per pattern (most strings of a snapshot).
    any_text_rule: RegexSet,
}

/// Marker for a redacted value.
pub fn marker(value: &str) -> String {
    let d = Sha256::digest(value.as_bytes());
    let hex: String = d.iter().take(4).map(|b| format!("{b:02x}")).collect();
    probe_model::text::redacted_marker(&hex)
}

fn is_marker(v: &str) -> bool {
    v.len() == 19
        && probe_model::text::is_redacted(v)
        && v.ends_with('>')
        && v.get(10..18)
            .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// A shell/systemd variable reference (`$4`, `$HF_TOKEN`, `${HF_TOKEN:-}`, `$(cat f)`): where a
/// value comes from, not the value.
pub fn is_reference(v: &str) -> bool {
    let mut it = v.trim().chars();
    it.next() == Some('$')
        && it
            .next()
            .is_some_and(|c| c == '{' || c == '(' || c == '_' || c.is_ascii_alphanumeric())
}

fn norm_key(k: &str) -> String {
    k.trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_")
}

impl Redactor {
    /// The rules of `configs/redaction.toml` (embedded at build time).
    pub fn builtin() -> &'static Redactor {
        static R: LazyLock<Redactor> = LazyLock::new(|| {
            crate::config::built_in("configs/redaction.toml", Redactor::from_toml(RULES))
        });
        &R
    }

    /// Whether a key (`HF_TOKEN`, `--api-key`, `api_key`) names a secret.
    pub fn is_secret_key(&self, key: &str) -> bool {
        self.is_secret_norm_key(&norm_key(key))
    }

    /// [`Self::is_secret_key`] of a key already through `norm_key`.
    fn is_secret_norm_key(&self, k: &str) -> bool {
        if k.is_empty() || self.not_secret.iter().any(|s| s == k) {
            return false;
        }
        if self.keys.iter().any(|s| s == k) {
            return true;
        }
        k.split(['_', '.'])
            .any(|c| self.components.iter().any(|s| s == c))
    }

    /// Whether a key only hints at a secret (`MYAPIKEY`): its value is secret when random.
    fn is_weak_secret_norm_key(&self, k: &str) -> bool {
        let joined = k.replace(['_', '.'], "");
        !self.not_secret.iter().any(|s| s == k)
            && self.substrings.iter().any(|s| joined.contains(s))
    }

    /// Whether `value` of `key` is to be redacted.
    pub fn is_secret_value(&self, key: &str, value: &str) -> bool {
        let v = value.trim();
        if self.is_placeholder(v) || is_reference(v) {
            return false;
        }
        let k = norm_key(key);
        self.is_secret_norm_key(&k)
            || (self.is_weak_secret_norm_key(&k) && self.entropy.is_random(v))
    }

    fn is_placeholder(&self, v: &str) -> bool {
        let t = v.trim();
        is_marker(t) || self.placeholders.iter().any(|p| p == t)
    }

    /// The value to store for environment variable (or any map key) `key`.
    pub fn redact_env(&self, key: &str, value: &str) -> String {
        self.redact_value_of(key, value).into_owned()
    }

    /// [`Self::redact_env`], borrowing `value` back when nothing in it is secret.
    fn redact_value_of<'a>(&self, key: &str, value: &'a str) -> Cow<'a, str> {
        if self.is_secret_value(key, value) {
            Cow::Owned(marker(value))
        } else {
            self.redact_text(value)
        }
    }

    /// Redacts secret flag values (`--api-key X`, `--api-key=X`, an `X` that starts with a single
    /// dash too), secrets of command options (`mysql -pX`, `sshpass -p X`), `KEY=VALUE` words
    /// and token shapes in an argv, in place.
    #[expect(
        clippy::ptr_arg,
        reason = "the public API takes the Vec the snapshot holds"
    )]
    pub fn redact_argv(&self, argv: &mut Vec<String>) {
        let mut i = 0;
        while i < argv.len() {
            i += self.redact_argv_at(argv, i);
        }
    }

    /// Redacts the word at `i` (and its value), returning how many words it consumed.
    fn redact_argv_at(&self, argv: &mut [String], i: usize) -> usize {
        let a = argv.get(i).cloned().unwrap_or_default();
        if let Some(n) = self.redact_command_option(argv, i) {
            return n;
        }
        if let Some(flag) = a.strip_prefix('-').filter(|_| a.len() > 1) {
            if let Some((name, val)) = flag.split_once('=') {
                if self.is_secret_key(name) && self.is_secret_value(name, val) {
                    set(argv, i, format!("-{name}={}", marker(val)));
                    return 1;
                }
            } else if self.is_secret_key(flag)
                && let Some(next) = argv.get(i + 1).cloned()
                && !is_long_option(&next)
            {
                if self.is_secret_value(flag, &next) {
                    set(argv, i + 1, marker(&next));
                }
                return 2;
            }
        }
        if let Cow::Owned(r) = self.redact_text(&a) {
            set(argv, i, r);
        }
        1
    }

    /// `argv[i]` as a secret option of a command named earlier in `argv` (`mysql ... -pX`).
    fn redact_command_option(&self, argv: &mut [String], i: usize) -> Option<usize> {
        argv.get(i)?;
        for rule in &self.command_options {
            let Some((consumed, secret)) = rule.value_in_argv(argv, i) else {
                continue;
            };
            let prefix = argv.get(..i).unwrap_or_default().join(" ");
            if !rule.command_before(&prefix) {
                continue;
            }
            let target = i + consumed - 1;
            let value = argv.get(target).cloned().unwrap_or_default();
            let start = value.len() - secret.len();
            let (kept, secret) = value.split_at(start);
            if !self.is_placeholder(secret) && !is_reference(secret) {
                set(argv, target, format!("{kept}{}", marker(secret)));
            }
            return Some(consumed);
        }
        None
    }
}

/// `--name`: a long option, never the value of the option before it (`-abc` can be).
fn is_long_option(w: &str) -> bool {
    w.strip_prefix("--")
        .and_then(|r| r.chars().next())
        .is_some_and(|c| c.is_ascii_alphabetic())
}

fn set(argv: &mut [String], i: usize, value: String) {
    if let Some(x) = argv.get_mut(i) {
        *x = value;
    }
}

#[cfg(test)]
mod tests;
