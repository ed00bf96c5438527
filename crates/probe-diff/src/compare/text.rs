//! Unified diffs of texts (unit files, drop-ins, environment files) through `similar`.

use std::time::Duration;

use probe_model::TextDiff;
use similar::Algorithm;

/// Lines of context around each change.
const CONTEXT_LINES: usize = 3;
/// Texts come from remote hosts: bound the time spent diffing them.
const DIFF_TIMEOUT: Duration = Duration::from_millis(500);

/// A unified diff of `before` and `after`, headed `a/<label>` / `b/<label>` (a leading `/` dropped); empty when the texts
/// are equal.
pub fn unified_diff(label: &str, before: &str, after: &str) -> TextDiff {
    if before == after {
        return TextDiff {
            label: label.to_string(),
            unified: String::new(),
        };
    }
    // `a/etc/...` rather than `a//etc/...` for absolute paths, as `git diff` writes them.
    let relative = label.trim_start_matches('/');
    let before_header = format!("a/{relative}");
    let after_header = format!("b/{relative}");
    let unified = similar::TextDiff::configure()
        .algorithm(Algorithm::Patience)
        .timeout(DIFF_TIMEOUT)
        .diff_lines(before, after)
        .unified_diff()
        .context_radius(CONTEXT_LINES)
        .header(&before_header, &after_header)
        .to_string();
    TextDiff {
        label: label.to_string(),
        unified,
    }
}
