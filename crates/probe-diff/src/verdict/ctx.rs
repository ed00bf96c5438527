//! What every test of a cause reads ([`Ctx`]), and the verdict it builds ([`Finding`]):
//! shared by the throughput tests (`checks`) and the latency tests (`latency`).

use std::collections::BTreeMap;

use probe_model::{Assessment, CauseVerdict, Change, MetricComparison, MetricSummary, Symptom};

use super::config::{Test, VerdictConfig};
use super::load::{Capacities, Layers};

/// What every test may read.
pub(crate) struct Ctx<'a> {
    pub config: &'a VerdictConfig,
    pub metrics: &'a [MetricComparison],
    /// Mean throughput of each run, when both logged it.
    pub throughput: Option<(f64, f64)>,
    pub capacity: Capacities,
    /// Cause keys that also changed between earlier runs whose throughput held.
    pub held_across: &'a [String],
    /// At the same running-request count, the two runs' throughput (when the load differs).
    pub band_throughput: Option<(f64, f64)>,
    /// The layers each run had on the GPU, as its engine logged them at start-up.
    pub layers: Layers,
    /// The symptom the verdict is about, and every kind compared.
    pub symptom: Option<&'a Symptom>,
    pub symptoms: &'a [Symptom],
    /// The prefill token budget each run's engine resolved at start-up.
    pub prefill_budget: (Option<f64>, Option<f64>),
    /// The model's layers and hidden size, and the tensor-parallel size of each side.
    pub shape: super::load::Shape,
}

impl Ctx<'_> {
    pub(super) fn ratio(&self) -> Option<f64> {
        let (b, a) = self.throughput?;
        (b > 0.0).then(|| a / b)
    }

    /// The throughput ratio at the same running-request count where a band was compared, else
    /// the aggregate one: what a per-step cause (speculative settings) is held against.
    pub(super) fn same_load_ratio(&self) -> Option<f64> {
        match self.band_throughput {
            Some((b, a)) if b > 0.0 => Some(a / b),
            _ => self.ratio(),
        }
    }

    pub(super) fn held(&self, before: f64, after: f64) -> bool {
        before > 0.0 && (after / before - 1.0).abs() < self.config.held
    }
}

/// A verdict under construction.
pub(super) struct Finding {
    test: Test,
    numbers: BTreeMap<String, f64>,
}

impl Finding {
    pub(super) fn new(test: Test) -> Finding {
        Finding {
            test,
            numbers: BTreeMap::new(),
        }
    }

    pub(super) fn num(mut self, name: &str, value: Option<f64>) -> Finding {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            self.numbers
                .insert(name.to_string(), (value * 1000.0).round() / 1000.0);
        }
        self
    }

    pub(super) fn summary(self, prefix: &str, s: &MetricSummary) -> Finding {
        self.num(&format!("{prefix}_mean"), Some(s.mean))
            .num(&format!("{prefix}_max"), Some(s.max))
            .num(&format!("{prefix}_samples"), Some(s.count as f64))
    }

    pub(super) fn done(
        self,
        assessment: Assessment,
        reason: String,
        missing: &[String],
    ) -> CauseVerdict {
        CauseVerdict {
            assessment,
            test: self.test,
            reason,
            numbers: self.numbers,
            missing: if assessment == Assessment::Consistent {
                missing.to_vec()
            } else {
                Vec::new()
            },
        }
    }
}

/// The numbers before and after of a change.
pub(super) fn values(change: &Change) -> (Option<f64>, Option<f64>) {
    // An option unset on one side stood for its default there (`Change::unset_default`).
    crate::compare::effective_numbers(change)
}
