//! How a launch is named in sentences and tables.

use probe_model::LaunchConfig;

/// A short name for a launch: where it was found.
pub(crate) fn launch_label(launch: &LaunchConfig) -> String {
    let location = launch.source.location.trim();
    if location.is_empty() {
        let kind = launch.source.kind.as_str();
        format!("{} ({kind})", launch.engine)
    } else {
        format!("{} ({location})", launch.engine)
    }
}
