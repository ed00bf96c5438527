//! The one ranking of changes: by impact (high first), then the rule file's category order,
//! then key; a value the engine resolved from other settings right under them, never above
//! (`crate::consequence`).

use probe_model::Change;

/// Ranks changes: the rule file's order, with each consequence under its causes.
pub fn rank(changes: &mut [Change]) {
    crate::impact::sort_by_rule(changes);
    crate::consequence::link(changes);
    crate::consequence::place(changes);
}
