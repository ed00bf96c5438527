//! The views of a group's configurations as the comparisons read them: all at hand (every
//! member's view given), or read when first needed (members known by fingerprint: the views of
//! configurations whose comparison is shared are never read).

use std::borrow::Cow;
use std::sync::OnceLock;

use probe_model::{FleetView, Snapshot};

use super::configurations::Configurations;
use super::member::Member;

/// Reads the views of members (by index in the group); `None` when one cannot be read.
pub type ReadViews<'a> = dyn FnMut(&[usize]) -> Option<Vec<FleetView>> + 'a;

/// The view of each configuration (its first member's), where read.
pub(super) struct Views<'a> {
    by_config: Vec<Option<Cow<'a, FleetView>>>,
    first: Vec<usize>,
}

/// The views, and how to read those not at hand.
pub(super) struct Source<'a, 'r> {
    pub(super) views: Views<'a>,
    read: Option<&'r mut ReadViews<'a>>,
}

impl<'a, 'r> Source<'a, 'r> {
    /// Every configuration's view, from its first member.
    pub(super) fn given(members: &[Member<'a>], configs: &Configurations) -> Source<'a, 'r> {
        let views = Views {
            by_config: (configs.first.iter())
                .map(|&first| Some(Cow::Borrowed(members[first].view)))
                .collect(),
            first: configs.first.clone(),
        };
        Source { views, read: None }
    }

    /// The views at hand (`given`, by member), the others read by `read` when needed.
    pub(super) fn to_read(
        configs: &Configurations,
        given: &[Option<&'a FleetView>],
        read: &'r mut ReadViews<'a>,
    ) -> Source<'a, 'r> {
        let views = Views {
            by_config: (configs.first.iter())
                .map(|&first| given[first].map(Cow::Borrowed))
                .collect(),
            first: configs.first.clone(),
        };
        Source {
            views,
            read: Some(read),
        }
    }

    /// Reads the views of `wanted` configurations not yet at hand, in one call; false when
    /// one of them cannot be read.
    pub(super) fn ensure(&mut self, wanted: impl IntoIterator<Item = usize>) -> bool {
        let views = &mut self.views;
        let mut missing: Vec<usize> = wanted
            .into_iter()
            .filter(|&config| views.by_config[config].is_none())
            .collect();
        missing.sort_unstable();
        missing.dedup();
        if missing.is_empty() {
            return true;
        }
        let Some(read) = self.read.as_mut() else {
            return false;
        };
        let members: Vec<usize> = missing.iter().map(|&config| views.first[config]).collect();
        let Some(read) = read(&members).filter(|read| read.len() == members.len()) else {
            return false;
        };
        for (config, view) in missing.into_iter().zip(read) {
            views.by_config[config] = Some(Cow::Owned(view));
        }
        true
    }
}

impl Views<'_> {
    /// The snapshot of configuration `config` (read before by [`Views::ensure`]; an empty one
    /// where it was not, which the callers never ask for).
    pub(super) fn snapshot(&self, config: usize) -> &Snapshot {
        static NONE: OnceLock<Snapshot> = OnceLock::new();
        match self.by_config.get(config) {
            Some(Some(view)) => view.snapshot(),
            _ => NONE.get_or_init(Snapshot::default),
        }
    }
}
