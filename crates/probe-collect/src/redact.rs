//! Secret redaction, driven by `configs/redaction.toml`. A secret value becomes
//! `<redacted:XXXXXXXX>` (first 8 hex digits of its SHA-256), so two snapshots can tell whether
//! a secret changed without storing it. Redaction is idempotent: a redacted marker is never
//! redacted again.

use std::borrow::Cow;
use std::sync::OnceLock;

use regex::Regex;
use serde::Deserialize;
use sha2::{Digest, Sha256};

const RULES: &str = include_str!("../../../configs/redaction.toml");

#[derive(Debug, Deserialize)]
struct Rules {
    secret_components: Vec<String>,
    secret_keys: Vec<String>,
    not_secret: Vec<String>,
    placeholder_values: Vec<String>,
    token_shapes: Vec<String>,
}

/// Redacts secret values in argv, environments and free text.
#[derive(Debug)]
pub struct Redactor {
    components: Vec<String>,
    keys: Vec<String>,
    not_secret: Vec<String>,
    placeholders: Vec<String>,
    shapes: Vec<Regex>,
    /// `KEY=VALUE` / `KEY: VALUE` / `'key': 'value'` / `key='value'` in text.
    assign: Regex,
    /// `--flag VALUE` / `--flag=VALUE` in text.
    flag: Regex,
    /// `scheme://user:password@`.
    url_cred: Regex,
    /// `Bearer TOKEN` / `Basic TOKEN`.
    bearer: Regex,
}

/// Marker for a redacted value.
pub fn marker(value: &str) -> String {
    let d = Sha256::digest(value.as_bytes());
    let hex: String = d.iter().take(4).map(|b| format!("{b:02x}")).collect();
    format!("<redacted:{hex}>")
}

fn is_marker(v: &str) -> bool {
    v.starts_with("<redacted:") && v.ends_with('>')
}

fn norm_key(k: &str) -> String {
    k.trim_start_matches('-')
        .to_ascii_uppercase()
        .replace('-', "_")
}

impl Redactor {
    /// The rules of `configs/redaction.toml` (embedded at build time).
    pub fn builtin() -> &'static Redactor {
        static R: OnceLock<Redactor> = OnceLock::new();
        R.get_or_init(|| {
            Redactor::from_toml(RULES).unwrap_or_else(|e| panic!("configs/redaction.toml: {e}"))
        })
    }

    /// Builds a redactor from rules text (same schema as `configs/redaction.toml`).
    pub fn from_toml(text: &str) -> Result<Redactor, String> {
        let r: Rules = toml::from_str(text).map_err(|e| e.to_string())?;
        let shapes = r
            .token_shapes
            .iter()
            .map(|s| Regex::new(s).map_err(|e| format!("token shape {s}: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let re = |s: &str| Regex::new(s).map_err(|e| e.to_string());
        Ok(Redactor {
            components: r
                .secret_components
                .iter()
                .map(|s| s.to_ascii_uppercase())
                .collect(),
            keys: r.secret_keys.iter().map(|s| norm_key(s)).collect(),
            not_secret: r.not_secret.iter().map(|s| norm_key(s)).collect(),
            placeholders: r.placeholder_values,
            shapes,
            assign: re(r#"(?x)
                (?P<key>[A-Za-z_][A-Za-z0-9_.-]*)
                (?P<sep> ['"]? \s* (?: = | : ) \s* )
                (?P<val> '[^'\n]*' | "[^"\n]*" | [^\s'",;)}\]]+ )"#)?,
            flag: re(
                r#"(?P<flag>--[A-Za-z0-9][A-Za-z0-9_-]*)(?P<sep>=|\s+)(?P<val>'[^'\n]*'|"[^"\n]*"|[^\s'"-][^\s'"]*)"#,
            )?,
            url_cred: re(
                r"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]+:)(?P<val>[^@\s/]+)(?P<post>@)",
            )?,
            bearer: re(r"(?i)(?P<pre>\b(?:bearer|basic|token)\s+)(?P<val>[A-Za-z0-9._~+/=-]{8,})")?,
        })
    }

    /// Whether a key (`HF_TOKEN`, `--api-key`, `api_key`) names a secret.
    pub fn is_secret_key(&self, key: &str) -> bool {
        let k = norm_key(key);
        if k.is_empty() || self.not_secret.contains(&k) {
            return false;
        }
        if self.keys.contains(&k) {
            return true;
        }
        k.split(['_', '.'])
            .any(|c| self.components.iter().any(|s| s == c))
    }

    fn is_placeholder(&self, v: &str) -> bool {
        let t = v.trim();
        is_marker(t) || self.placeholders.iter().any(|p| p == t)
    }

    /// The value to store for environment variable `key`.
    pub fn redact_env(&self, key: &str, value: &str) -> String {
        if self.is_secret_key(key) && !self.is_placeholder(value) {
            marker(value)
        } else {
            self.redact_text(value).into_owned()
        }
    }

    /// Redacts secret flag values (`--api-key X`, `--api-key=X`), `KEY=VALUE` words and token
    /// shapes in an argv, in place.
    #[allow(clippy::ptr_arg)] // the public API takes the Vec the snapshot holds
    pub fn redact_argv(&self, argv: &mut Vec<String>) {
        let mut i = 0;
        while i < argv.len() {
            let a = argv.get(i).cloned().unwrap_or_default();
            if let Some(flag) = a.strip_prefix('-').filter(|_| a.len() > 1) {
                if let Some((name, val)) = flag.split_once('=') {
                    if self.is_secret_key(name) && !self.is_placeholder(val) {
                        if let Some(x) = argv.get_mut(i) {
                            *x = format!("-{name}={}", marker(val));
                        }
                        i += 1;
                        continue;
                    }
                } else if self.is_secret_key(flag)
                    && let Some(next) = argv.get(i + 1).cloned()
                    && !next.starts_with('-')
                {
                    if !self.is_placeholder(&next)
                        && let Some(x) = argv.get_mut(i + 1)
                    {
                        *x = marker(&next);
                    }
                    i += 2;
                    continue;
                }
            }
            let r = self.redact_text(&a).into_owned();
            if let Some(x) = argv.get_mut(i) {
                *x = r;
            }
            i += 1;
        }
    }

    /// Redacts secrets in free text: assignments to secret keys, secret flags, credentials in
    /// URLs, bearer tokens and well-known token shapes.
    pub fn redact_text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        let mut cur: Cow<'a, str> = Cow::Borrowed(s);
        let replaced = self.assign.replace_all(&cur, |c: &regex::Captures<'_>| {
            let key = c.name("key").map_or("", |m| m.as_str());
            let val = c.name("val").map_or("", |m| m.as_str());
            let whole = c.get(0).map_or("", |m| m.as_str());
            let bare = unquote(val);
            let sep = c.name("sep").map_or("", |m| m.as_str());
            let q = quote_of(val);
            let scheme = ["bearer", "basic", "token"]
                .iter()
                .any(|w| bare.eq_ignore_ascii_case(w));
            if self.is_secret_key(key)
                && !self.is_placeholder(bare)
                && !key.starts_with('-')
                && !scheme
            {
                format!("{key}{sep}{q}{}{q}", marker(bare))
            } else if !q.is_empty() && bare.len() < val.len() {
                // `Environment="API_KEY=x"`: look inside the quotes.
                format!("{key}{sep}{q}{}{q}", self.redact_text(bare))
            } else {
                whole.to_string()
            }
        });
        if let Cow::Owned(o) = replaced {
            cur = Cow::Owned(o);
        }
        let replaced = self.flag.replace_all(&cur, |c: &regex::Captures<'_>| {
            let flag = c.name("flag").map_or("", |m| m.as_str());
            let val = c.name("val").map_or("", |m| m.as_str());
            let bare = unquote(val);
            if self.is_secret_key(flag) && !self.is_placeholder(bare) {
                let q = quote_of(val);
                format!(
                    "{flag}{}{q}{}{q}",
                    c.name("sep").map_or("", |m| m.as_str()),
                    marker(bare)
                )
            } else {
                c.get(0).map_or("", |m| m.as_str()).to_string()
            }
        });
        if let Cow::Owned(o) = replaced {
            cur = Cow::Owned(o);
        }
        let replaced = self.url_cred.replace_all(&cur, |c: &regex::Captures<'_>| {
            let val = c.name("val").map_or("", |m| m.as_str());
            let pre = c.name("pre").map_or("", |m| m.as_str());
            if is_marker(val) {
                c.get(0).map_or("", |m| m.as_str()).to_string()
            } else {
                format!("{pre}{}@", marker(val))
            }
        });
        if let Cow::Owned(o) = replaced {
            cur = Cow::Owned(o);
        }
        let replaced = self.bearer.replace_all(&cur, |c: &regex::Captures<'_>| {
            let val = c.name("val").map_or("", |m| m.as_str());
            let pre = c.name("pre").map_or("", |m| m.as_str());
            format!("{pre}{}", marker(val))
        });
        if let Cow::Owned(o) = replaced {
            cur = Cow::Owned(o);
        }
        for shape in &self.shapes {
            let replaced = shape.replace_all(&cur, |c: &regex::Captures<'_>| {
                marker(c.get(0).map_or("", |m| m.as_str()))
            });
            if let Cow::Owned(o) = replaced {
                cur = Cow::Owned(o);
            }
        }
        cur
    }
}

fn unquote(v: &str) -> &str {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> &'static Redactor {
        Redactor::builtin()
    }

    #[test]
    fn keys() {
        for k in [
            "HF_TOKEN",
            "OPENAI_API_KEY",
            "AWS_SECRET_ACCESS_KEY",
            "DB_PASSWORD",
            "--api-key",
            "api_key",
            "--hf-token",
            "KEY",
        ] {
            assert!(r().is_secret_key(k), "{k}");
        }
        for k in [
            "KEYBOARD",
            "TOKENIZERS_PARALLELISM",
            "PATH",
            "--tokenizer",
            "--max-num-batched-tokens",
            "SSH_AUTH_SOCK",
            "--ssl-keyfile",
            "--speculative-token-map",
            "PWD",
            "HOTKEYS",
        ] {
            assert!(!r().is_secret_key(k), "{k}");
        }
    }

    #[test]
    fn env_and_argv() {
        let m = marker("hf_abcdefghijklmnopqrstuvwxyz");
        assert_eq!(
            r().redact_env("HF_TOKEN", "hf_abcdefghijklmnopqrstuvwxyz"),
            m
        );
        assert_eq!(r().redact_env("HF_TOKEN", ""), "");
        assert_eq!(r().redact_env("PATH", "/usr/bin"), "/usr/bin");
        let mut argv: Vec<String> = [
            "python3",
            "-m",
            "sglang.launch_server",
            "--api-key",
            "s3cret",
            "--tp",
            "2",
            "--admin-api-key=abc",
            "--tokenizer",
            "x",
        ]
        .map(String::from)
        .to_vec();
        r().redact_argv(&mut argv);
        assert_eq!(argv[4], marker("s3cret"));
        assert_eq!(argv[6], "2");
        assert_eq!(argv[7], format!("--admin-api-key={}", marker("abc")));
        assert_eq!(argv[9], "x");
        // Idempotent.
        let before = argv.clone();
        r().redact_argv(&mut argv);
        assert_eq!(argv, before);
    }

    #[test]
    fn text() {
        let t = "export HF_TOKEN=hf_AAAAAAAAAAAAAAAAAAAAAAAA && vllm serve m --api-key 'k e y' --port 8000";
        let o = r().redact_text(t);
        assert!(!o.contains("hf_AAAA"), "{o}");
        assert!(!o.contains("k e y"), "{o}");
        assert!(o.contains("--port 8000"), "{o}");
        assert!(o.contains(&marker("hf_AAAAAAAAAAAAAAAAAAAAAAAA")), "{o}");
        let o = r().redact_text(
            "curl -H 'Authorization: Bearer abcdefghijkl' https://user:pa55w0rd@example.com/x",
        );
        assert!(
            !o.contains("abcdefghijkl") && !o.contains("pa55w0rd"),
            "{o}"
        );
        let o = r()
            .redact_text("server_args=ServerArgs(model_path='m', api_key='topsecret', tp_size=2)");
        assert!(!o.contains("topsecret"), "{o}");
        assert!(o.contains("tp_size=2"));
        let o = r().redact_text(
            "{'model': 'x', 'api_key': None, 'hf_token': 'hf_zzzzzzzzzzzzzzzzzzzzzzzz'}",
        );
        assert!(o.contains("'api_key': None"), "{o}");
        assert!(!o.contains("hf_zzzz"), "{o}");
        let o = r().redact_text("Environment=\"OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwxyz\"");
        assert!(!o.contains("sk-abc"), "{o}");
        assert_eq!(
            r().redact_text("nothing here: tokens=5 KEYBOARD=us"),
            "nothing here: tokens=5 KEYBOARD=us"
        );
        let once = r().redact_text(t).into_owned();
        assert_eq!(r().redact_text(&once), once);
    }
}
