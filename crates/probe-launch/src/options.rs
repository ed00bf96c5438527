//! Reading an engine's arguments with its catalog: arity, aliases, prefixes, units, dotted keys.

use std::collections::BTreeMap;

use probe_model::{LaunchOption, Speculative};
use serde_json::Value;

use super::values::{guess, lenient_json, merge_dotted, parse_bool, parse_human_int, typed};
use crate::catalog::{Catalog, OptionSpec, Units, ValueKind};

#[derive(Debug, Default)]
pub(crate) struct Parsed {
    pub options: BTreeMap<String, LaunchOption>,
    pub positional_model: Option<String>,
    pub unknown: Vec<String>,
    pub warnings: Vec<String>,
}

fn looks_like_option(tok: &str) -> bool {
    tok.len() > 1 && tok.starts_with('-') && tok.parse::<f64>().is_err()
}

fn resolve<'c>(
    cat: &'c Catalog,
    flag: &str,
    warnings: &mut Vec<String>,
) -> Option<(&'c OptionSpec, bool, Option<String>)> {
    // Returns (spec, negated, dotted-subkey)
    let mut name = flag.to_string();
    let mut sub: Option<String> = None;
    if cat.underscore_to_dash && name.starts_with("--") {
        let (head, tail) = match name.split_once('.') {
            Some((h, t)) => (h.to_string(), Some(t.to_string())),
            None => (name.clone(), None),
        };
        let head = format!("--{}", head.trim_start_matches('-').replace('_', "-"));
        name = match &tail {
            Some(t) => format!("{head}.{t}"),
            None => head,
        };
    }
    if let Some((o, neg)) = cat.lookup_exact(&name) {
        return Some((o, neg, None));
    }
    // Dotted sub-keys of JSON-valued options (vLLM): `--speculative-config.method`.
    if cat.underscore_to_dash
        && let Some((head, tail)) = name.split_once('.')
        && let Some((o, false)) = cat.lookup_exact(head)
    {
        sub = Some(tail.to_string());
        return Some((o, false, sub));
    }
    if cat.prefix_match && name.starts_with("--") && !name.contains('.') && name.len() > 3 {
        let cands = cat.prefix_candidates(&name);
        match cands.as_slice() {
            [] => {}
            [(_, o, neg)] => return Some((o, *neg, sub)),
            [(_, o, neg), ..] => {
                let names: Vec<String> = cands
                    .iter()
                    .take(6)
                    .map(|(s, _, _)| s.to_string())
                    .collect();
                warnings.push(format!(
                    "ambiguous abbreviation {flag}: matches {} (argparse rejects it); read as --{}",
                    names.join(", "),
                    o.name
                ));
                return Some((o, *neg, sub));
            }
        }
    }
    None
}

/// Reads `args` (what follows the entry point) with `cat`.
pub(crate) fn parse(cat: &Catalog, args: &[String], positional_model: bool) -> Parsed {
    let mut p = Parsed::default();
    let mut i = 0;
    let mut only_positional = false;
    while let Some(tok) = args.get(i) {
        i += 1;
        if only_positional || !looks_like_option(tok) {
            if tok == "--" && !only_positional {
                only_positional = true;
            } else {
                positional(&mut p, tok, positional_model);
            }
            continue;
        }
        let (flag, inline) = match tok.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (tok.clone(), None),
        };
        let mut resolved = resolve(cat, &flag, &mut p.warnings);
        let mut glued: Option<String> = None;
        if resolved.is_none()
            && !flag.starts_with("--")
            && inline.is_none()
            && let Some((spec, negated, value)) = glued_short(cat, &flag)
        {
            resolved = Some((spec, negated, None));
            glued = Some(value);
        }
        let Some((spec, negated, sub)) = resolved else {
            unknown_option(&mut p, args, &mut i, tok, &flag, inline.is_some());
            continue;
        };
        let mut cursor = Cursor { args, i, tok };
        let (value, written) = read_value(
            &mut cursor,
            spec,
            negated,
            sub.is_some(),
            inline.or(glued),
            cat.units,
            &mut p.warnings,
        );
        i = cursor.i;
        store(&mut p, spec, sub, value, written);
    }
    p
}

/// A bare word: the model when the entry point takes it first (`vllm serve MODEL`), else an
/// unexpected argument.
fn positional(p: &mut Parsed, tok: &str, positional_model: bool) {
    if positional_model && p.positional_model.is_none() {
        p.positional_model = Some(tok.to_string());
        return;
    }
    if tok.contains('$') {
        p.warnings
            .push(format!("unresolved variable in argument {tok}"));
    } else {
        p.warnings.push(format!("unexpected argument {tok}"));
    }
    p.unknown.push(tok.to_string());
}

/// `-O3`, `-tp8`, `-m/models/x`: a short option with its value glued on. Only a value-looking
/// rest is a glued value; `-mla` is an unknown short option, not `-m la`.
fn glued_short<'c>(cat: &'c Catalog, flag: &str) -> Option<(&'c OptionSpec, bool, String)> {
    for cut in (2..flag.len()).rev() {
        let rest_ok = flag
            .get(cut..)
            .and_then(|r| r.chars().next())
            .is_some_and(|c| c.is_ascii_digit() || matches!(c, '/' | '.' | '~' | '$'));
        if !rest_ok {
            continue;
        }
        if let Some(head) = flag.get(..cut)
            && let Some((o, neg)) = cat.lookup_exact(head)
            && !o.kind.takes_no_value()
        {
            return Some((o, neg, flag.get(cut..)?.to_string()));
        }
    }
    None
}

/// An option the catalog does not know, kept verbatim; a following bare word is taken as its
/// value.
fn unknown_option(
    p: &mut Parsed,
    args: &[String],
    i: &mut usize,
    tok: &str,
    flag: &str,
    has_inline: bool,
) {
    p.warnings.push(format!("unknown option {flag}"));
    p.unknown.push(tok.to_string());
    if !has_inline
        && let Some(next) = args.get(*i)
        && !looks_like_option(next)
    {
        p.unknown.push(next.clone());
        *i += 1;
    }
}

/// The words after an option while its value is read.
struct Cursor<'a> {
    args: &'a [String],
    /// The next word.
    i: usize,
    /// The option as written.
    tok: &'a str,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<&String> {
        self.args.get(self.i)
    }
}

/// The value of option `spec` and how it was written (`--tp 2`), taking the words it uses.
fn read_value(
    c: &mut Cursor<'_>,
    spec: &OptionSpec,
    negated: bool,
    dotted: bool,
    inline: Option<String>,
    units: Units,
    warnings: &mut Vec<String>,
) -> (Value, String) {
    let tok = c.tok;
    match &spec.kind {
        ValueKind::Bool => {
            let b = inline.as_deref().and_then(parse_bool).unwrap_or(true);
            (Value::Bool(b != negated), tok.to_string())
        }
        ValueKind::BoolOptional => {
            if let Some(v) = inline.as_deref().and_then(parse_bool) {
                return (Value::Bool(v != negated), tok.to_string());
            }
            match c.peek().and_then(|n| parse_bool(n).map(|v| (n.clone(), v))) {
                Some((n, v)) => {
                    c.i += 1;
                    (Value::Bool(v != negated), format!("{tok} {n}"))
                }
                None => (Value::Bool(!negated), tok.to_string()),
            }
        }
        ValueKind::OptionalStr => {
            if let Some(v) = inline {
                return (Value::String(v), tok.to_string());
            }
            match c.peek().filter(|n| !looks_like_option(n)).cloned() {
                Some(n) => {
                    c.i += 1;
                    (guess(&n), format!("{tok} {n}"))
                }
                None => (Value::Bool(true), tok.to_string()),
            }
        }
        ValueKind::List => list_value(c, inline, warnings),
        kind => {
            let mut written = tok.to_string();
            // A following word that is itself an option is not this option's value (`-c -ngl
            // 999`: argparse and clap refuse it, and taking it would lose the next option).
            let raw = inline.or_else(|| {
                let n = c.peek().filter(|n| !looks_like_option(n))?.clone();
                written = format!("{tok} {n}");
                c.i += 1;
                Some(n)
            });
            let value = match raw {
                None => {
                    warnings.push(format!("{tok} is missing its value"));
                    Value::Null
                }
                Some(raw) if dotted => lenient_json(&raw)
                    .or_else(|| parse_human_int(&raw, units).map(|n| Value::Number(n.into())))
                    .unwrap_or_else(|| guess(&raw)),
                Some(raw) => typed(&raw, kind, units),
            };
            (value, written)
        }
    }
}

/// A list option: its inline value, else every following word up to the next option.
fn list_value(
    c: &mut Cursor<'_>,
    inline: Option<String>,
    warnings: &mut Vec<String>,
) -> (Value, String) {
    let mut written = c.tok.to_string();
    let mut items = Vec::new();
    if let Some(v) = inline {
        items.push(guess(&v));
    } else {
        while let Some(n) = c.peek().filter(|n| !looks_like_option(n)).cloned() {
            written.push(' ');
            written.push_str(&n);
            items.push(Value::String(n));
            c.i += 1;
        }
    }
    if items.is_empty() {
        warnings.push(format!("{} is missing its value", c.tok));
    }
    (Value::Array(items), written)
}

/// Records an option: a dotted sub-key (`--compilation-config.level 3`) merges into its JSON
/// object; a repeated flag replaces the earlier one (the last one wins).
fn store(p: &mut Parsed, spec: &OptionSpec, sub: Option<String>, value: Value, written: String) {
    let entry = p.options.entry(spec.name.clone());
    match sub {
        Some(path) => {
            let opt = entry.or_default();
            if !opt.value.is_object() {
                opt.value = Value::Object(Default::default());
            }
            merge_dotted(&mut opt.value, &path, value);
            if opt.written.is_empty() {
                opt.written = written;
            } else {
                opt.written = format!("{} {}", opt.written, written);
            }
        }
        None => {
            p.options
                .insert(spec.name.clone(), LaunchOption { value, written });
        }
    }
}

/// Adds options from a YAML/JSON config object (`--config file.yaml`): keys are option names (dash
/// or underscore), nested objects are flattened to dotted names when the catalog knows those, else
/// kept as JSON. Options already set on the command line win.
pub(crate) fn merge_config(
    cat: &Catalog,
    config: &Value,
    file: &ConfigFile,
    options: &mut BTreeMap<String, LaunchOption>,
    warnings: &mut Vec<String>,
    prefix: &str,
) {
    let Value::Object(m) = config else { return };
    for (k, v) in m {
        let full = if prefix.is_empty() {
            k.clone()
        } else {
            format!("{prefix}.{k}")
        };
        if let Some(spec) = cat.lookup_name_loose(&full) {
            let value = match (v, &spec.kind) {
                (Value::String(s), kind) => typed(s, kind, cat.units),
                (other, _) => other.clone(),
            };
            let written = format!("{full}: {v} (in {})", file.path);
            match options.get(&spec.name) {
                // Given on the command line too: the command line wins, unless this engine
                // applies its file over the flags.
                Some(_) if !cat.config_file_wins => continue,
                Some(given) if given.value != value => {
                    warnings.push(format!(
                        "{} is overridden by {written}: the engine applies the file over its flags",
                        given.written
                    ));
                }
                _ => {}
            }
            options.insert(spec.name.clone(), LaunchOption { written, value });
        } else if v.is_object() {
            merge_config(cat, v, file, options, warnings, &full);
        }
    }
}

/// A config file a launch names, as the text gives it.
pub(crate) struct ConfigFile {
    /// The path as the option gives it.
    pub path: String,
}

/// Normalises speculative decoding from the parsed options.
pub(crate) fn speculative(
    cat: &Catalog,
    options: &BTreeMap<String, LaunchOption>,
) -> Option<Speculative> {
    let mut s = Speculative::default();
    let from_flags = speculative_flags(cat, options, &mut s);
    let from_json = speculative_json(cat, options, &mut s);
    if !(from_flags || from_json) {
        return None;
    }
    resolve_speculative(cat, &mut s);
    Some(s)
}

/// Sets the field of `s` that the catalog's speculative `key` names; false for a key that
/// names none.
fn set_speculative(s: &mut Speculative, key: &str, v: &Value) -> bool {
    let as_string = |v: &Value| match v {
        Value::String(x) => x.clone(),
        other => other.to_string(),
    };
    match key {
        "algorithm" => s.algorithm = Some(as_string(v)),
        "num_steps" => s.num_steps = Some(v.clone()),
        "eagle_topk" => s.eagle_topk = Some(v.clone()),
        "num_draft_tokens" => s.num_draft_tokens = Some(v.clone()),
        "num_speculative_tokens" => s.num_speculative_tokens = Some(v.clone()),
        "draft_model" => s.draft_model = Some(as_string(v)),
        _ => return false,
    }
    true
}

/// The speculative settings given as options of their own; whether any was.
fn speculative_flags(
    cat: &Catalog,
    options: &BTreeMap<String, LaunchOption>,
    s: &mut Speculative,
) -> bool {
    let mut any = false;
    for spec in cat.options() {
        if let Some(key) = &spec.speculative
            && let Some(o) = options.get(&spec.name)
            && !o.value.is_null()
        {
            any |= set_speculative(s, key, &o.value);
        }
    }
    any
}

/// The speculative settings given in the catalog's JSON option (`--speculative-config`);
/// whether any was.
fn speculative_json(
    cat: &Catalog,
    options: &BTreeMap<String, LaunchOption>,
    s: &mut Speculative,
) -> bool {
    let Some(o) = cat
        .speculative
        .json_option
        .as_ref()
        .and_then(|json_opt| options.get(json_opt))
    else {
        return false;
    };
    let obj = match &o.value {
        Value::String(t) => lenient_json(t).unwrap_or(Value::Null),
        v => v.clone(),
    };
    let Value::Object(m) = obj else {
        return false;
    };
    let mut any = false;
    for (k, key) in &cat.speculative.json_keys {
        if let Some(v) = m.get(k)
            && !v.is_null()
        {
            any |= set_speculative(s, key, v);
        }
    }
    any
}

/// The algorithm the engine runs (the catalog's name for the one given, or a draft model's),
/// and the settings it implies.
fn resolve_speculative(cat: &Catalog, s: &mut Speculative) {
    if let Some(a) = &s.algorithm {
        let up = a.to_ascii_uppercase();
        s.effective_algorithm = Some(
            cat.speculative
                .effective
                .get(&up)
                .cloned()
                .unwrap_or(up.clone()),
        );
        if cat.speculative.implied_for.iter().any(|x| x == &up) {
            implied_speculative(cat, s);
        }
    } else if s.draft_model.is_some() {
        s.effective_algorithm = Some("DRAFT_MODEL".into());
    }
}

/// The settings an algorithm that implies some (`implied_for`) takes when none is given, or
/// the draft tokens SGLang forces when topk is 1.
fn implied_speculative(cat: &Catalog, s: &mut Speculative) {
    let given = [
        ("num_steps", s.num_steps.is_some()),
        ("eagle_topk", s.eagle_topk.is_some()),
        ("num_draft_tokens", s.num_draft_tokens.is_some()),
    ];
    if !given.iter().any(|(_, g)| *g) {
        for (k, v) in &cat.speculative.implied {
            s.implied.insert(k.clone(), v.clone());
        }
    } else if s.eagle_topk.as_ref().and_then(Value::as_i64) == Some(1)
        && let Some(steps) = s.num_steps.as_ref().and_then(Value::as_i64)
        && s.num_draft_tokens.as_ref().and_then(Value::as_i64) != Some(steps + 1)
    {
        // SGLang forces draft tokens to steps + 1 when topk is 1.
        s.implied
            .insert("num_draft_tokens".into(), Value::Number((steps + 1).into()));
    }
}

/// A word as a shell would need it: quoted when it holds blanks, quotes or shell syntax.
fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '.' | '/' | ':' | ',' | '=' | '+' | '@' | '%')
        });
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// How an option with a value read elsewhere (an engine's start-up log) is written on a command
/// line: `--mem-fraction-static 0.85`, `--enable-prefix-caching`, `--served-model-name a b`,
/// `--speculative-config '{"method":"mtp"}'`.
pub(crate) fn written_like_cli(spec: &OptionSpec, value: &Value) -> String {
    let flag = format!("--{}", spec.name);
    match (value, &spec.kind) {
        (Value::Bool(true), ValueKind::Bool) => flag,
        (Value::Bool(false), ValueKind::Bool) => spec
            .negations
            .iter()
            .find(|n| n.starts_with("--no-"))
            .or_else(|| spec.negations.first())
            .cloned()
            .unwrap_or_else(|| format!("{flag}=false")),
        (Value::Array(items), _) if items.iter().all(|i| !i.is_object() && !i.is_array()) => {
            let words: Vec<String> = items
                .iter()
                .map(|i| match i {
                    Value::String(s) => shell_word(s),
                    other => other.to_string(),
                })
                .collect();
            if words.is_empty() {
                flag
            } else {
                format!("{flag} {}", words.join(" "))
            }
        }
        (Value::String(s), _) => format!("{flag} {}", shell_word(s)),
        (Value::Object(_) | Value::Array(_), _) => {
            format!("{flag} {}", shell_word(&value.to_string()))
        }
        (other, _) => format!("{flag} {other}"),
    }
}
