//! A catalog narrowed to one version: the options, spellings, defaults and kinds that version
//! has, from the file's version bounds.

use std::collections::HashMap;

use probe_model::Engine;

use super::raw::{RawCatalog, RawEntry, RawOption, RawSpeculative, parse_kind, toml_to_json};
use super::spec::{Catalog, EntryPoint, OptionSpec, SpeculativeRules, VersionVariant};
use super::versions::{in_range, version_cmp, version_key};

pub(super) fn build(engine: Engine, raw: RawCatalog, version: Option<&str>) -> Catalog {
    let bounds = version_bounds(&raw.option);
    let mut options: Vec<OptionSpec> = Vec::new();
    let mut by_name = HashMap::new();
    let mut old: Vec<Vec<String>> = Vec::new();
    for o in raw.option {
        let Some((spec, old_spellings)) = option_spec(o, version) else {
            continue;
        };
        by_name.entry(spec.name.clone()).or_insert(options.len());
        old.push(old_spellings);
        options.push(spec);
    }
    let by_spelling = spellings(&options, &old, version);
    Catalog {
        engine,
        version: version.map(str::to_string),
        known_versions: raw.versions,
        units: raw.units,
        underscore_to_dash: raw.underscore_to_dash,
        prefix_match: raw.prefix_match,
        model_options: raw.model_options,
        bench: raw.bench,
        config_options: raw.config_options,
        config_file_wins: raw.config_file_wins,
        startup_args: raw.startup_args,
        python: raw.python,
        environment: raw.environment,
        entry_points: raw.entry.into_iter().map(entry_point).collect(),
        speculative: speculative_rules(raw.speculative),
        options,
        bounds,
        by_name,
        by_spelling,
    }
}

/// Every version at which some spelling, default or kind changes, in order.
pub(super) fn version_bounds(raw: &[RawOption]) -> Vec<String> {
    let mut bounds: Vec<String> = Vec::new();
    for o in raw {
        let variant_bounds = o
            .by_version
            .iter()
            .flat_map(|v| [v.since.as_ref(), v.until.as_ref()]);
        let rename_bounds = o
            .renamed_from
            .iter()
            .flat_map(|r| [r.since.as_ref(), r.dropped.as_ref()]);
        for b in [o.since.as_ref(), o.until.as_ref()]
            .into_iter()
            .chain(variant_bounds)
            .chain(rename_bounds)
            .flatten()
        {
            bounds.push(b.clone());
        }
    }
    bounds.sort_by_cached_key(|b| version_key(b));
    bounds.dedup_by_key(|b| version_key(b));
    bounds
}

/// One option as `version` has it (`None` when that version lacks it), with the old spellings
/// of a renamed option that version still understands.
pub(super) fn option_spec(
    mut o: RawOption,
    version: Option<&str>,
) -> Option<(OptionSpec, Vec<String>)> {
    if o.name.is_empty() || !in_range(version, o.since.as_deref(), o.until.as_deref()) {
        return None;
    }
    let by_version: Vec<VersionVariant> = std::mem::take(&mut o.by_version)
        .into_iter()
        .map(|v| v.into_variant(o.kind, &o.choices))
        .collect();
    let variant = version.and_then(|v| by_version.iter().find(|x| x.covers(v)));
    if variant.is_some_and(|x| x.absent) {
        return None;
    }
    let mut renamed_from = Vec::new();
    let mut old_spellings = Vec::new();
    for r in &o.renamed_from {
        renamed_from.push((r.old.clone(), r.since.clone()));
        // The old spelling is still understood unless the version is known to have dropped it.
        let dropped = match (version, r.dropped.as_deref()) {
            (Some(v), Some(d)) => version_cmp(v, d).is_ge(),
            _ => false,
        };
        if !dropped {
            old_spellings.push(format!("--{}", r.old.trim_start_matches('-')));
        }
    }
    let default = match (&o.default, o.no_default) {
        (Some(d), _) => Some(toml_to_json(d)),
        (None, true) => Some(serde_json::Value::Null),
        (None, false) => None,
    };
    let mut spec = OptionSpec {
        name: o.name,
        aliases: o.aliases,
        negations: o.negations,
        kind: parse_kind(o.kind, o.choices),
        newest_default: default.clone(),
        default,
        common: o.common,
        category: o.category,
        renamed_from,
        env: o.env,
        env_part: o.env_part,
        speculative: o.speculative,
        startup_limit: o.startup_limit,
        value_map: o
            .value_map
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect(),
        since: o.since,
        until: o.until,
        deprecated: o.deprecated,
        by_version: Vec::new(),
    };
    if let Some(x) = variant {
        apply_variant(&mut spec, x);
    }
    spec.by_version = by_version;
    Some((spec, old_spellings))
}

/// What a version's `by_version` entry changes in an option.
pub(super) fn apply_variant(spec: &mut OptionSpec, x: &VersionVariant) {
    if let Some(kind) = &x.kind {
        spec.kind = kind.clone();
    }
    if let Some(default) = &x.default {
        spec.default = default.clone();
    }
    if let Some(aliases) = &x.aliases {
        spec.aliases = aliases.clone();
    }
    if let Some(negations) = &x.negations {
        spec.negations = negations.clone();
    }
    if let Some(deprecated) = x.deprecated {
        spec.deprecated = deprecated;
    }
}

/// Every spelling to (option index, negated). Canonical names first, then aliases and
/// negations, then old spellings of renamed options: an option's own name always wins over
/// another option's alias. Without a version, the spellings of options the newest release still
/// has come before those of removed options (vLLM 0.33 `--disable-log-requests` negates
/// `--enable-log-requests`; before 0.17 it was an option of its own).
pub(super) fn spellings(
    options: &[OptionSpec],
    old: &[Vec<String>],
    version: Option<&str>,
) -> HashMap<String, (usize, bool)> {
    let mut by_spelling: HashMap<String, (usize, bool)> = HashMap::new();
    let current = |spec: &OptionSpec| version.is_some() || spec.until.is_none();
    type Tier<'o> = Vec<(usize, &'o OptionSpec)>;
    let (now, removed): (Tier<'_>, Tier<'_>) =
        options.iter().enumerate().partition(|(_, s)| current(s));
    for tier in [now, removed] {
        for (idx, spec) in &tier {
            by_spelling
                .entry(format!("--{}", spec.name))
                .or_insert((*idx, false));
        }
        for (idx, spec) in &tier {
            for a in &spec.aliases {
                by_spelling.entry(a.clone()).or_insert((*idx, false));
            }
            for n in &spec.negations {
                by_spelling.entry(n.clone()).or_insert((*idx, true));
            }
        }
    }
    for (idx, olds) in old.iter().enumerate() {
        for a in olds {
            by_spelling.entry(a.clone()).or_insert((idx, false));
        }
    }
    by_spelling
}

pub(super) fn entry_point(e: RawEntry) -> EntryPoint {
    EntryPoint {
        kind: e.kind,
        matches: e.matches,
        subcommand: e.subcommand,
        positional_model: e.positional_model,
        image_entrypoint: e.image_entrypoint,
        engine: e.engine,
    }
}

pub(super) fn speculative_rules(raw: RawSpeculative) -> SpeculativeRules {
    SpeculativeRules {
        json_option: raw.json_option,
        json_keys: raw.json_keys,
        effective: raw.effective,
        implied: raw
            .implied
            .iter()
            .map(|(k, v)| (k.clone(), toml_to_json(v)))
            .collect(),
        implied_for: raw.implied_for,
    }
}
