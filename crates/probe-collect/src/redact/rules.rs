//! `configs/redaction.toml`: its schema (read with `deny_unknown_fields`) and the compiled
//! forms of its command rules and randomness test.

use regex::{Regex, RegexSet};
use serde::Deserialize;

use super::{Redactor, norm_key};
use crate::config::ConfigError;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rules {
    secret_components: Vec<String>,
    secret_keys: Vec<String>,
    not_secret: Vec<String>,
    secret_substrings: Vec<String>,
    placeholder_values: Vec<String>,
    token_shapes: Vec<String>,
    high_entropy: Entropy,
    command_options: Vec<CommandOptionRule>,
    key_value_commands: Vec<String>,
}

/// When a value looks random.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Entropy {
    min_len: usize,
    min_classes: usize,
    min_bits_per_char: f64,
}

impl Entropy {
    /// Long enough, no blanks, mixed character classes and high Shannon entropy.
    pub(super) fn is_random(&self, v: &str) -> bool {
        let n = v.chars().count();
        if n < self.min_len || v.chars().any(char::is_whitespace) {
            return false;
        }
        let classes = [
            v.chars().any(|c| c.is_ascii_lowercase()),
            v.chars().any(|c| c.is_ascii_uppercase()),
            v.chars().any(|c| c.is_ascii_digit()),
            v.chars().any(|c| !c.is_ascii_alphanumeric()),
        ];
        if classes.iter().filter(|&&c| c).count() < self.min_classes {
            return false;
        }
        let mut counts = std::collections::BTreeMap::<char, usize>::new();
        for c in v.chars() {
            *counts.entry(c).or_default() += 1;
        }
        let len = n as f64;
        let bits: f64 = counts
            .values()
            .map(|&c| {
                let p = c as f64 / len;
                -p * p.log2()
            })
            .sum();
        bits >= self.min_bits_per_char
    }
}

/// How a command option carries its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Form {
    Glued,
    Separate,
    Equals,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommandOptionRule {
    command: String,
    option: String,
    forms: Vec<Form>,
    #[serde(default)]
    after_colon: bool,
}

/// A secret option of a command (`mysql -pSECRET`), compiled.
#[derive(Debug)]
pub(super) struct CommandOption {
    /// The command at the end of an argv prefix.
    command: Regex,
    /// The command and the option in free text: groups `pre`, `sep`, `val`.
    pub(super) text: Regex,
    option: String,
    forms: Vec<Form>,
    after_colon: bool,
}

impl CommandOption {
    fn compile(rule: CommandOptionRule) -> Result<CommandOption, ConfigError> {
        let re = |s: &str| Regex::new(s).map_err(ConfigError::pattern(&rule.command));
        let cmd = &rule.command;
        let opt = regex::escape(&rule.option);
        Ok(CommandOption {
            command: re(&format!(r"(?:^|[\s/(])(?:{cmd})(?:\s|$)"))?,
            text: re(&format!(
                r#"(?P<pre>(?:^|[\s/(;&|`])(?:{cmd})(?:\s+[^\s;&|]+)*?\s+{opt})(?P<sep>=|[ \t]+)?(?P<val>'[^'\n]*'|"[^"\n]*"|[^\s'";&|]+)"#
            ))?,
            option: rule.option,
            forms: rule.forms,
            after_colon: rule.after_colon,
        })
    }

    /// Whether the last simple command of `prefix` is this rule's command.
    pub(super) fn command_before(&self, prefix: &str) -> bool {
        let last = prefix
            .rsplit([';', '|', '&', '\n'])
            .next()
            .unwrap_or(prefix);
        self.command.is_match(last)
    }

    /// The secret part of `value` (after the colon for `user:secret`), if any.
    pub(super) fn secret_part<'a>(&self, value: &'a str) -> Option<&'a str> {
        let v = if self.after_colon {
            value.split_once(':')?.1
        } else {
            value
        };
        (!v.is_empty()).then_some(v)
    }

    /// Whether the separator `sep` of a text match is a form this option takes.
    pub(super) fn takes_sep(&self, sep: &str) -> bool {
        let form = match sep {
            "" => Form::Glued,
            "=" => Form::Equals,
            _ => Form::Separate,
        };
        self.forms.contains(&form)
    }

    /// `argv[i]` as this option: how many words it spans and the secret (a suffix of the last).
    pub(super) fn value_in_argv(&self, argv: &[String], i: usize) -> Option<(usize, String)> {
        let word = argv.get(i)?;
        let rest = word.strip_prefix(self.option.as_str())?;
        if rest.is_empty() {
            if !self.forms.contains(&Form::Separate) {
                return None;
            }
            let next = argv.get(i + 1)?;
            return Some((2, self.secret_part(next)?.to_string()));
        }
        let value = match rest.strip_prefix('=') {
            Some(v) if self.forms.contains(&Form::Equals) => v,
            _ if self.forms.contains(&Form::Glued) => rest,
            _ => return None,
        };
        Some((1, self.secret_part(value)?.to_string()))
    }
}

impl Redactor {
    /// Builds a redactor from rules text (same schema as `configs/redaction.toml`).
    pub fn from_toml(text: &str) -> Result<Redactor, ConfigError> {
        let r: Rules = toml::from_str(text)?;
        let re = |s: &str| Regex::new(s).map_err(ConfigError::pattern(s));
        let upper = |v: &[String]| v.iter().map(|s| s.to_ascii_uppercase()).collect();
        let mut redactor = Redactor {
            components: upper(&r.secret_components),
            keys: r.secret_keys.iter().map(|s| norm_key(s)).collect(),
            not_secret: r.not_secret.iter().map(|s| norm_key(s)).collect(),
            substrings: upper(&r.secret_substrings),
            placeholders: r.placeholder_values,
            entropy: r.high_entropy,
            shapes: r
                .token_shapes
                .iter()
                .map(|s| re(s))
                .collect::<Result<_, _>>()?,
            command_options: r
                .command_options
                .into_iter()
                .map(CommandOption::compile)
                .collect::<Result<_, _>>()?,
            key_value_commands: r
                .key_value_commands
                .iter()
                .map(|s| re(s))
                .collect::<Result<_, _>>()?,
            assign: re(r#"(?x)
                (?P<key>[A-Za-z_][A-Za-z0-9_.-]*)
                (?P<sep> ['"]? \s* (?: = | : ) \s* )
                (?P<val>
                    \[ \s* (?: '[^'\n]*' | "[^"\n]*" ) (?: \s* , \s* (?: '[^'\n]*' | "[^"\n]*" ) )* \s* \]
                  | '[^'\n]*' | "[^"\n]*" | [^\s'",;)}\[\]]+ )"#)?,
            flag: re(
                r#"(?P<flag>--[A-Za-z0-9][A-Za-z0-9_-]*)(?P<sep>=|\s+)(?P<val>'[^'\n]*'|"[^"\n]*"|-[^\s'"-][^\s'"]*|[^\s'"-][^\s'"]*)"#,
            )?,
            url_cred: re(
                r"(?P<pre>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/\s:@<>]*)(?P<colon>:?)(?P<val>[^@\s/]*)(?P<post>@)",
            )?,
            bearer: re(r"(?i)(?P<pre>\b(?:bearer|basic|token)\s+)(?P<val>[A-Za-z0-9._~+/=-]{8,})")?,
            list_item: re(r#"'[^'\n]*'|"[^"\n]*""#)?,
            any_text_rule: RegexSet::empty(),
        };
        redactor.any_text_rule = redactor.text_rule_set()?;
        Ok(redactor)
    }

    /// One set of the patterns `redact_text` applies, in any order: it only answers whether
    /// any of them matches.
    fn text_rule_set(&self) -> Result<RegexSet, ConfigError> {
        let patterns: Vec<&str> = self
            .command_options
            .iter()
            .map(|rule| rule.text.as_str())
            .chain(self.key_value_commands.iter().map(Regex::as_str))
            .chain([&self.assign, &self.flag, &self.url_cred, &self.bearer].map(Regex::as_str))
            .chain(self.shapes.iter().map(Regex::as_str))
            .collect();
        RegexSet::new(&patterns).map_err(ConfigError::pattern("the free-text rules as one set"))
    }
}
