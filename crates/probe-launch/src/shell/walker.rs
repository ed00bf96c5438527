//! Walks the tokens command by command: control keywords, assignments, builtins that change the
//! state, `eval`, pipes into `tee`, and the simple commands with their context.
//!
//! Control flow is followed as far as the text decides it: a branch whose condition the text
//! fixes is taken or left out; any other branch is read with the condition noted on what it runs
//! (`when $1 = -d`), and a variable it sets keeps the value from before too ([`Val::Either`]);
//! a `for` loop over a list the text fixes is read once per item; any other loop once, "in a
//! loop"; a function is read where it is called, with its arguments as `$1`...; a file a
//! here-document wrote is read where it is `source`d.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::budget::{self, Budget, ITEM, weight};
use super::builtins::{self, Builtin};
use super::expand::{
    assigned, basename, expand_simple, expand_word, heredoc_text, is_assignment, unknown_words,
};
use super::flow::{self, Cond};
use super::lexer::{Heredoc, Op, Part, RedirOp, Tok, Word, lex, word_lit};
use super::state::{
    Alt, Branch, Closer, Frame, MAX_ALTS, MAX_ARM_SETS, MAX_ARMS_NAMED, State, Val, normalize_path,
    set_var, val_text,
};
use super::{MAX_DEPTH, MAX_EXPORTS, MAX_FILE_BYTES, MAX_FILES, MAX_TOKENS};

/// Readings of one command when the variables it names hold several values.
const MAX_VARIANTS: usize = 8;
/// One reading of a command that names variables of several values: the value each takes,
/// and the conditions of that reading.
type Fork = (Vec<(String, String)>, Vec<String>);
/// Conditions noted per command (the outermost); frames open at once (deeper ones are read as
/// the frame around them).
const MAX_WHEN: usize = 8;
const MAX_FRAMES: usize = 256;
/// Functions remembered per text.
const MAX_FUNCTIONS: usize = 64;
/// Positional parameters a function call sets by name (`$1`..`$9`; all of them in `$@`).
const POSITIONAL: [&str; 12] = ["1", "2", "3", "4", "5", "6", "7", "8", "9", "@", "*", "#"];

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

    /// A function whose body starts at `body`: remembered, to be read where it is called.
    /// Returns where the walk goes on. A body that does not end in the text is read in place.
    fn define(&mut self, toks: &[Tok], name: String, body: usize) -> usize {
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
    fn literal_loop(
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
                    && name.raw().chars().all(super::lexer::is_name_char) =>
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
    fn nested(&mut self, toks: &[Tok], frame: Frame) {
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
    fn call(&mut self, name: &str, args: &[String]) -> bool {
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
    fn set_positional(&mut self, args: &[String]) {
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
    fn positional_builtin(&mut self, cmd: &str, args: &[String], branch: Branch) -> bool {
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
    fn uncalled_functions(&mut self) {
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

    /// One pipeline element ended by `op` (`None` at the end of the text).
    fn end_of_element(&mut self, cur: &[&Tok], op: Option<Op>) {
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
    fn next_chain(
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
    fn case_pattern(&mut self, cur: &[&Tok], op: Option<Op>) -> bool {
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
    fn enter_arm(&mut self, patterns: Vec<String>) {
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
    fn element(&mut self, cur: &[&Tok], chain: Option<&(Cond, bool)>) {
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
    fn tee_targets(&self, cur: &[&Tok]) -> Option<Vec<String>> {
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
    fn attach_tee(&mut self, targets: Vec<String>) {
        if let Some(idx) = self.pending_tee.take()
            && let Some(c) = self.out.get_mut(idx)
        {
            c.tee.extend(targets);
        }
    }

    fn run_simple(&mut self, toks: &[&Tok]) {
        let simple = Simple::of(toks);
        let Some(k) = self.control_keywords(&simple.words) else {
            return;
        };
        let words = simple.words.get(k..).unwrap_or(&[]);
        if words.is_empty()
            || self.dead()
            || words.first().is_some_and(|w| flow::is_arith_command(w))
        {
            return;
        }
        let forks = self.forks(words);
        if forks.len() < 2 && forks.first().is_none_or(|(binds, _)| binds.is_empty()) {
            self.run_words(&simple, words);
            return;
        }
        self.run_forked(&simple, words, forks);
    }

    /// The readings of a command that names variables holding several values: the values of
    /// each reading and its conditions (at most [`MAX_VARIANTS`]).
    fn forks(&self, words: &[&Word]) -> Vec<Fork> {
        let mut names: Vec<(&str, Vec<Alt>)> = Vec::new();
        for w in words {
            let parts = w.parts.iter().chain(
                w.array
                    .iter()
                    .flat_map(|items| items.iter().flat_map(|i| i.parts.iter())),
            );
            for p in parts {
                if let Part::Var { name, .. } = p
                    && let Some(Val::Either(alts)) = self.state.vars.get(name)
                    && !names.iter().any(|(n, _)| *n == name.as_str())
                {
                    let here = self.alts_here(alts);
                    if !undecided_value(&here) {
                        names.push((name, here));
                    }
                }
            }
        }
        let mut forks: Vec<Fork> = vec![(Vec::new(), Vec::new())];
        for (name, alts) in names {
            let mut next = Vec::new();
            for (binds, when) in &forks {
                for a in &alts {
                    if next.len() >= MAX_VARIANTS {
                        break;
                    }
                    let mut b = binds.clone();
                    b.push((name.to_string(), a.text.clone()));
                    let mut w = when.clone();
                    for c in &a.when {
                        if !w.contains(c) {
                            w.push(c.clone());
                        }
                    }
                    next.push((b, w));
                }
            }
            // Values set in different arms of one `if`/`case` never hold together, nor with
            // the arm being read.
            let here = self.when_now();
            next.retain(|(_, when)| {
                let all: Vec<String> = here.iter().chain(when).cloned().collect();
                !contradictory(&all)
            });
            forks = next;
        }
        if forks.is_empty() {
            forks.push((Vec::new(), Vec::new()));
        }
        forks
    }

    /// The values of a variable that may hold where the walk is: the one set last under
    /// conditions that all hold here (a function called in a branch that set it), else those
    /// whose conditions do not contradict the conditions here.
    fn alts_here(&self, alts: &[Alt]) -> Vec<Alt> {
        let here = self.when_now();
        if let Some(a) = alts
            .iter()
            .rev()
            .find(|a| !a.when.is_empty() && a.when.iter().all(|w| here.contains(w)))
        {
            return vec![Alt {
                text: a.text.clone(),
                when: Vec::new(),
            }];
        }
        alts.iter()
            .filter(|a| {
                let all: Vec<String> = here.iter().chain(&a.when).cloned().collect();
                !contradictory(&all)
            })
            .cloned()
            .collect()
    }

    /// Why the values in `argv` that the text does not decide are unknown: one note per
    /// variable kept as written (`$MODEL is one of ...`), see [`undecided_value`].
    fn undecided_notes(&self, argv: &[String]) -> Vec<String> {
        let mut notes = Vec::new();
        // Values a program prints (`N=$(python3 -c "...")`): not in the text, never guessed.
        for (name, why) in &self.state.opaque_why {
            if notes.len() >= MAX_WHEN {
                break;
            }
            if matches!(self.state.vars.get(name), Some(Val::Opaque)) && names_var(argv, name) {
                notes.push(format!("${name} is unknown: {why}"));
            }
        }
        for (name, v) in &self.state.vars {
            let Val::Either(alts) = v else { continue };
            if notes.len() >= MAX_WHEN {
                break;
            }
            let alts = self.alts_here(alts);
            if !undecided_value(&alts) {
                continue;
            }
            if !names_var(argv, name) {
                continue;
            }
            let values: Vec<String> = alts
                .iter()
                .map(|a| {
                    if a.when.is_empty() {
                        format!("{} otherwise", a.text)
                    } else {
                        format!("{} {}", a.text, a.when.join(", "))
                    }
                })
                .collect();
            notes.push(format!(
                "${name} is unknown: the text does not decide between {}",
                values.join("; ")
            ));
        }
        notes
    }

    /// Reads the command once per reading of its variables; assignments made on the way keep
    /// every value they took, each with its reading's conditions.
    fn run_forked(&mut self, simple: &Simple, words: &[&Word], forks: Vec<Fork>) {
        let (_, n) = self.leading_assignments(words);
        let assign_only = n == words.len();
        let branch = Branch::of(&self.frames);
        let mut values: Vec<(String, Vec<Alt>, bool)> = Vec::new();
        for (binds, when) in forks {
            let saved: Vec<(String, Option<Val>)> = binds
                .iter()
                .map(|(name, _)| (name.clone(), self.state.vars.get(name).cloned()))
                .collect();
            for (name, text) in binds {
                self.state.vars.insert(name, Val::Text(text));
            }
            let mark = self.extra_when.len();
            self.extra_when.extend(when.iter().cloned());
            if assign_only {
                for a in self.leading_assignments(words).0 {
                    let text = match (a.val, a.append, self.state.vars.get(&a.name)) {
                        (Val::Text(t), false, _) => Some(t),
                        (Val::Text(t), true, Some(Val::Text(old))) => Some(format!("{old}{t}")),
                        _ => None,
                    };
                    let slot = match values.iter_mut().position(|(n, _, _)| *n == a.name) {
                        Some(p) => values.get_mut(p),
                        None => {
                            values.push((a.name.clone(), Vec::new(), true));
                            values.last_mut()
                        }
                    };
                    if let Some((_, alts, ok)) = slot {
                        match text {
                            Some(text) => alts.push(Alt {
                                text,
                                when: when.clone(),
                            }),
                            None => *ok = false,
                        }
                    }
                }
            } else {
                self.run_words(simple, words);
            }
            self.extra_when.truncate(mark);
            for (name, v) in saved {
                match v {
                    Some(v) => self.state.vars.insert(name, v),
                    None => self.state.vars.remove(&name),
                };
            }
        }
        let assigns = values
            .into_iter()
            .map(|(name, alts, ok)| Assign {
                name,
                val: if ok { either(alts) } else { Val::Opaque },
                append: false,
                from: None,
            })
            .collect();
        self.assign_all(assigns, branch);
    }

    /// One reading of a simple command: its assignments, a builtin, a function, `eval`,
    /// `source`, or a command recorded with its context.
    fn run_words(&mut self, simple: &Simple, words: &[&Word]) {
        let branch = Branch::of(&self.frames);
        let (assigns, n) = self.leading_assignments(words);
        let rest = words.get(n..).unwrap_or(&[]);
        if rest.is_empty() {
            self.assign_all(assigns, branch);
            return;
        }
        let prefix_env: BTreeMap<String, String> = assigns
            .iter()
            .map(|a| (a.name.clone(), val_text(&a.name, &a.val)))
            .collect();
        // After the command word, an unquoted substitution of unknown output is an unknown
        // number of words: none is invented from it, the command keeps it aside.
        let mut unknown = Vec::new();
        let mut argv: Vec<String> = Vec::new();
        for w in rest {
            match unknown_words(w, self.state).filter(|_| !argv.is_empty()) {
                Some(raw) => unknown.push(raw.to_string()),
                None => argv.extend(expand_word(w, self.state)),
            }
        }
        let Some((cmd, args)) = argv.split_first() else {
            return;
        };
        if self.call(cmd, args) || self.positional_builtin(cmd, args, branch) {
            return;
        }
        let here = simple.here_string(self.state);
        let input = simple.heredoc.map(|h| heredoc_text(h, self.state));
        let call = Builtin {
            cmd,
            args,
            words: rest,
            input: input.as_deref().or(here.as_deref()),
            branch,
        };
        self.note_branch_exports(cmd, args, rest, branch);
        if self.source_in_text(cmd, args) || builtins::run(&call, self.state) {
            return;
        }
        if cmd == "eval" && self.depth < MAX_DEPTH {
            self.eval(&args.join(" "), Some("eval"));
            return;
        }
        // A test runs nothing: its condition is on the frames.
        if matches!(cmd.as_str(), "[" | "[[" | "test") {
            return;
        }
        // The command and the state copied with it.
        let when = self.when_now();
        let cost = ITEM + budget::words(&argv) + weight(&prefix_env) + budget::words(&when);
        if !self.state.budget.take(cost) {
            return;
        }
        self.remember_file(simple, &argv);
        let redirects = self.output_redirects(simple);
        let undecided = self.undecided_notes(&argv);
        let exported = self.exported_here();
        self.out.push(ShellCommand {
            argv,
            prefix_env,
            exported,
            cwd: self.state.cwd.clone(),
            context_wrappers: self.state.context_wrappers.clone(),
            venv: self.state.venv.clone(),
            redirects,
            tee: Vec::new(),
            files: self.state.files.clone(),
            when,
            unknown,
            undecided,
        });
    }

    /// `export NAME=value` (or `declare -x`) in a branch the text does not decide: the
    /// variable's value there is kept with the branch's conditions ([`Self::exported_here`]).
    fn note_branch_exports(&mut self, cmd: &str, args: &[String], words: &[&Word], branch: Branch) {
        let exporting = cmd == "export"
            || (matches!(cmd, "declare" | "typeset")
                && args.iter().any(|a| a.starts_with('-') && a.contains('x')));
        if !exporting || !branch.unstable || branch.looped {
            return;
        }
        let when = self.when_now();
        for w in words.iter().skip(1) {
            let lit = word_lit(w);
            let Some((name, _, false)) = is_assignment(&lit) else {
                continue;
            };
            let Val::Text(text) = assigned(w, self.state) else {
                self.state.branch_exports.remove(name);
                continue;
            };
            if self.state.branch_exports.len() < MAX_EXPORTS
                || self.state.branch_exports.contains_key(name)
            {
                let cost = text.len() + budget::words(&when);
                if self.state.budget.take(cost) {
                    self.state
                        .branch_exports
                        .insert(name.to_string(), (text, when.clone()));
                }
            }
        }
    }

    /// The exported variables of a command recorded here: one exported in an undecided branch
    /// has its value when this command runs under that branch's conditions, is not exported
    /// when it runs in another branch (their conditions contradict), and stays a reference
    /// (`${NAME}`) otherwise.
    fn exported_here(&self) -> Rc<BTreeMap<String, String>> {
        let shared = &self.state.exported;
        if self.state.branch_exports.is_empty() {
            return shared.clone();
        }
        let here = self.when_now();
        let mut out: Option<BTreeMap<String, String>> = None;
        for (name, (text, when)) in &self.state.branch_exports {
            // Only while the export is still the undecided one (not set again, not unset).
            if shared.get(name) != Some(&format!("${{{name}}}")) {
                continue;
            }
            let all: Vec<String> = here.iter().chain(when).cloned().collect();
            let m = out.get_or_insert_with(|| {
                let _ = self.state.budget.take(weight(shared.iter()));
                (**shared).clone()
            });
            if when.iter().all(|w| here.contains(w)) {
                m.insert(name.clone(), text.clone());
            } else if contradictory(&all) {
                m.remove(name);
            }
        }
        match out {
            Some(m) => Rc::new(m),
            None => shared.clone(),
        }
    }

    /// `source FILE` / `. FILE` of a file a here-document wrote earlier: its commands read
    /// here, in this shell.
    fn source_in_text(&mut self, cmd: &str, args: &[String]) -> bool {
        if !matches!(cmd, "source" | ".") || self.depth >= MAX_DEPTH {
            return false;
        }
        let Some(text) = args
            .first()
            .and_then(|p| self.state.files.get(&normalize_path(p)))
            .cloned()
        else {
            return false;
        };
        self.eval(&text, None);
        true
    }

    /// Steps over the control keywords that start a command, entering and leaving frames.
    /// Returns how many words they took, or `None` when the rest is a loop or `case` header
    /// (a condition or a list, no command to record).
    fn control_keywords(&mut self, words: &[&Word]) -> Option<usize> {
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

    fn open_if(&mut self, c: Cond) {
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
    fn next_branch(&mut self, c: Option<Cond>) {
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
    fn open_group(&mut self) {
        match self.frames.last_mut() {
            Some(f) if f.chain && f.closer == Closer::None => {
                f.chain = false;
                f.closer = Closer::Brace;
            }
            _ => self.push_frame(Frame::plain(Closer::Brace)),
        }
    }

    /// `case WORD in [PATTERN)]`: a frame whose arms come next.
    fn open_case(&mut self, rest: &[&Word]) {
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
    fn close(&mut self) {
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
    fn note_branches(&mut self, f: &Frame) {
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
    fn settle(&mut self, f: Frame) {
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

    /// Remembers a plain value an `if`/`case` arm sets directly, for [`Walk::settle`].
    fn note_arm_set(&mut self, name: &str, val: &Val, append: bool) {
        let Some(f) = self.frames.last_mut() else {
            return;
        };
        if !matches!(f.closer, Closer::Fi | Closer::Esac) || f.dead || f.chain {
            return;
        }
        let arm = f.live_arms;
        f.arm_sets.retain(|(n, a, _)| !(n == name && *a == arm));
        if let (Val::Text(t), false) = (val, append)
            && f.arm_sets.len() < MAX_ARM_SETS
        {
            f.arm_sets.push((name.to_string(), arm, t.clone()));
        }
    }

    /// The `NAME=value` words before the command, and how many there are.
    fn leading_assignments(&self, words: &[&Word]) -> (Vec<Assign>, usize) {
        let mut assigns = Vec::new();
        for w in words {
            let lit = word_lit(w);
            let Some((name, _, append)) = is_assignment(&lit) else {
                break;
            };
            let val = assigned(w, self.state);
            let from = match (&val, w.parts.as_slice()) {
                (Val::Opaque, [.., Part::Cmd(raw, _)]) => Some(substitution_named(raw)),
                _ => None,
            };
            assigns.push(Assign {
                name: name.to_string(),
                val,
                append,
                from,
            });
        }
        let n = assigns.len();
        (assigns, n)
    }

    /// A command of assignments only: the variables are set, as far as the branch allows.
    fn assign_all(&mut self, assigns: Vec<Assign>, branch: Branch) {
        for Assign {
            name,
            val,
            append,
            from,
        } in assigns
        {
            match from {
                Some(f) if self.state.opaque_why.len() < MAX_OPAQUE_WHY => {
                    let why = format!("it is what {f} prints, which the text does not hold");
                    self.state.opaque_why.insert(name.clone(), why);
                }
                _ => {
                    self.state.opaque_why.remove(&name);
                }
            }
            self.note_arm_set(&name, &val, append);
            if !branch.unstable {
                set_var(self.state, &name, val, append);
                continue;
            }
            match (&val, append) {
                // An array extended in the first branch of an `if`: taken as the default path.
                (Val::Array(items), true) if !branch.conditional => {
                    if let Some(Val::Array(old)) = self.state.vars.get_mut(&name) {
                        old.extend(items.iter().cloned());
                    }
                }
                // Alternative branches: left out.
                (Val::Array(_), true) => {}
                // First set in the first branch of an `if` (nothing else gives it a value):
                // taken as the default path, like array extensions above.
                // ... unless the branch is the one where it is empty (`if [ -z "$TP" ]; then
                // TP=1; fi`): otherwise it keeps a value from outside the text, so it is unknown.
                (Val::Text(t), false)
                    if !branch.conditional
                        && !self.state.vars.contains_key(&name)
                        && self.tests_empty(&name) =>
                {
                    if self.state.opaque_why.len() < MAX_OPAQUE_WHY {
                        let why = format!(
                            "{t} when it is empty, else the value it has from outside the text"
                        );
                        self.state.opaque_why.insert(name.clone(), why);
                    }
                    self.state.vars.insert(name, Val::Opaque);
                }
                _ if !branch.conditional && !self.state.vars.contains_key(&name) => {
                    set_var(self.state, &name, val, append);
                }
                // Set again in a branch the text cannot decide: both values are kept.
                (Val::Text(_) | Val::Either(_), _) if !branch.looped => {
                    let kept = self.both_values(&name, val, append);
                    self.state.vars.insert(name, kept);
                }
                _ => {
                    self.state.vars.insert(name, Val::Opaque);
                }
            }
        }
    }

    /// Whether the innermost branch is taken only when `name` is empty or unset (`-z $NAME`,
    /// `! -n $NAME`, `$NAME = ""`).
    fn tests_empty(&self, name: &str) -> bool {
        let Some(when) = self.frames.last().and_then(|f| f.when.as_deref()) else {
            return false;
        };
        let Some(cond) = when.strip_prefix("when ") else {
            return false;
        };
        let cond = cond.trim();
        [format!("${name}"), format!("${{{name}}}")]
            .iter()
            .any(|v| {
                cond == format!("-z {v}")
                    || cond == format!("! -n {v}")
                    || cond == format!("{v} = ")
                    || cond == format!("{v} == ")
            })
    }

    /// The value of `name` after a branch the text cannot decide set it to `val`: the values
    /// it had, then the new ones under the branch's conditions; `Opaque` past [`MAX_ALTS`] or
    /// when the value before is not text.
    fn both_values(&self, name: &str, val: Val, append: bool) -> Val {
        let old: Vec<Alt> = match self.state.vars.get(name) {
            Some(Val::Text(t)) => vec![Alt {
                text: t.clone(),
                when: Vec::new(),
            }],
            Some(Val::Either(alts)) => alts.clone(),
            None if !append => Vec::new(),
            _ => return Val::Opaque,
        };
        let when = self.when_now();
        let new: Vec<Alt> = match val {
            Val::Text(t) if append => old
                .iter()
                .map(|a| Alt {
                    text: format!("{}{t}", a.text),
                    when: a.when.iter().chain(&when).cloned().collect(),
                })
                .collect(),
            Val::Text(t) => vec![Alt { text: t, when }],
            Val::Either(alts) => alts
                .into_iter()
                .map(|a| Alt {
                    text: a.text,
                    when: when.iter().chain(&a.when).cloned().collect(),
                })
                .collect(),
            _ => return Val::Opaque,
        };
        let mut all = old;
        for a in new {
            match all.iter_mut().find(|o| o.text == a.text) {
                // The same value under another condition: it holds under either.
                Some(o) if !o.when.is_empty() && o.when != a.when => {
                    o.when = vec![format!("{} or {}", o.when.join(", "), a.when.join(", "))];
                }
                Some(_) => {}
                None => all.push(a),
            }
        }
        if all.len() > MAX_ALTS {
            return Val::Opaque;
        }
        either(all)
    }

    /// `eval ARGS` (`wrapper` = `eval`) or a `source`d file: the text is walked as one of its
    /// own in this shell, one level deeper (and paid for from the same budget: nested evals of
    /// growing values stop when it is spent). What it runs keeps the conditions around it.
    fn eval(&mut self, inner: &str, wrapper: Option<&str>) {
        let outer = self.state.budget.clone();
        self.state.budget = Budget::nested(&outer);
        let mut sub = commands(inner, self.state, self.depth + 1);
        self.state.budget = outer;
        let when = self.when_now();
        for c in &mut sub {
            if let Some(w) = wrapper {
                c.context_wrappers.insert(0, w.into());
            }
            if !when.is_empty() {
                c.when = when.iter().chain(&c.when).cloned().collect();
            }
        }
        self.out.extend(sub);
    }

    /// `cat > FILE <<EOF` and `[sudo] tee [-a] FILE <<EOF`: remembers what the here-document
    /// wrote (expanded as the shell expands it: not when its delimiter is quoted).
    fn remember_file(&mut self, simple: &Simple, argv: &[String]) {
        let Some(h) = simple.heredoc else { return };
        if h.body.len() > MAX_FILE_BYTES {
            return;
        }
        let mut targets: Vec<String> = simple
            .redirs
            .iter()
            .filter(|(_, op, _)| matches!(op, RedirOp::Out | RedirOp::Append))
            .map(|(_, _, w)| expand_simple(w, self.state))
            .filter(|t| t != "/dev/null")
            .collect();
        let head = argv
            .iter()
            .position(|a| basename(a) != "sudo" && !a.starts_with('-'));
        if let Some(i) = head
            && argv.get(i).is_some_and(|a| basename(a) == "tee")
        {
            targets.extend(
                argv.get(i + 1..)
                    .unwrap_or(&[])
                    .iter()
                    .filter(|a| !a.starts_with('-'))
                    .cloned(),
            );
        }
        if targets.is_empty() {
            return;
        }
        let body = heredoc_text(h, self.state);
        for target in targets {
            if self.state.files.len() < MAX_FILES {
                std::rc::Rc::make_mut(&mut self.state.files)
                    .insert(normalize_path(&target), body.clone());
            }
        }
    }

    /// Where stdout and stderr go (files, not other descriptors).
    fn output_redirects(&self, simple: &Simple) -> Vec<(String, String)> {
        simple
            .redirs
            .iter()
            .filter(|(fd, op, _)| op.writes_output() && fd.unwrap_or(1) <= 2)
            .map(|(_, op, w)| (op.as_str().to_string(), expand_simple(w, self.state)))
            .filter(|(_, target)| !target.starts_with('&'))
            .collect()
    }
}

/// Whether a variable of several values is one the text leaves undecided as a value (each
/// value one word: a model, a size, a port), kept as written where it is used and said to be
/// unknown, rather than a piece of the command line read once per value.
fn undecided_value(alts: &[Alt]) -> bool {
    let first = alts.first().map(|a| a.text.as_str());
    alts.iter().any(|a| Some(a.text.as_str()) != first)
        && alts
            .iter()
            .all(|a| !a.text.is_empty() && !a.text.contains(char::is_whitespace))
}

/// Whether conditions can never hold together: an arm of a `case` and another arm of it
/// (`$1 = a` and `$1 = b`, or `unless $1 = a|b`), a test and its own `unless`.
/// Whether an argument names the variable as written (`$NAME`, `${NAME}`).
fn names_var(argv: &[String], name: &str) -> bool {
    let plain = format!("${name}");
    let braced = format!("${{{name}}}");
    argv.iter().any(|a| {
        a.contains(&braced)
            || a.match_indices(&plain).any(|(i, _)| {
                !a.get(i + plain.len()..)
                    .and_then(|r| r.chars().next())
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    })
}

/// Variables whose value is unknown for a reason a note gives, remembered to say so.
const MAX_OPAQUE_WHY: usize = 64;

/// A command substitution as a note names it: its first line, `…` for the rest, at most 80
/// characters.
fn substitution_named(raw: &str) -> String {
    let first = raw.lines().next().unwrap_or("").trim_end();
    let cut: String = first.chars().take(80).collect();
    if cut.len() < raw.trim_end().len() {
        let close = if raw.starts_with('`') { "`" } else { ")" };
        format!("{cut} … {close}")
    } else {
        cut
    }
}

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
