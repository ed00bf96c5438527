//! One simple command run: its words expanded, builtins that change the state, `eval`, `source`
//! of a file the text wrote, here-documents remembered, output redirections.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::{ShellCommand, Simple, Walk, commands, contradictory};
use crate::shell::budget::{self, Budget, ITEM, weight};
use crate::shell::builtins::{self, Builtin};
use crate::shell::expand::{
    assigned, basename, expand_simple, expand_word, heredoc_text, is_assignment, unknown_words,
};
use crate::shell::flow;
use crate::shell::lexer::{RedirOp, Tok, Word, word_lit};
use crate::shell::state::{Branch, Val, normalize_path, val_text};
use crate::shell::{MAX_DEPTH, MAX_EXPORTS, MAX_FILE_BYTES, MAX_FILES};

impl Walk<'_> {
    pub(super) fn run_simple(&mut self, toks: &[&Tok]) {
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

    /// One reading of a simple command: its assignments, a builtin, a function, `eval`,
    /// `source`, or a command recorded with its context.
    pub(super) fn run_words(&mut self, simple: &Simple, words: &[&Word]) {
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
    pub(super) fn note_branch_exports(
        &mut self,
        cmd: &str,
        args: &[String],
        words: &[&Word],
        branch: Branch,
    ) {
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
    pub(super) fn exported_here(&self) -> Rc<BTreeMap<String, String>> {
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
    pub(super) fn source_in_text(&mut self, cmd: &str, args: &[String]) -> bool {
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

    /// `eval ARGS` (`wrapper` = `eval`) or a `source`d file: the text is walked as one of its
    /// own in this shell, one level deeper (and paid for from the same budget: nested evals of
    /// growing values stop when it is spent). What it runs keeps the conditions around it.
    pub(super) fn eval(&mut self, inner: &str, wrapper: Option<&str>) {
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
    pub(super) fn remember_file(&mut self, simple: &Simple, argv: &[String]) {
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
    pub(super) fn output_redirects(&self, simple: &Simple) -> Vec<(String, String)> {
        simple
            .redirs
            .iter()
            .filter(|(fd, op, _)| op.writes_output() && fd.unwrap_or(1) <= 2)
            .map(|(_, op, w)| (op.as_str().to_string(), expand_simple(w, self.state)))
            .filter(|(_, target)| !target.starts_with('&'))
            .collect()
    }
}
