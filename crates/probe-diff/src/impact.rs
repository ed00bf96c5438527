//! Impact rules: what a change likely does to throughput and latency, and the ranking that puts
//! the likeliest cause of "why is it slower" first.
//!
//! The rules are data in `configs/impact.toml`, embedded at build time. For one change the rules
//! are tried in file order and the first that matches decides its category, impact and
//! explanation (see the comments in that file for the keys).

use std::sync::LazyLock;

use probe_model::{Category, Change, ChangeKind, Impact};
use serde::Deserialize;
use serde_json::Value;

/// The embedded rule file.
pub const RULES_TOML: &str = include_str!("../../../configs/impact.toml");

/// What a change is about, as the rules name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Area {
    Option,
    Speculative,
    Engine,
    EngineVersion,
    Model,
    Env,
    Launch,
    Package,
    Gpu,
    ModelConfig,
    Metric,
    Host,
    Unit,
    /// A limit the engine resolved at start-up (`max_total_num_tokens`, `kv_cache_tokens`).
    Limit,
    /// Hardware findings (`crate::hardware`): names are finding ids.
    Hardware,
    /// What a running server said about itself, two snapshots compared: its config keys as
    /// it names them, `lifetime:NAME` for its lifetime values.
    Server,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Direction {
    Increase,
    Decrease,
}

/// One rule of `configs/impact.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Rule {
    pub id: String,
    pub area: Area,
    #[serde(default)]
    pub names: Vec<String>,
    #[serde(default)]
    pub commons: Vec<String>,
    #[serde(default)]
    pub option_categories: Vec<String>,
    #[serde(default)]
    pub kinds: Vec<ChangeKind>,
    pub direction: Option<Direction>,
    pub min_relative_change: Option<f64>,
    #[serde(default)]
    pub after_values: Vec<String>,
    pub category: Option<Category>,
    pub impact: Impact,
    #[serde(default)]
    pub volatile: bool,
    #[serde(default)]
    pub explanation: String,
}

/// The whole rule file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct RuleSet {
    #[serde(default)]
    pub category_order: Vec<Category>,
    #[serde(default)]
    pub rule: Vec<Rule>,
    /// Rules on a server's own readings (`crate::server`).
    #[serde(default)]
    pub server_rule: Vec<crate::server_rule::ServerRule>,
    /// Serving packages a run lists and compares (globs).
    #[serde(default)]
    pub serving_packages: Vec<String>,
    /// How causes link to symptoms in numbers.
    #[serde(default)]
    pub mechanism: Vec<Mechanism>,
    /// Values the engine resolves from other settings (`crate::consequence`).
    #[serde(default)]
    pub consequence: Vec<Consequence>,
}

/// One `[[consequence]]` of `configs/impact.toml`: values the engine resolves from other
/// settings (`crate::consequence`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Consequence {
    /// Keys of the resolved values (globs): `limit:kv_cache_tokens`.
    pub values: Vec<String>,
    /// Keys of the settings they are computed from (globs; `_` and `-` match each other).
    pub derived_from: Vec<String>,
    /// What they are derived from, said for a reader: `the GPU memory left after ...`.
    pub from: String,
    /// Why they move when those change.
    pub why: String,
}

/// What a cause caps its symptom at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bound {
    /// At most the cause's new value plus one.
    AfterPlusOne,
    /// At most the cause's new value.
    After,
}

/// One `[[mechanism]]` of `configs/impact.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Mechanism {
    #[expect(
        dead_code,
        reason = "names the mechanism in the file; the code keys it by `cause`"
    )]
    pub id: String,
    /// The key of the cause change (`speculative.num_steps`, `limit:max_running_requests`).
    pub cause: String,
    /// The metric it caps.
    pub symptom: String,
    pub bound: Bound,
    /// Only for launches whose EAGLE topk is this.
    pub when_topk: Option<i64>,
    pub explanation: String,
}

impl Mechanism {
    /// The cap on the symptom for a cause that moved to `after`.
    pub fn cap(&self, after: f64) -> f64 {
        match self.bound {
            Bound::AfterPlusOne => after + 1.0,
            Bound::After => after,
        }
    }
}

/// Whether `name` is one of the serving packages of the rules.
pub fn is_serving_package(name: &str) -> bool {
    rules()
        .serving_packages
        .iter()
        .any(|pattern| glob_match(pattern, name))
}

impl RuleSet {
    /// Parses a rule file (the embedded one, or another for tests and `probe lint`).
    pub fn parse(text: &str) -> Result<RuleSet, toml::de::Error> {
        toml::from_str(text)
    }

    /// Position of a category in the ranking order; categories not listed go last.
    pub fn category_rank(&self, category: Category) -> usize {
        self.category_order
            .iter()
            .position(|listed| *listed == category)
            .unwrap_or(self.category_order.len())
    }

    /// The first rule that matches, with the resulting assessment.
    pub fn assess(&self, subject: &Subject<'_>) -> Assessment {
        for rule in &self.rule {
            if rule_matches(rule, subject) {
                return Assessment {
                    category: rule.category.unwrap_or_default(),
                    impact: rule.impact,
                    explanation: fill_template(&rule.explanation, subject),
                    volatile: rule.volatile,
                    rule: Some(rule.id.clone()),
                };
            }
        }
        Assessment {
            category: Category::Other,
            impact: Impact::Low,
            explanation: String::from("changed; effect on throughput not catalogued"),
            volatile: false,
            rule: None,
        }
    }
}

/// The embedded rules, parsed once ([`probe_launch::embedded::load`]: a broken file fails loudly
/// instead of silently losing every rule).
pub fn rules() -> &'static RuleSet {
    static RULES: LazyLock<RuleSet> = LazyLock::new(|| {
        probe_launch::embedded::load("configs/impact.toml", RuleSet::parse(RULES_TOML))
    });
    &RULES
}

/// A change as the rules see it.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub area: Area,
    /// Option canonical name, package name, GPU field, metric name, env variable, ...
    pub name: &'a str,
    /// Cross-engine key of an option.
    pub common: Option<&'a str>,
    /// The engine catalog's category of an option.
    pub option_category: Option<&'a str>,
    pub kind: ChangeKind,
    pub before: Option<&'a Value>,
    pub after: Option<&'a Value>,
}

impl<'a> Subject<'a> {
    pub fn new(area: Area, name: &'a str, kind: ChangeKind) -> Subject<'a> {
        Subject {
            area,
            name,
            common: None,
            option_category: None,
            kind,
            before: None,
            after: None,
        }
    }

    pub fn values(mut self, before: Option<&'a Value>, after: Option<&'a Value>) -> Subject<'a> {
        self.before = before;
        self.after = after;
        self
    }
}

/// What the rules say about one change.
#[derive(Debug, Clone, PartialEq)]
pub struct Assessment {
    pub category: Category,
    pub impact: Impact,
    pub explanation: String,
    /// Expected churn: listed apart from the changes.
    pub volatile: bool,
    /// Id of the rule that decided, if any.
    pub rule: Option<String>,
}

/// Assesses one change with the embedded rules.
pub fn assess(subject: &Subject<'_>) -> Assessment {
    rules().assess(subject)
}

/// Whether an environment variable is session noise that every login or service has (`SSH_*`,
/// `SHLVL`, `INVOCATION_ID`, ...): the rules' volatile, no-impact `env` names
/// (`configs/impact.toml`, `env-noise`), the one list of them.
pub fn is_session_variable(name: &str) -> bool {
    let assessment = assess(&Subject::new(Area::Env, name, ChangeKind::Changed));
    assessment.volatile && assessment.impact == Impact::None
}

/// Sorts changes by impact (high first), then category order from the rule file, then key
/// (`crate::ranking::rank` also places consequences under their causes).
pub(crate) fn sort_by_rule(changes: &mut [Change]) {
    let rule_set = rules();
    changes.sort_by(|left, right| {
        left.impact
            .cmp(&right.impact)
            .then_with(|| {
                rule_set
                    .category_rank(left.category)
                    .cmp(&rule_set.category_rank(right.category))
            })
            .then_with(|| left.key.cmp(&right.key))
    });
}

/// Builds a [`Change`] for a subject with the embedded rules; `None` when the rules say it is not
/// a change at all (impact `none`, not volatile). The second value says whether it is volatile.
pub(crate) fn change_for(subject: &Subject<'_>, key: String) -> Option<(Change, bool)> {
    let assessment = assess(subject);
    if assessment.impact == Impact::None && !assessment.volatile {
        return None;
    }
    let change = Change {
        category: assessment.category,
        impact: assessment.impact,
        kind: subject.kind,
        key,
        before: subject.before.cloned(),
        after: subject.after.cloned(),
        before_written: None,
        after_written: None,
        explanation: assessment.explanation,
        note: None,
        mechanism: None,
        verdict: None,
        unset_default: None,
        startup_limit: None,
        consequence_of: Vec::new(),
    };
    Some((change, assessment.volatile))
}

fn rule_matches(rule: &Rule, subject: &Subject<'_>) -> bool {
    if rule.area != subject.area {
        return false;
    }
    let has_selector =
        !rule.names.is_empty() || !rule.commons.is_empty() || !rule.option_categories.is_empty();
    if has_selector {
        let by_name = rule
            .names
            .iter()
            .any(|pattern| glob_match(pattern, subject.name));
        let by_common = subject
            .common
            .is_some_and(|common| rule.commons.iter().any(|listed| listed == common));
        let by_category = subject.option_category.is_some_and(|category| {
            rule.option_categories
                .iter()
                .any(|listed| listed.eq_ignore_ascii_case(category))
        });
        if !(by_name || by_common || by_category) {
            return false;
        }
    }
    if !rule.kinds.is_empty() && !rule.kinds.contains(&subject.kind) {
        return false;
    }
    if !rule.after_values.is_empty() {
        let Some(after) = subject.after.map(value_text) else {
            return false;
        };
        if !rule
            .after_values
            .iter()
            .any(|listed| listed.eq_ignore_ascii_case(&after))
        {
            return false;
        }
    }
    if let Some(direction) = rule.direction {
        match compare_direction(subject.before, subject.after) {
            Some(std::cmp::Ordering::Less) if direction == Direction::Decrease => {}
            Some(std::cmp::Ordering::Greater) if direction == Direction::Increase => {}
            _ => return false,
        }
    }
    if let Some(threshold) = rule.min_relative_change {
        match relative_change(subject.before, subject.after) {
            Some(change) if change.abs() >= threshold => {}
            _ => return false,
        }
    }
    true
}

/// Case-sensitive glob with `*` only.
pub(crate) fn glob_match(pattern: &str, name: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return pattern == name;
    }
    let mut rest = name;
    for (index, part) in parts.iter().enumerate() {
        if index == 0 {
            match rest.strip_prefix(part) {
                Some(after) => rest = after,
                None => return false,
            }
        } else if index == parts.len() - 1 {
            return rest.len() >= part.len() && rest.ends_with(part);
        } else if let Some(position) = rest.find(part) {
            rest = rest.get(position + part.len()..).unwrap_or("");
        } else {
            return false;
        }
    }
    true
}

/// A value as plain text: strings without quotes.
pub(crate) fn value_text(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::from("none"),
        other => other.to_string(),
    }
}

pub fn value_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(number) => number.as_f64(),
        Value::String(text) => text.trim().parse::<f64>().ok(),
        Value::Bool(flag) => Some(if *flag { 1.0 } else { 0.0 }),
        _ => None,
    }
}

/// Order of the value after relative to the value before (`Less`: it decreased), numerically, or
/// as versions when both are texts.
fn compare_direction(before: Option<&Value>, after: Option<&Value>) -> Option<std::cmp::Ordering> {
    let (before, after) = (before?, after?);
    if let (Some(left), Some(right)) = (value_number(before), value_number(after)) {
        return right.partial_cmp(&left);
    }
    match (before, after) {
        (Value::String(left), Value::String(right)) => Some(compare_versions(right, left)),
        _ => None,
    }
}

/// `after / before - 1` for numeric values.
pub(crate) fn relative_change(before: Option<&Value>, after: Option<&Value>) -> Option<f64> {
    let before = value_number(before?)?;
    let after = value_number(after?)?;
    if before == 0.0 || !before.is_finite() || !after.is_finite() {
        return None;
    }
    Some(after / before - 1.0)
}

/// Orders versions in PEP 440 order ([`probe_launch::version`]): `2.9.1+cu128` = `2.9.1`, a
/// pre-release before its release.
pub fn compare_versions(left: &str, right: &str) -> std::cmp::Ordering {
    probe_launch::version::compare(left, right)
}

fn fill_template(template: &str, subject: &Subject<'_>) -> String {
    if !template.contains('{') {
        return template.to_string();
    }
    let before = subject
        .before
        .map(short_value)
        .unwrap_or_else(|| String::from("unset"));
    let after = subject
        .after
        .map(short_value)
        .unwrap_or_else(|| String::from("unset"));
    let percent = relative_change(subject.before, subject.after)
        .map(|change| format!("{:+.0}", change * 100.0))
        .unwrap_or_else(|| String::from("?"));
    let absolute_percent = relative_change(subject.before, subject.after)
        .map(|change| format!("{:.0}", change.abs() * 100.0))
        .unwrap_or_else(|| String::from("?"));
    template
        .replace("{abs_pct}", &absolute_percent)
        .replace("{before}", &before)
        .replace("{after}", &after)
        .replace("{name}", subject.name)
        .replace("{pct}", &percent)
}

/// A value for an explanation: numbers with at most two decimals, long texts cut.
fn short_value(value: &Value) -> String {
    if let Value::Number(number) = value
        && let Some(float) = number.as_f64()
        && number.as_i64().is_none()
        && number.as_u64().is_none()
    {
        let text = format!("{float:.2}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        return text.to_string();
    }
    let text = value_text(value);
    if text.chars().count() > 60 {
        let cut: String = text.chars().take(57).collect();
        return format!("{cut}...");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_rules_parse_and_have_unique_ids() {
        let rule_set = RuleSet::parse(RULES_TOML).expect("configs/impact.toml parses");
        assert!(rule_set.rule.len() > 40);
        let mut ids: Vec<&str> = rule_set.rule.iter().map(|rule| rule.id.as_str()).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "rule ids are unique");
        assert_eq!(rule_set.category_order.len(), 14);
        for rule in &rule_set.rule {
            if rule.impact != Impact::None {
                assert!(
                    !rule.explanation.is_empty(),
                    "rule {} explains itself",
                    rule.id
                );
            }
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("cuda-graph-*", "cuda-graph-max-bs"));
        assert!(!glob_match("cuda-graph-*", "disable-cuda-graph"));
        assert!(glob_match(
            "*mtp_num_hidden_layers",
            "text_config.mtp_num_hidden_layers"
        ));
        assert!(glob_match("*_PORT_*_TCP*", "X_PORT_80_TCP_ADDR"));
        assert!(glob_match("a*b*c", "aXbYc"));
        assert!(!glob_match("a*b*c", "aXbY"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("ab*ba", "aba"));
    }

    #[test]
    fn versions_order() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("0.5.9", "0.5.10"), Less);
        assert_eq!(compare_versions("2.9.1+cu128", "2.9.1+cu126"), Equal);
        assert_eq!(compare_versions("0.11.0", "0.11.0rc1"), Greater);
        assert_eq!(compare_versions("1.0", "1.0.1"), Less);
        assert_eq!(compare_versions("v0.33.0", "0.8.5"), Greater);
    }

    #[test]
    fn direction_and_threshold_conditions() {
        let before = Value::from(2000.0);
        let after = Value::from(1200.0);
        let subject = Subject::new(Area::Metric, "gen_throughput", ChangeKind::Changed)
            .values(Some(&before), Some(&after));
        let assessment = assess(&subject);
        assert_eq!(assessment.impact, Impact::High);
        assert_eq!(assessment.category, Category::Metrics);
        assert!(
            assessment
                .explanation
                .contains("fell 40% (mean 2000 -> 1200)"),
            "{}",
            assessment.explanation
        );

        let small = Value::from(1950.0);
        let subject = Subject::new(Area::Metric, "gen_throughput", ChangeKind::Changed)
            .values(Some(&before), Some(&small));
        assert_eq!(assess(&subject).impact, Impact::None);
    }

    #[test]
    fn after_values_condition() {
        let on = Value::Bool(true);
        let subject =
            Subject::new(Area::Option, "enforce-eager", ChangeKind::Added).values(None, Some(&on));
        assert_eq!(assess(&subject).rule.as_deref(), Some("cuda-graph-off"));
        let off = Value::Bool(false);
        let subject = Subject::new(Area::Option, "enforce-eager", ChangeKind::Changed)
            .values(Some(&on), Some(&off));
        assert_eq!(assess(&subject).rule.as_deref(), Some("cuda-graph"));
    }
}
