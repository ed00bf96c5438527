//! Two launches' environments compared: variables set, changed and unset where both sides show
//! the whole environment, the rest named in a note; login-session variables summed up.

use std::collections::BTreeSet;

use probe_model::{Change, ChangeKey, ChangeKind, KeyArea, LaunchConfig, SourceKind};
use serde_json::Value;

use super::launch_sides::Collector;
use crate::impact::{Area, Subject};
use crate::label::launch_label;

/// Whether a launch's environment is the whole environment it ran with, so that a variable
/// missing from it was really unset: a process's environment, a container's (for the container),
/// a unit's (`Environment=` and `EnvironmentFile=`). A history line, a script or a log shows only
/// the variables written there: what the shell had exported is unknown.
pub(crate) fn env_is_complete(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::Process | SourceKind::Container | SourceKind::Unit
    )
}

fn source_word(kind: SourceKind) -> &'static str {
    match kind {
        SourceKind::Process => "the process",
        SourceKind::Unit => "the unit",
        SourceKind::History => "the history line",
        SourceKind::Log => "the start-up log line",
        SourceKind::Container => "the container",
        SourceKind::File => "the file",
        SourceKind::Text => "the text",
    }
}

/// Variables shown by name in a note about variables that could not be compared.
const ENV_NOTE_NAMES: usize = 6;

/// The rule of login-session variables (CA bundles, cloud SDK settings, proxies), which no
/// engine or library setting reads: summed up in one change.
const SESSION_RULE: &str = "env-session";

pub(super) fn compare_env(
    before_launch: &LaunchConfig,
    after_launch: &LaunchConfig,
    collector: &mut Collector,
    notes: &mut Vec<String>,
) {
    let before = &before_launch.env;
    let after = &after_launch.env;
    let before_complete = env_is_complete(before_launch.source.kind);
    let after_complete = env_is_complete(after_launch.source.kind);
    let names: BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    // Variables set on one side only, where the other side does not show its whole environment.
    let mut unknown_before: Vec<&str> = Vec::new();
    let mut unknown_after: Vec<&str> = Vec::new();
    let mut session: Vec<&str> = Vec::new();
    let option_vars = option_vars(before_launch, after_launch);
    for name in names {
        let before_value = before.get(name);
        let after_value = after.get(name);
        if before_value == after_value {
            continue;
        }
        let noise = || crate::impact::is_session_variable(name) || option_vars.contains(name);
        match (before_value, after_value) {
            (None, Some(_)) if !before_complete => {
                if !noise() {
                    unknown_before.push(name);
                }
                continue;
            }
            (Some(_), None) if !after_complete => {
                if !noise() {
                    unknown_after.push(name);
                }
                continue;
            }
            _ => {}
        }
        let kind = match (before_value, after_value) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            _ => ChangeKind::Changed,
        };
        let note = redaction_note(kind, before_value, after_value);
        let before_json = before_value.map(|v| Value::from(v.as_str()));
        let after_json = after_value.map(|v| Value::from(v.as_str()));
        let subject =
            Subject::new(Area::Env, name, kind).values(before_json.as_ref(), after_json.as_ref());
        // Login-session variables (CA bundles, cloud SDK settings) are summed up in one line.
        if crate::impact::assess(&subject).rule.as_deref() == Some(SESSION_RULE) {
            session.push(name.as_str());
            continue;
        }
        collector.push(
            &subject,
            ChangeKey::new(KeyArea::Env, name.as_str()).to_string(),
            None,
            None,
            note,
        );
    }
    if !session.is_empty() {
        collector.changes.push(session_change(&session));
    }
    notes.extend(not_compared_note(
        &unknown_before,
        after_launch,
        before_launch,
    ));
    notes.extend(not_compared_note(
        &unknown_after,
        before_launch,
        after_launch,
    ));
}

/// Variables the engines' catalogs read as options (Ollama's `OLLAMA_*`): compared as those
/// options, which a start-up line listing the environment in effect shows.
fn option_vars(before: &LaunchConfig, after: &LaunchConfig) -> BTreeSet<String> {
    [before, after]
        .iter()
        .flat_map(|l| {
            probe_launch::catalog::catalog(l.engine, l.engine_version.as_deref())
                .options()
                .filter_map(|o| o.env.clone())
        })
        .collect()
}

/// What a change of a variable must say when a side's value is redacted.
fn redaction_note(
    kind: ChangeKind,
    before: Option<&String>,
    after: Option<&String>,
) -> Option<String> {
    let redacted =
        |value: Option<&String>| value.is_some_and(|v| probe_model::text::is_redacted(v));
    match (redacted(before), redacted(after)) {
        (true, true) => Some(String::from("values are redacted; their hashes differ")),
        (true, false) | (false, true) if kind == ChangeKind::Changed => {
            Some(String::from("one side is redacted: compared as different"))
        }
        _ => None,
    }
}

/// The login-session variables that differ, summed up in one change.
fn session_change(session: &[&str]) -> Change {
    let shown = probe_model::text::join_capped(session, ENV_NOTE_NAMES, ", ");
    Change {
        category: probe_model::Category::Host,
        impact: probe_model::Impact::Low,
        kind: ChangeKind::Changed,
        key: ChangeKey::new(KeyArea::Env, "(login session)").to_string(),
        before: None,
        after: Some(Value::from(session.len())),
        explanation: format!(
            "{} login-session variables differ ({shown}); no engine or library setting reads them",
            session.len()
        ),
        ..Change::default()
    }
}

/// The note on variables set in `set_in` that `unknown_in` cannot say anything about (it shows
/// only the variables written on it).
fn not_compared_note(
    names: &[&str],
    set_in: &LaunchConfig,
    unknown_in: &LaunchConfig,
) -> Option<String> {
    if names.is_empty() {
        return None;
    }
    let shown = probe_model::text::join_capped(names, ENV_NOTE_NAMES, ", ");
    Some(format!(
        "env not compared: {shown} set in {} ({}); {} ({}) shows only the variables \
         written on it, so whether they were set there is unknown",
        source_word(set_in.source.kind),
        launch_label(set_in),
        source_word(unknown_in.source.kind),
        launch_label(unknown_in),
    ))
}
