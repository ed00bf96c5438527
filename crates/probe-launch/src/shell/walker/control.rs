//! Control keywords: `if`/`elif`/`else`, `while`/`until`/`for`, `case`, `{ }` groups, and what a
//! branch leaves behind when its frame closes.

use super::{MAX_WHEN, Walk};
use crate::shell::expand::expand_simple;
use crate::shell::flow::{self, Cond};
use crate::shell::lexer::{Op, Part, Word};
use crate::shell::state::{Branch, Closer, Frame, MAX_ARMS_NAMED, Val, set_var};

impl Walk<'_> {
    /// Steps over the control keywords that start a command, entering and leaving frames.
    /// Returns how many words they took, or `None` when the rest is a loop or `case` header
    /// (a condition or a list, no command to record).
    pub(super) fn control_keywords(&mut self, words: &[&Word]) -> Option<usize> {
        let mut k = 0;
        while let Some(w) = words.get(k) {
            if w.parts.iter().any(|p| matches!(p, Part::Lit(_, true))) {
                break;
            }
            let rest = words.get(k + 1..).unwrap_or(&[]);
            match w.raw().as_str() {
                "if" => {
                    let c = flow::condition(rest, self.state);
                    self.open_if(c);
                }
                "elif" => {
                    let c = flow::condition(rest, self.state);
                    self.next_branch(Some(c));
                }
                "else" => self.next_branch(None),
                "then" | "do" | "!" => {}
                "{" => self.open_group(),
                "while" | "until" | "for" | "select" => {
                    self.push_frame(Frame::looped(Closer::Done, "in a loop"));
                    return None;
                }
                "case" => {
                    self.open_case(rest);
                    return None;
                }
                "fi" | "done" | "esac" | "}" => self.close(),
                _ => break,
            }
            k += 1;
        }
        Some(k)
    }

    pub(super) fn open_if(&mut self, c: Cond) {
        let mut f = Frame::branch(Closer::Fi, format!("when {}", c.text), true, c.decided);
        f.taken = c.decided == Some(true);
        f.undecided = c.decided.is_none();
        f.live_arms = usize::from(!f.dead);
        f.arms.push(c.text.clone());
        f.first_out = self.out.len();
        f.before.push(c.text);
        self.push_frame(f);
    }

    /// `elif COND` (`Some`) or `else` (`None`) of the `if` on top.
    pub(super) fn next_branch(&mut self, c: Option<Cond>) {
        let Some(f) = self.frames.last_mut().filter(|f| f.closer == Closer::Fi) else {
            return;
        };
        let unless = format!("unless {}", f.before.join(" or "));
        let (when, decided) = match &c {
            Some(c) => (format!("when {}, {unless}", c.text), c.decided),
            None => (unless, Some(true)),
        };
        let decided = match decided {
            _ if f.taken => Some(false),
            Some(true) if f.undecided => None,
            d => d,
        };
        let b = Frame::branch(Closer::Fi, when, false, decided);
        f.when = b.when;
        f.conditional = b.conditional;
        f.unstable = b.unstable;
        f.dead = b.dead;
        f.taken |= decided == Some(true);
        f.live_arms += usize::from(!f.dead);
        if f.arms.len() < MAX_ARMS_NAMED {
            f.arms.push(
                c.as_ref()
                    .map_or_else(|| "otherwise".to_string(), |c| c.text.clone()),
            );
        }
        match c {
            Some(c) => {
                f.undecided |= c.decided.is_none();
                f.before.push(c.text);
            }
            None => f.catch_all = true,
        }
    }

    /// `{`: a group, or the body of a `&&` / `||` chain's element (which then ends at `}`).
    pub(super) fn open_group(&mut self) {
        match self.frames.last_mut() {
            Some(f) if f.chain && f.closer == Closer::None => {
                f.chain = false;
                f.closer = Closer::Brace;
            }
            _ => self.push_frame(Frame::plain(Closer::Brace)),
        }
    }

    /// `case WORD in [PATTERN)]`: a frame whose arms come next.
    pub(super) fn open_case(&mut self, rest: &[&Word]) {
        let subject = rest.first().map(|w| {
            let v = expand_simple(w, self.state);
            let fixed = !(v.contains('$') || v.contains('`'));
            (w.raw(), fixed.then_some(v))
        });
        let mut f = Frame::plain(Closer::Esac);
        f.subject = subject;
        f.expect_pattern = true;
        f.first_out = self.out.len();
        // Arms are read as they come: until the first pattern nothing runs.
        f.dead = true;
        self.push_frame(f);
        // `case $1 in -d) ...` on one line: the pattern ends this element.
        let after_in: Vec<String> = rest.iter().skip(2).map(|w| w.raw()).collect();
        if !after_in.is_empty() {
            self.patterns.extend(after_in);
            if self.op == Some(Op::Close) {
                let patterns = std::mem::take(&mut self.patterns);
                self.enter_arm(patterns);
            }
        }
    }

    /// `fi`, `done`, `esac`, `}`: leaves the innermost frame (never one of an outer reading).
    pub(super) fn close(&mut self) {
        if self.overflow > 0 {
            self.overflow -= 1;
            return;
        }
        while self.frames.len() > self.floor {
            match self.frames.pop() {
                Some(f) if f.closer != Closer::None => {
                    self.note_branches(&f);
                    self.settle(f);
                    return;
                }
                Some(_) => {}
                None => return,
            }
        }
    }

    /// The end of an `if` or `case` the text does not decide between two arms or more: each
    /// command read in it says which arms there are (its own conditions say which it is in).
    pub(super) fn note_branches(&mut self, f: &Frame) {
        if !f.undecided || f.arms.len() < 2 {
            return;
        }
        let Some(inside) = self.out.get_mut(f.first_out..) else {
            return;
        };
        if inside.is_empty() {
            return;
        }
        let mut arms = f.arms.clone();
        if !f.catch_all {
            arms.push("otherwise none of them".to_string());
        }
        let note = format!(
            "one of {} branches runs, and the text does not fix which: {}",
            arms.len(),
            arms.join("; ")
        );
        for c in inside.iter_mut() {
            if c.when.is_empty() || c.undecided.len() >= MAX_WHEN {
                continue;
            }
            if !self.state.budget.take(note.len()) {
                return;
            }
            c.undecided.push(note.clone());
        }
    }

    /// The end of an `if` or `case` the text does not decide, one arm of which always runs
    /// (`else`, `*)`): a variable every arm that may run sets to the same value holds it
    /// whichever arm ran.
    pub(super) fn settle(&mut self, f: Frame) {
        if !f.catch_all || !f.undecided || f.live_arms == 0 || Branch::of(&self.frames).unstable {
            return;
        }
        let mut names: Vec<&str> = f.arm_sets.iter().map(|(n, _, _)| n.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let mut common: Option<&str> = None;
            let every_arm = (1..=f.live_arms).all(|arm| {
                let last = f
                    .arm_sets
                    .iter()
                    .rev()
                    .find(|(n, a, _)| n == name && *a == arm)
                    .map(|(_, _, v)| v.as_str());
                match (last, common) {
                    (Some(v), None) => {
                        common = Some(v);
                        true
                    }
                    (Some(v), Some(c)) => v == c,
                    (None, _) => false,
                }
            });
            if every_arm && let Some(v) = common {
                set_var(self.state, name, Val::Text(v.to_string()), false);
            }
        }
    }
}
