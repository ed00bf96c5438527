//! The work one reading of a text may do, shared by everything the reading leads to: every
//! `eval`, every nested `bash -c`, every Markdown reading tried, every command handed to the argv
//! reader. Units are bytes walked, expanded or copied, so time and memory stay linear in the size
//! of the input whatever the text does (`CMD=$CMD$CMD` chains, `eval $CMD $CMD` fan-out, shells
//! nested in shells).
//!
//! A budget that runs out stays out: every later charge fails, the walk stops where it is, and
//! what was found before is kept (with a warning added by the caller). A nested reading (an
//! `eval`, a `bash -c` script) gets a [`Budget::nested`] one, at most half of what is left: a
//! text that blows up there still leaves the commands after it their share.

use std::cell::Cell;
use std::rc::Rc;

/// Units a reading may spend per byte of its input (the public corpus needs at most 11).
const PER_INPUT_BYTE: usize = 32;
/// Units every reading may spend whatever its size (a short text holding a long value).
const BASE: usize = 1024 * 1024;
/// Units one item made on the way (a word, a command) costs besides its bytes.
pub(crate) const ITEM: usize = 32;
/// Units one copied entry of a map of variables costs besides its bytes.
const ENTRY: usize = 8;

/// The work left to one reading.
#[derive(Debug)]
pub(crate) struct Budget {
    limit: usize,
    left: Cell<usize>,
    cut: Cell<bool>,
    /// A nested reading was cut (this one goes on).
    cut_below: Cell<bool>,
    /// What a nested budget spends is spent from its parent too.
    parent: Option<Rc<Budget>>,
}

impl Default for Budget {
    fn default() -> Self {
        Budget::with_limit(BASE)
    }
}

impl Budget {
    /// The budget of a reading of `bytes` bytes of input (text, argv and known variables).
    pub(crate) fn for_input(bytes: usize) -> Rc<Budget> {
        Rc::new(Budget::with_limit(
            BASE.saturating_add(bytes.saturating_mul(PER_INPUT_BYTE)),
        ))
    }

    fn with_limit(limit: usize) -> Budget {
        Budget {
            limit,
            left: Cell::new(limit),
            cut: Cell::new(false),
            cut_below: Cell::new(false),
            parent: None,
        }
    }

    /// The budget of a reading nested in `parent`'s: half of what `parent` has left.
    pub(crate) fn nested(parent: &Rc<Budget>) -> Rc<Budget> {
        Rc::new(Budget {
            parent: Some(parent.clone()),
            ..Budget::with_limit(parent.left.get() / 2)
        })
    }

    /// Spends `n` units; `false` (and nothing is left from then on) when fewer remain.
    pub(crate) fn take(&self, n: usize) -> bool {
        let paid = match self.left.get().checked_sub(n) {
            Some(rest) if !self.cut.get() && self.parent.as_ref().is_none_or(|p| p.take(n)) => {
                self.left.set(rest);
                true
            }
            _ => false,
        };
        if !paid {
            self.left.set(0);
            self.cut.set(true);
            let mut up = self.parent.as_ref();
            while let Some(p) = up {
                p.cut_below.set(true);
                up = p.parent.as_ref();
            }
        }
        paid
    }

    /// The reading goes on, but could not take in all of its text (the lexer's token limit):
    /// reported like a cut, without stopping anything.
    pub(crate) fn note_cut(&self) {
        self.cut_below.set(true);
        let mut up = self.parent.as_ref();
        while let Some(p) = up {
            p.cut_below.set(true);
            up = p.parent.as_ref();
        }
    }

    /// A charge failed: the reading stopped before the end of its text.
    pub(crate) fn exhausted(&self) -> bool {
        self.cut.get()
    }

    /// This reading or one nested in it stopped before the end of its text.
    pub(crate) fn cut_anywhere(&self) -> bool {
        self.cut.get() || self.cut_below.get()
    }

    pub(crate) fn spent(&self) -> usize {
        self.limit - self.left.get()
    }

    pub(crate) fn limit(&self) -> usize {
        self.limit
    }
}

/// The units copying a map of names to values costs.
pub(crate) fn weight<'a>(entries: impl IntoIterator<Item = (&'a String, &'a String)>) -> usize {
    entries
        .into_iter()
        .map(|(k, v)| k.len() + v.len() + ENTRY)
        .sum()
}

/// The units copying a list of words costs.
pub(crate) fn words(w: &[String]) -> usize {
    w.iter().map(|a| a.len() + ITEM).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_charge_empties_the_budget_for_good() {
        let b = Budget::with_limit(10);
        assert!(b.take(4));
        assert_eq!(b.spent(), 4);
        assert!(!b.take(7));
        assert!(b.exhausted());
        assert!(!b.take(0));
        assert_eq!(b.spent(), 10);
    }

    #[test]
    fn a_nested_budget_spends_from_its_parent_and_runs_out_alone() {
        let root = Rc::new(Budget::with_limit(100));
        let inner = Budget::nested(&root);
        assert_eq!(inner.limit(), 50);
        assert!(inner.take(30));
        assert_eq!(root.spent(), 30);
        assert!(!inner.take(30));
        assert!(inner.exhausted());
        assert!(!root.exhausted());
        assert!(root.cut_anywhere());
        assert!(root.take(70));
    }

    #[test]
    fn the_limit_grows_with_the_input() {
        assert_eq!(Budget::for_input(0).limit(), BASE);
        assert_eq!(Budget::for_input(10).limit(), BASE + 10 * PER_INPUT_BYTE);
        assert_eq!(Budget::for_input(usize::MAX).limit(), usize::MAX);
    }
}
