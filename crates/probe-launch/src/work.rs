//! What a reading cost: the budget every reader of one text shares ([`Budget`]), sized from the
//! input, and the [`Work`] reported back.

use std::collections::BTreeMap;
use std::rc::Rc;

use probe_model::LaunchConfig;

pub(crate) use super::shell::words;
use super::shell::{Budget, MAX_TOKENS, weight};

/// What reading one text cost, in units of bytes walked, expanded and copied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Work {
    pub spent: usize,
    /// The most a text of this size may cost.
    pub limit: usize,
    /// The limit stopped the reading before the end of the text.
    pub cut: bool,
}

impl Work {
    pub(crate) fn of(budget: &Budget) -> Work {
        Work {
            spent: budget.spent(),
            limit: budget.limit(),
            cut: budget.cut_anywhere(),
        }
    }
}

/// The budget of a reading of `bytes` bytes of text with variables `env` known from outside.
pub(crate) fn budget_of(bytes: usize, env: &BTreeMap<String, String>) -> Rc<Budget> {
    Budget::for_input(bytes.saturating_add(weight(env)))
}

/// Launches found before the budget ran out say that the rest of the text was not read.
pub(crate) fn mark_cut(out: &mut [LaunchConfig], budget: &Budget) {
    if !budget.cut_anywhere() {
        return;
    }
    let note = format!(
        "text read only in part: it asks for more than {} units of work (bytes walked, expanded and copied) allowed for its size, or holds more than {MAX_TOKENS} shell tokens; eval, nested shells, self-doubling variables or a very long script",
        budget.limit()
    );
    for l in out {
        if !l.warnings.contains(&note) {
            l.warnings.push(note.clone());
        }
    }
}
