//! Functions and literal loops: a function is remembered where it is defined and read where it
//! is called, with its arguments as `$1`...; a `for` loop over a list the text fixes is read once
//! per item.

use std::rc::Rc;

use super::Walk;
use crate::shell::MAX_DEPTH;
use crate::shell::budget::ITEM;
use crate::shell::flow;
use crate::shell::lexer::{Op, Tok, Word};
use crate::shell::state::{Branch, Closer, Frame, Val, set_var};

impl Walk<'_> {
    /// A function whose body starts at `body`: remembered, to be read where it is called.
    /// Returns where the walk goes on. A body that does not end in the text is read in place.
    pub(super) fn define(&mut self, toks: &[Tok], name: String, body: usize) -> usize {
        let end = flow::block_end(toks, body, "{", "}");
        let stored = end.and_then(|end| toks.get(body..end));
        match (end, stored) {
            (Some(end), Some(body_toks))
                if self.functions.len() < MAX_FUNCTIONS
                    && self.state.budget.take(ITEM * (body_toks.len() + 1)) =>
            {
                self.functions.retain(|(n, _, _)| *n != name);
                self.functions.push((name, Rc::from(body_toks), false));
                end + 1
            }
            _ => {
                self.frames
                    .push(Frame::looped(Closer::Brace, &format!("in function {name}")));
                body
            }
        }
    }

    /// `for NAME in ITEMS; do BODY done` with items the text fixes: the body read once per
    /// item. Returns where the walk goes on, or `None` for any other element.
    pub(super) fn literal_loop(
        &mut self,
        toks: &[Tok],
        i: usize,
        cur: &[&Tok],
        op: Option<Op>,
    ) -> Option<usize> {
        if !matches!(op, Some(Op::Semi | Op::Newline)) || self.dead() {
            return None;
        }
        let words: Vec<&Word> = cur
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(w),
                _ => None,
            })
            .collect();
        let (name, items) = match words.as_slice() {
            [kw, arith] if flow::is_bare(kw, "for") => flow::counted(arith, self.state)?,
            [kw, name, kw_in, items @ ..]
                if flow::is_bare(kw, "for")
                    && flow::is_bare(kw_in, "in")
                    && name.raw().chars().all(crate::shell::lexer::is_name_char) =>
            {
                (name.raw(), flow::literal_items(items, self.state)?)
            }
            _ => return None,
        };
        let mut j = i + 1;
        while matches!(toks.get(j), Some(Tok::Op(Op::Newline))) {
            j += 1;
        }
        let Some(Tok::Word(w)) = toks.get(j) else {
            return None;
        };
        if !flow::is_bare(w, "do") {
            return None;
        }
        let end = flow::block_end(toks, j + 1, "do", "done")?;
        let body = toks.get(j + 1..end)?;
        for item in items {
            if self.nesting >= MAX_DEPTH || !self.state.budget.take(ITEM * (body.len() + 1)) {
                break;
            }
            set_var(self.state, &name, Val::Text(item), false);
            self.nested(body, Frame::plain(Closer::None));
        }
        Some(end + 1)
    }

    /// Reads `toks` inside `frame` (a loop's iteration, a function's body), the frames around
    /// left as they were whatever the body opens or closes.
    pub(super) fn nested(&mut self, toks: &[Tok], frame: Frame) {
        let (floor, len) = (self.floor, self.frames.len());
        let (chain, tee) = (self.chain.take(), self.pending_tee.take());
        self.frames.push(frame);
        self.floor = self.frames.len();
        self.nesting += 1;
        self.walk(toks);
        self.nesting -= 1;
        self.frames.truncate(len);
        self.floor = floor;
        self.chain = chain;
        self.pending_tee = tee;
    }

    /// `NAME ARGS`: the function's body read with the arguments as positional parameters.
    pub(super) fn call(&mut self, name: &str, args: &[String]) -> bool {
        let Some(idx) = self.functions.iter().position(|(n, _, _)| n == name) else {
            return false;
        };
        let Some((_, body, called)) = self.functions.get_mut(idx) else {
            return false;
        };
        *called = true;
        let body = body.clone();
        if self.nesting >= MAX_DEPTH || !self.state.budget.take(ITEM * (body.len() + 1)) {
            return true;
        }
        let saved: Vec<(&str, Option<Val>)> = POSITIONAL
            .iter()
            .map(|n| (*n, self.state.vars.get(*n).cloned()))
            .collect();
        self.set_positional(args);
        self.nested(&body, Frame::plain(Closer::None));
        for (n, v) in saved {
            match v {
                Some(v) => self.state.vars.insert(n.to_string(), v),
                None => self.state.vars.remove(n),
            };
        }
        true
    }

    /// `$1`..`$9`, `$@`, `$*` and `$#` as `args` set them.
    pub(super) fn set_positional(&mut self, args: &[String]) {
        for (n, name) in POSITIONAL.iter().take(9).enumerate() {
            match args.get(n) {
                Some(a) => self
                    .state
                    .vars
                    .insert((*name).to_string(), Val::Text(a.clone())),
                None => self
                    .state
                    .vars
                    .insert((*name).to_string(), Val::Text(String::new())),
            };
        }
        for all in ["@", "*"] {
            self.state
                .vars
                .insert(all.to_string(), Val::Array(args.to_vec()));
        }
        self.state
            .vars
            .insert("#".to_string(), Val::Text(args.len().to_string()));
    }

    /// `shift [N]` and `set -- ARGS` where the text knows the positional parameters (a
    /// function's); `false` for anything else.
    pub(super) fn positional_builtin(
        &mut self,
        cmd: &str,
        args: &[String],
        branch: Branch,
    ) -> bool {
        let Some(Val::Array(current)) = self.state.vars.get("@").cloned() else {
            return false;
        };
        let new = match (cmd, args.first().map(String::as_str)) {
            ("shift", n) => {
                let n: usize = n.and_then(|n| n.parse().ok()).unwrap_or(1);
                current.get(n..).unwrap_or(&[]).to_vec()
            }
            ("set", Some("--")) => args.get(1..).unwrap_or(&[]).to_vec(),
            _ => return false,
        };
        if branch.unstable {
            for n in POSITIONAL {
                self.state.vars.insert(n.to_string(), Val::Opaque);
            }
        } else {
            self.set_positional(&new);
        }
        true
    }

    /// The functions nothing in the text called, read at the end, each noted as such.
    pub(super) fn uncalled_functions(&mut self) {
        let uncalled: Vec<(String, Rc<[Tok]>)> = self
            .functions
            .iter()
            .filter(|(_, _, called)| !called)
            .map(|(n, b, _)| (n.clone(), b.clone()))
            .collect();
        for (name, body) in uncalled {
            if !self.state.budget.take(ITEM * (body.len() + 1)) {
                return;
            }
            let frame = Frame::looped(Closer::None, &format!("in function {name}"));
            self.nested(&body, frame);
        }
    }
}

/// Functions remembered per text.
const MAX_FUNCTIONS: usize = 64;
/// Positional parameters a function call sets by name (`$1`..`$9`; all of them in `$@`).
const POSITIONAL: [&str; 12] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#"];
