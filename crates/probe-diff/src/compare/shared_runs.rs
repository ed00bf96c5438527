//! The latest runs of the servers two snapshots share, compared on what was in effect while each
//! ran ([`super::compare_runs`]): engine version, serving packages, driver and CUDA, the model's
//! revision and config, and the limits the engine resolved at start-up. One host over time or
//! two hosts alike; what the snapshot-level comparison already says is not said twice.

use probe_model::{Change, ChangeKey, KeyArea, LaunchConfig, Run, Snapshot};

use super::in_effect::compare_runs;
use crate::analysis::Analysis;
use probe_launch::same_server;

/// Two snapshots, each with what it was read as (its launches, timeline and runs).
pub(super) struct Sides<'a> {
    pub before: (&'a Snapshot, &'a Analysis),
    pub after: (&'a Snapshot, &'a Analysis),
}

/// The run changes of every matched server (`matched`: the servers both snapshots have, with
/// the key prefix their changes carry), keyed like the launch changes, leaving out echoes of
/// `existing`.
pub(super) fn run_changes(
    sides: Sides<'_>,
    matched: &[(&LaunchConfig, &LaunchConfig, String)],
    existing: &[Change],
) -> Vec<Change> {
    let (before, before_runs) = sides.before;
    let (after, after_runs) = sides.after;
    let mut out = Vec::new();
    for (b, a, prefix) in matched {
        let (b, a) = (*b, *a);
        let (Some(before_run), Some(after_run)) = (
            latest_run(before, before_runs, b),
            latest_run(after, after_runs, a),
        ) else {
            continue;
        };
        for mut change in compare_runs(before_run, after_run) {
            change.key = format!("{prefix}{}", change.key);
            if !echoes(&change, existing) {
                out.push(change);
            }
        }
    }
    out
}

/// The server's run that runs now, else its last one.
fn latest_run<'a>(
    snapshot: &Snapshot,
    Analysis { timeline, runs, .. }: &'a Analysis,
    server: &LaunchConfig,
) -> Option<&'a Run> {
    let of_server: Vec<&Run> = runs
        .iter()
        .filter(|run| {
            timeline
                .launches
                .get(run.launch_index)
                .is_some_and(|l| l == server || same_server(snapshot, l, server))
        })
        .collect();
    of_server
        .iter()
        .rev()
        .find(|run| run.running)
        .or_else(|| of_server.last())
        .copied()
}

/// Whether the snapshot-level comparison already holds this change: the same key, or the same
/// subject (`package:torch` for `package:torch@/venv/bin/python`) with the same values, or a
/// model config field when the snapshots' model configs already differ.
fn echoes(change: &Change, existing: &[Change]) -> bool {
    // The key without its server and its package's interpreter.
    let subject = |key: &str| -> ChangeKey {
        let mut key = ChangeKey::parse(key);
        key.server = None;
        if key.area == KeyArea::Package {
            key.of = None;
        }
        key
    };
    let mine = subject(&change.key);
    // The run's model summary restates config fields the snapshots compare one by one.
    let model_field = mine.area == KeyArea::RunModelConfig;
    let model_config =
        |key: &ChangeKey| matches!(key.area, KeyArea::ModelConfig | KeyArea::RunModelConfig);
    existing.iter().any(|other| {
        (model_field && model_config(&subject(&other.key)))
            || other.key == change.key
            || (subject(&other.key) == mine
                && other.before == change.before
                && other.after == change.after)
    })
}
