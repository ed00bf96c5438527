//! Walks the tokens command by command: control keywords, assignments, builtins that change the
//! state, `eval`, pipes into `tee`, and the simple commands with their context.
//!
//! Control flow is followed as far as the text decides it: a branch whose condition the text
//! fixes is taken or left out; any other branch is read with the condition noted on what it runs
//! (`when $1 = -d`), and a variable it sets keeps the value from before too ([`Val::Either`]);
//! a `for` loop over a list the text fixes is read once per item; any other loop once, "in a
//! loop"; a function is read where it is called, with its arguments as `$1`...; a file a
//! here-document wrote is read where it is `source`d.

mod assign;
mod control;
mod elements;
mod forks;
mod functions;
mod simple;

use std::collections::BTreeMap;
use std::rc::Rc;

use super::MAX_TOKENS;
use super::expand::expand_simple;
use super::flow::{self, Cond};
use super::lexer::{Heredoc, Op, RedirOp, Tok, Word, lex};
use super::state::{Alt, Frame, State, Val};

/// Conditions noted per command (the outermost); frames open at once (deeper ones are read as
/// the frame around them).
const MAX_WHEN: usize = 8;
const MAX_FRAMES: usize = 256;

/// One simple command the script runs, with the shell state at that point.
#[derive(Debug, Clone, Default)]
pub(crate) struct ShellCommand {
    pub argv: Vec<String>,
    /// Inline `VAR=value` prefixes.
    pub prefix_env: BTreeMap<String, String>,
    /// Variables exported by the text before this command.
    pub exported: std::rc::Rc<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    /// `conda`, `venv` from an earlier `conda activate` / `source .../activate`.
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    /// Output redirections: (operator, target) such as (`>>`, `server.log`).
    pub redirects: Vec<(String, String)>,
    /// `| tee [-a] file`: the tee targets.
    pub tee: Vec<String>,
    /// Files written by here-documents earlier in the text (`cat > f <<EOF`).
    pub files: std::rc::Rc<BTreeMap<String, String>>,
    /// The conditions the command runs under, outermost first (`when $1 = -d`, `in a loop`);
    /// empty when it runs whenever the text does.
    pub when: Vec<String>,
    /// Unquoted command substitutions among its arguments whose output the text does not hold
    /// (`$(cat args)`), as written: left out of `argv`, each an unknown number of words.
    pub unknown: Vec<String>,
    /// Why values of the command are kept as written (`$MODEL`): variables set on paths the
    /// text does not choose between, each with its values and their conditions.
    pub undecided: Vec<String>,
}

/// One simple command's tokens, sorted.
struct Simple<'t> {
    words: Vec<&'t Word>,
    redirs: Vec<(Option<u32>, RedirOp, &'t Word)>,
    heredoc: Option<&'t Heredoc>,
}

impl<'t> Simple<'t> {
    fn of(toks: &[&'t Tok]) -> Simple<'t> {
        let mut s = Simple {
            words: Vec::new(),
            redirs: Vec::new(),
            heredoc: None,
        };
        for t in toks {
            match t {
                Tok::Word(w) => s.words.push(w),
                Tok::Redir(fd, op, w) => s.redirs.push((*fd, *op, w)),
                Tok::Heredoc(h) => s.heredoc = Some(h),
                Tok::Op(_) => {}
            }
        }
        s
    }

    /// The text a `<<<` redirection feeds the command, expanded.
    fn here_string(&self, state: &State) -> Option<String> {
        self.redirs
            .iter()
            .find(|(_, op, _)| *op == RedirOp::HereString)
            .map(|(_, _, w)| expand_simple(w, state))
    }
}

/// The walk over one text.
struct Walk<'s> {
    state: &'s mut State,
    frames: Vec<Frame>,
    out: Vec<ShellCommand>,
    depth: usize,
    /// The command before a `|`, which a following `tee` writes for.
    pending_tee: Option<usize>,
    /// The operator that ends the element being read.
    op: Option<Op>,
    /// Conditions of the values the command being read takes (a variable read once per value).
    extra_when: Vec<String>,
    /// The test before a `&&` / `||`: the condition of the element after it, negated after `||`.
    chain: Option<(Cond, bool)>,
    /// `case` patterns so far (`-d|--daemon)` arrives as elements ended by `|`).
    patterns: Vec<String>,
    /// Functions defined so far, their bodies, and whether something called them.
    functions: Vec<(String, Rc<[Tok]>, bool)>,
    /// Function calls and literal loops being read, one inside another.
    nesting: usize,
    /// Frames below this index belong to an outer reading (a caller's, a loop's).
    floor: usize,
    /// Frames opened past [`MAX_FRAMES`], not kept.
    overflow: usize,
}

/// Walks the commands of `text` and returns every simple command with its context; the walk
/// stops where the state's budget runs out.
pub(crate) fn commands(text: &str, state: &mut State, depth: usize) -> Vec<ShellCommand> {
    if !state.budget.take(text.len() + 1) {
        return Vec::new();
    }
    let toks = lex(text);
    if toks.len() >= MAX_TOKENS {
        state.budget.note_cut();
    }
    let mut walk = Walk {
        state,
        frames: Vec::new(),
        out: Vec::new(),
        depth,
        pending_tee: None,
        op: None,
        extra_when: Vec::new(),
        chain: None,
        patterns: Vec::new(),
        functions: Vec::new(),
        nesting: 0,
        floor: 0,
        overflow: 0,
    };
    walk.walk(&toks);
    walk.uncalled_functions();
    walk.out
}

/// A leading `NAME=value` of a command.
struct Assign {
    name: String,
    val: Val,
    append: bool,
    /// The command substitution whose output the value is, when the text does not hold it
    /// (`N=$(python3 -c "...")`), as it is named in notes.
    from: Option<String>,
}

impl Walk<'_> {
    /// Reads `toks`, one pipeline element at a time.
    fn walk(&mut self, toks: &[Tok]) {
        let mut i = 0;
        let mut cur: Vec<&Tok> = Vec::new();
        while i <= toks.len() && !self.state.budget.exhausted() {
            let op = match toks.get(i) {
                Some(Tok::Op(op)) => Some(*op),
                None => None,
                Some(t) => {
                    cur.push(t);
                    i += 1;
                    continue;
                }
            };
            if let Some((name, body)) = flow::function_header(toks, i, &cur) {
                cur.clear();
                i = self.define(toks, name, body);
                continue;
            }
            if let Some(next) = self.literal_loop(toks, i, &cur, op) {
                cur.clear();
                i = next;
                continue;
            }
            self.end_of_element(&cur, op);
            cur.clear();
            i += 1;
        }
    }

    /// Opens a frame; past [`MAX_FRAMES`] the frame is only counted, to be closed.
    fn push_frame(&mut self, frame: Frame) {
        if self.frames.len() >= MAX_FRAMES {
            self.overflow += 1;
            self.state.budget.note_cut();
            return;
        }
        self.frames.push(frame);
    }

    /// Whether a branch around the walk is decided false.
    fn dead(&self) -> bool {
        self.frames.iter().any(|f| f.dead)
    }

    /// The conditions of the command being read: the frames', then its values'.
    fn when_now(&self) -> Vec<String> {
        self.frames
            .iter()
            .filter_map(|f| f.when.clone())
            .chain(self.extra_when.iter().cloned())
            .take(MAX_WHEN)
            .collect()
    }
}

/// Whether conditions can never hold together: an arm of a `case` and another arm of it
/// (`$1 = a` and `$1 = b`, or `unless $1 = a|b`), a test and its own `unless`.
fn contradictory(when: &[String]) -> bool {
    let mut yes: Vec<&str> = Vec::new();
    let mut no: Vec<&str> = Vec::new();
    for w in when {
        for atom in w.split(", ") {
            if let Some(c) = atom.strip_prefix("when ") {
                if c.contains(" or when ") {
                    continue;
                }
                yes.push(c);
            } else if let Some(c) = atom.strip_prefix("unless ") {
                no.extend(c.split(" or "));
            }
        }
    }
    let arm = |c: &str| {
        c.split_once(" = ").map(|(s, p)| {
            (
                s.to_string(),
                p.split('|').map(str::to_string).collect::<Vec<_>>(),
            )
        })
    };
    for (i, a) in yes.iter().enumerate() {
        if no.contains(a) {
            return true;
        }
        let Some((subject, pats)) = arm(a) else {
            continue;
        };
        for b in yes.iter().skip(i + 1) {
            if let Some((s2, p2)) = arm(b)
                && s2 == subject
                && !pats.iter().any(|p| p2.contains(p))
            {
                return true;
            }
        }
        for n in &no {
            if let Some((s2, p2)) = arm(n)
                && s2 == subject
                && pats.iter().all(|p| p2.contains(p))
            {
                return true;
            }
        }
    }
    false
}

/// One value, or several (or one that holds only under conditions).
fn either(mut alts: Vec<Alt>) -> Val {
    if alts.len() == 1
        && alts.first().is_some_and(|a| a.when.is_empty())
        && let Some(a) = alts.pop()
    {
        return Val::Text(a.text);
    }
    Val::Either(alts)
}
