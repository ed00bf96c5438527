//! Pipeline elements: where one ends, the `&&` / `||` chain before it, `case` patterns and arms,
//! and pipes into `tee`.

use super::{MAX_FRAMES, Simple, Walk};
use crate::shell::expand::{basename, expand_simple};
use crate::shell::flow::{self, Cond};
use crate::shell::lexer::{Op, Tok, Word};
use crate::shell::state::{Closer, Frame, MAX_ARMS_NAMED};

impl Walk<'_> {
    /// One pipeline element ended by `op` (`None` at the end of the text).
    pub(super) fn end_of_element(&mut self, cur: &[&Tok], op: Option<Op>) {
        self.op = op;
        let chain = self.chain.take();
        if !cur.is_empty() && !self.case_pattern(cur, op) {
            match self.tee_targets(cur) {
                Some(targets) => self.attach_tee(targets),
                None => {
                    let before = self.out.len();
                    self.element(cur, chain.as_ref());
                    if op == Some(Op::Pipe) && self.out.len() > before {
                        self.pending_tee = Some(self.out.len() - 1);
                    }
                }
            }
        }
        if op != Some(Op::Pipe) {
            self.pending_tee = None;
        }
        if op == Some(Op::CaseEnd)
            && let Some(f) = self.frames.last_mut()
            && f.closer == Closer::Esac
        {
            f.expect_pattern = true;
        }
        self.chain = self.next_chain(cur, op, chain);
    }

    /// The condition the element after `op` runs under: a test's before `&&` (negated before
    /// `||`), carried along a chain (`[ x ] && a || b`).
    pub(super) fn next_chain(
        &self,
        cur: &[&Tok],
        op: Option<Op>,
        chain: Option<(Cond, bool)>,
    ) -> Option<(Cond, bool)> {
        let negate = match op {
            Some(Op::And) => false,
            Some(Op::Or) => true,
            _ => return None,
        };
        let words: Vec<&Word> = Simple::of(cur).words;
        if flow::is_test(&words) {
            return Some((flow::condition(&words, self.state), negate));
        }
        chain.map(|(c, was)| (c, was ^ negate))
    }

    /// A `case` arm's pattern (`-d)`, `-d|--daemon)`): the arm's condition set on the frame.
    pub(super) fn case_pattern(&mut self, cur: &[&Tok], op: Option<Op>) -> bool {
        let Some(f) = self.frames.last() else {
            return false;
        };
        if !(f.closer == Closer::Esac && f.expect_pattern) {
            return false;
        }
        let words = Simple::of(cur).words;
        let raw: Vec<String> = words.iter().map(|w| w.raw()).collect();
        match op {
            Some(Op::Pipe) => {
                self.patterns.extend(raw);
                true
            }
            Some(Op::Close) => {
                self.patterns.extend(raw);
                let patterns = std::mem::take(&mut self.patterns);
                self.enter_arm(patterns);
                true
            }
            _ => false,
        }
    }

    /// The arm of the `case` on top with `patterns`: taken, left out or noted.
    pub(super) fn enter_arm(&mut self, patterns: Vec<String>) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        f.expect_pattern = false;
        let (subject, value) = f.subject.clone().unwrap_or_default();
        let catch_all = patterns.iter().all(|p| p == "*");
        let decided = match (&value, catch_all) {
            _ if f.taken => Some(false),
            (_, true) if f.before.is_empty() || !f.undecided => Some(true),
            (Some(v), false) => flow::case_matches(&patterns, v),
            _ => None,
        };
        let when = if catch_all {
            format!("unless {subject} = {}", f.before.join("|"))
        } else {
            format!("when {subject} = {}", patterns.join("|"))
        };
        if f.arms.len() < MAX_ARMS_NAMED {
            f.arms.push(format!("{subject} = {}", patterns.join("|")));
        }
        let arm = Frame::branch(Closer::Esac, when, false, decided);
        f.when = arm.when;
        f.conditional = arm.conditional;
        f.unstable = arm.unstable;
        f.dead = arm.dead;
        f.taken |= decided == Some(true);
        f.undecided |= decided.is_none();
        f.live_arms += usize::from(!f.dead);
        f.catch_all |= patterns.iter().any(|p| p == "*");
        f.before.extend(patterns);
    }

    /// One element: the condition of a `&&` / `||` chain around it, then its commands.
    pub(super) fn element(&mut self, cur: &[&Tok], chain: Option<&(Cond, bool)>) {
        let Some((cond, negate)) = chain.filter(|_| self.frames.len() < MAX_FRAMES) else {
            self.run_simple(cur);
            return;
        };
        let decided = cond.decided.map(|d| d ^ negate);
        let when = if *negate {
            format!("unless {}", cond.text)
        } else {
            format!("when {}", cond.text)
        };
        let mut frame = Frame::branch(Closer::None, when, !negate, decided);
        frame.chain = true;
        let len = self.frames.len();
        self.frames.push(frame);
        self.run_simple(cur);
        // A `{` right after the operator made the frame the group's; otherwise it ends here.
        if self.frames.len() > len
            && let Some(f) = self.frames.get(len)
            && f.chain
        {
            self.frames.remove(len);
        }
    }

    /// `... | tee [-a] FILE...`: the files, when this element is a `tee` after a pipe.
    pub(super) fn tee_targets(&self, cur: &[&Tok]) -> Option<Vec<String>> {
        self.pending_tee?;
        let words: Vec<String> = cur
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(expand_simple(w, self.state)),
                _ => None,
            })
            .collect();
        let (first, rest) = words.split_first()?;
        (basename(first) == "tee").then(|| {
            rest.iter()
                .filter(|w| !w.starts_with('-'))
                .cloned()
                .collect()
        })
    }

    /// Attaches `tee` targets to the command before the pipe.
    pub(super) fn attach_tee(&mut self, targets: Vec<String>) {
        if let Some(idx) = self.pending_tee.take()
            && let Some(c) = self.out.get_mut(idx)
        {
            c.tee.extend(targets);
        }
    }
}
