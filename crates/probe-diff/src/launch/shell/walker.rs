//! Walks the tokens command by command: control keywords, assignments, builtins that change the
//! state, `eval`, pipes into `tee`, and the simple commands with their context.

use std::collections::BTreeMap;

use super::budget::{self, Budget, ITEM, weight};
use super::builtins::{self, Builtin};
use super::expand::{assigned, basename, expand_simple, expand_word, heredoc_text, is_assignment};
use super::lexer::{Heredoc, Op, Part, RedirOp, Tok, Word, lex, word_lit};
use super::state::{Branch, Frame, State, Val, normalize_path, set_var, val_text};
use super::{MAX_DEPTH, MAX_FILE_BYTES, MAX_FILES, MAX_TOKENS};

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
    };
    let mut i = 0;
    // One pipeline element at a time.
    let mut cur: Vec<&Tok> = Vec::new();
    while i <= toks.len() && !walk.state.budget.exhausted() {
        let op = match toks.get(i) {
            Some(Tok::Op(op)) => Some(*op),
            None => None,
            Some(t) => {
                cur.push(t);
                i += 1;
                continue;
            }
        };
        if let Some(next) = function_header(&toks, i, &cur) {
            walk.frames.push(Frame::Loop);
            cur.clear();
            i = next;
            continue;
        }
        walk.end_of_element(&cur, op);
        cur.clear();
        i += 1;
    }
    walk.out
}

/// `name() {`: a `(` right after one word and followed by `)` opens a function body. Returns
/// the index after the header (and after the `{` that opens the body).
fn function_header(toks: &[Tok], i: usize, cur: &[&Tok]) -> Option<usize> {
    if !(matches!(toks.get(i), Some(Tok::Op(Op::Open)))
        && cur.len() == 1
        && matches!(toks.get(i + 1), Some(Tok::Op(Op::Close))))
    {
        return None;
    }
    let after = i + 2;
    Some(match toks.get(after) {
        Some(Tok::Word(w)) if w.raw() == "{" => after + 1,
        _ => after,
    })
}

/// A leading `NAME=value` of a command.
struct Assign {
    name: String,
    val: Val,
    append: bool,
}

impl Walk<'_> {
    /// One pipeline element ended by `op` (`None` at the end of the text).
    fn end_of_element(&mut self, cur: &[&Tok], op: Option<Op>) {
        if !cur.is_empty() {
            match self.tee_targets(cur) {
                Some(targets) => self.attach_tee(targets),
                None => {
                    let before = self.out.len();
                    self.run_simple(cur);
                    if op == Some(Op::Pipe) && self.out.len() > before {
                        self.pending_tee = Some(self.out.len() - 1);
                    }
                }
            }
        }
        if op != Some(Op::Pipe) {
            self.pending_tee = None;
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
        if words.is_empty() {
            return;
        }
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
        let argv: Vec<String> = rest
            .iter()
            .flat_map(|w| expand_word(w, self.state))
            .collect();
        let Some((cmd, args)) = argv.split_first() else {
            return;
        };
        let here = simple.here_string(self.state);
        let input = simple.heredoc.map(|h| heredoc_text(h, self.state));
        let call = Builtin {
            cmd,
            args,
            words: rest,
            input: input.as_deref().or(here.as_deref()),
            branch,
        };
        if builtins::run(&call, self.state) {
            return;
        }
        if cmd == "eval" && self.depth < MAX_DEPTH {
            self.eval(args);
            return;
        }
        // The command and the state copied with it.
        let cost = ITEM + budget::words(&argv) + weight(&prefix_env);
        if !self.state.budget.take(cost) {
            return;
        }
        self.remember_file(&simple);
        let redirects = self.output_redirects(&simple);
        self.out.push(ShellCommand {
            argv,
            prefix_env,
            exported: self.state.exported.clone(),
            cwd: self.state.cwd.clone(),
            context_wrappers: self.state.context_wrappers.clone(),
            venv: self.state.venv.clone(),
            redirects,
            tee: Vec::new(),
            files: self.state.files.clone(),
        });
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
            match w.raw().as_str() {
                "if" => self.frames.push(Frame::IfThen),
                "then" | "do" | "!" => {}
                "{" => self.frames.push(Frame::Group),
                "elif" | "else" => {
                    if let Some(f) = self.frames.last_mut() {
                        *f = Frame::IfElse;
                    }
                }
                "while" | "until" | "for" | "select" => {
                    self.frames.push(Frame::Loop);
                    return None;
                }
                "case" => {
                    self.frames.push(Frame::Case);
                    return None;
                }
                "fi" | "done" | "esac" | "}" => {
                    self.frames.pop();
                }
                _ => break,
            }
            k += 1;
        }
        Some(k)
    }

    /// The `NAME=value` words before the command, and how many there are.
    fn leading_assignments(&self, words: &[&Word]) -> (Vec<Assign>, usize) {
        let mut assigns = Vec::new();
        for w in words {
            let lit = word_lit(w);
            let Some((name, _, append)) = is_assignment(&lit) else {
                break;
            };
            assigns.push(Assign {
                name: name.to_string(),
                val: assigned(w, self.state),
                append,
            });
        }
        let n = assigns.len();
        (assigns, n)
    }

    /// A command of assignments only: the variables are set, as far as the branch allows.
    fn assign_all(&mut self, assigns: Vec<Assign>, branch: Branch) {
        for Assign { name, val, append } in assigns {
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
                _ if !branch.conditional && !self.state.vars.contains_key(&name) => {
                    set_var(self.state, &name, val, append);
                }
                _ => {
                    self.state.vars.insert(name, Val::Opaque);
                }
            }
        }
    }

    /// `eval ARGS`: the joined arguments are walked as a text of their own, one level deeper
    /// (and paid for from the same budget: nested evals of growing values stop when it is spent).
    fn eval(&mut self, args: &[String]) {
        let inner = args.join(" ");
        let outer = self.state.budget.clone();
        self.state.budget = Budget::nested(&outer);
        let mut sub = commands(&inner, self.state, self.depth + 1);
        self.state.budget = outer;
        for c in &mut sub {
            c.context_wrappers.insert(0, "eval".into());
        }
        self.out.extend(sub);
    }

    /// `cat > FILE <<EOF`: remembers what the here-document wrote.
    fn remember_file(&mut self, simple: &Simple) {
        let Some(h) = simple.heredoc else { return };
        for (_, op, w) in &simple.redirs {
            if matches!(op, RedirOp::Out | RedirOp::Append)
                && self.state.files.len() < MAX_FILES
                && h.body.len() <= MAX_FILE_BYTES
            {
                let target = expand_simple(w, self.state);
                std::rc::Rc::make_mut(&mut self.state.files)
                    .insert(normalize_path(&target), h.body.clone());
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

//END
