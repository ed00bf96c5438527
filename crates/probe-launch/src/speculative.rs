//! Speculative decoding compared on the normalised [`Speculative`], across engines: SGLang
//! `NEXTN` runs as `EAGLE`, vLLM's model-specific `*_mtp` methods run as `mtp`, and an EAGLE
//! launch drafting with the model's own MTP heads is the same thing as vLLM `mtp`.

use probe_model::{LaunchConfig, Speculative};
use serde_json::Value;

/// One side's speculative settings, as compared.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SpecView {
    pub algorithm: Option<String>,
    /// `None` when the draft is the model's own MTP heads (no separate draft model).
    pub draft_model: Option<String>,
    /// Draft steps (SGLang `--speculative-num-steps`; vLLM `num_speculative_tokens`).
    pub num_steps: Option<Value>,
    pub eagle_topk: Option<Value>,
    pub num_draft_tokens: Option<Value>,
    /// Whether the draft model was named but equals the target model (MTP heads inside it).
    pub self_draft: bool,
}

/// The normalised view of a launch's speculative settings; `None` when it runs without.
pub fn view(launch: &LaunchConfig) -> Option<SpecView> {
    let speculative: &Speculative = launch.speculative.as_ref()?;
    let algorithm = effective_algorithm(speculative)?;
    let implied = |key: &str| speculative.implied.get(key).cloned();
    let num_steps = speculative
        .num_steps
        .clone()
        .or_else(|| implied("num_steps"))
        .or_else(|| speculative.num_speculative_tokens.clone())
        .or_else(|| implied("num_speculative_tokens"));
    let eagle_topk = speculative
        .eagle_topk
        .clone()
        .or_else(|| implied("eagle_topk"));
    let num_draft_tokens = speculative
        .num_draft_tokens
        .clone()
        .or_else(|| implied("num_draft_tokens"));
    let draft = speculative
        .draft_model
        .clone()
        .or_else(|| implied("draft_model").and_then(|value| value.as_str().map(str::to_string)));
    let target = launch.model.as_deref().map(trim_model);
    let (draft_model, self_draft) = match draft {
        Some(draft) if Some(trim_model(&draft)) == target => (None, true),
        Some(draft) => (Some(trim_model(&draft).to_string()), false),
        None => (None, false),
    };
    Some(SpecView {
        algorithm: Some(algorithm),
        draft_model,
        num_steps,
        eagle_topk,
        num_draft_tokens,
        self_draft,
    })
}

/// What actually runs, upper case: `effective_algorithm` when known, else the written method with
/// the engines' own aliases resolved.
pub fn effective_algorithm(speculative: &Speculative) -> Option<String> {
    let written = speculative
        .effective_algorithm
        .as_deref()
        .or(speculative.algorithm.as_deref())?
        .trim();
    if written.is_empty() || written.eq_ignore_ascii_case("none") {
        return None;
    }
    let upper = written.to_ascii_uppercase();
    let resolved = match upper.as_str() {
        "NEXTN" => String::from("EAGLE"),
        other if other.ends_with("_MTP") => String::from("MTP"),
        other => other.to_string(),
    };
    Some(resolved)
}

fn trim_model(model: &str) -> &str {
    model.trim().trim_end_matches('/')
}

/// Whether two algorithm names are the same thing: equal, or EAGLE drafting with the model's own
/// MTP heads against MTP.
pub fn same_algorithm(left: &SpecView, right: &SpecView) -> bool {
    match (left.algorithm.as_deref(), right.algorithm.as_deref()) {
        (Some(a), Some(b)) if a == b => true,
        (Some("EAGLE"), Some("MTP")) => left.draft_model.is_none(),
        (Some("MTP"), Some("EAGLE")) => right.draft_model.is_none(),
        _ => false,
    }
}

/// A one-line description (`EAGLE steps 3 topk 1 draft 4`).
pub fn describe(view: &SpecView) -> String {
    let mut text = view.algorithm.clone().unwrap_or_default();
    let mut push = |label: &str, value: &Option<Value>| {
        if let Some(value) = value {
            text.push_str(&format!(" {label} {}", crate::catalog::display(value)));
        }
    };
    push("steps", &view.num_steps);
    push("topk", &view.eagle_topk);
    push("draft-tokens", &view.num_draft_tokens);
    if let Some(draft) = &view.draft_model {
        text.push_str(&format!(" draft {draft}"));
    }
    text
}
