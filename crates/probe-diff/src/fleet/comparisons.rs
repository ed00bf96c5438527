//! The comparisons the outliers stand on: one configuration against another, as `probe diff`
//! compares two snapshots, keeping the configuration changes; the medoid; the holders' pairs.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use probe_model::{Change, Impact, KeyArea, Snapshot};

use crate::analysis::Analysis;
use crate::compare::CompareOptions;
use crate::conclusion::compare_analyses;

use super::configurations::Configurations;
use super::parallel::in_parallel;
use super::views::Views;

/// Groups larger than this pick their reference among the first members only (the medoid costs
/// one comparison per pair).
pub(super) const MEDOID_CANDIDATES: usize = 12;

/// A snapshot with its analysis: one side of a comparison.
#[derive(Clone, Copy)]
pub(super) struct Side<'a> {
    pub(super) snapshot: &'a Snapshot,
    pub(super) analysis: &'a Analysis,
}

/// The changes between two snapshots that are configuration (not identity, not metrics).
pub(super) fn configuration_changes(from: Side<'_>, to: Side<'_>) -> Vec<Change> {
    let diff = compare_analyses(
        from.snapshot,
        from.analysis,
        to.snapshot,
        to.analysis,
        &CompareOptions::default(),
    );
    diff.changes
        .into_iter()
        .filter(|change| change.impact != Impact::None)
        .filter(|change| !matches!(change.key_area(), KeyArea::Host | KeyArea::Metric))
        .collect()
}

/// The configuration changes from configuration `from` to configuration `to` (each read from
/// its first member, with its kept analysis or one read for this comparison).
pub(super) fn compared(views: &Views<'_>, known: &Known, from: usize, to: usize) -> Vec<Change> {
    let (before, after) = (read(views, known, from), read(views, known, to));
    configuration_changes(
        Side {
            snapshot: views.snapshot(from),
            analysis: &before,
        },
        Side {
            snapshot: views.snapshot(to),
            analysis: &after,
        },
    )
}

pub(super) fn keyed(changes: Vec<Change>) -> BTreeMap<String, Change> {
    changes
        .into_iter()
        .map(|change| (change.key.clone(), change))
        .collect()
}

/// Analyses kept by configuration.
pub(super) type Known = BTreeMap<usize, Analysis>;

/// The analysis of configuration `config`: the one kept, else read now (and dropped by the
/// caller when done).
pub(super) fn read<'a>(views: &Views<'_>, known: &'a Known, config: usize) -> Cow<'a, Analysis> {
    known.get(&config).map_or_else(
        || Cow::Owned(crate::analysis::analyze(views.snapshot(config))),
        Cow::Borrowed,
    )
}

/// The configurations of the medoid's candidates (the first members).
pub(super) fn candidate_configs(configs: &Configurations) -> Vec<usize> {
    let candidates = configs.of_member.len().min(MEDOID_CANDIDATES);
    (configs.of_member[..candidates].iter().copied())
        .collect::<BTreeSet<usize>>()
        .into_iter()
        .collect()
}

/// The analyses of the configurations of the medoid's candidates.
pub(super) fn candidate_analyses(views: &Views<'_>, configs: &Configurations) -> Known {
    let wanted = candidate_configs(configs);
    let analyses = in_parallel(&wanted, |&config| {
        crate::analysis::analyze(views.snapshot(config))
    });
    wanted.into_iter().zip(analyses).collect()
}

/// The member with the fewest differences from the others (among the first candidates); each
/// pair of configurations compared once.
pub(super) fn medoid(views: &Views<'_>, configs: &Configurations, known: &Known) -> Option<usize> {
    let candidates = configs.of_member.len().min(MEDOID_CANDIDATES);
    let config = |member: usize| configs.of_member[member];
    let pairs: Vec<(usize, usize)> = (0..candidates)
        .flat_map(|candidate| {
            (0..candidates)
                .filter(move |&other| other != candidate)
                .map(move |other| (config(candidate), config(other)))
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let counts = in_parallel(&pairs, |&(from, to)| compared(views, known, from, to).len());
    let counts: BTreeMap<(usize, usize), usize> = pairs.into_iter().zip(counts).collect();
    (0..candidates).min_by_key(|&candidate| {
        (0..candidates)
            .filter(|&other| other != candidate)
            .map(|other| {
                (counts.get(&(config(candidate), config(other)))).map_or(0, |count| *count)
            })
            .sum::<usize>()
    })
}

/// Comparisons from a configuration holding a modal value to another, each pair made once.
pub(super) struct HolderComparisons {
    done: BTreeMap<(usize, usize), BTreeMap<String, Change>>,
}

impl HolderComparisons {
    /// The comparisons of `pairs` (holder's configuration, host's configuration): the holders'
    /// analyses are read once and kept in `known` (one holder per disputed key at most), each
    /// host's is read again for the comparison and dropped.
    pub(super) fn of(
        views: &Views<'_>,
        known: &mut Known,
        pairs: &BTreeSet<(usize, usize)>,
    ) -> HolderComparisons {
        let holders: Vec<usize> = (pairs.iter().map(|(holder, _)| *holder))
            .filter(|holder| !known.contains_key(holder))
            .collect::<BTreeSet<usize>>()
            .into_iter()
            .collect();
        let analyses = in_parallel(&holders, |&holder| {
            crate::analysis::analyze(views.snapshot(holder))
        });
        known.extend(holders.into_iter().zip(analyses));
        let known: &Known = known;
        let pairs: Vec<(usize, usize)> = pairs.iter().copied().collect();
        let changes = in_parallel(&pairs, |&(holder, to)| {
            keyed(compared(views, known, holder, to))
        });
        HolderComparisons {
            done: pairs.into_iter().zip(changes).collect(),
        }
    }

    /// The change of `key` from configuration `holder` to configuration `to`, as `probe diff`
    /// reads it.
    pub(super) fn change(&self, holder: usize, to: usize, key: &str) -> Option<Change> {
        self.done.get(&(holder, to))?.get(key).cloned()
    }
}
