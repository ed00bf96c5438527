//! One `[[server-rule]]` of `configs/impact.toml` as read (the rule set in [`crate::impact`]
//! holds them; [`crate::server`] applies them). Kept apart from the findings so that the rule set
//! and the code that reads it do not depend on each other.

use serde::Deserialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Check {
    SpeculativeWithoutDrafts,
    Value,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Severity {
    High,
    Medium,
    Low,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::High => "high",
            Severity::Medium => "medium",
            Severity::Low => "low",
        }
    }
}

/// One `[[server-rule]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ServerRule {
    pub id: String,
    pub check: Check,
    #[serde(default)]
    pub metric: Option<String>,
    #[serde(default)]
    pub above: Option<f64>,
    #[serde(default)]
    pub below: Option<f64>,
    /// Only where speculative decoding is set.
    #[serde(default)]
    pub speculative: bool,
    #[serde(default)]
    pub min_tokens: Option<f64>,
    pub severity: Severity,
    pub message: String,
}
