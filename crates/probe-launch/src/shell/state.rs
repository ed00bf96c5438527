//! What the walk knows at a point of the text: variables, exports, the working directory, the
//! activated environment and the files here-documents wrote.

use std::collections::BTreeMap;
use std::rc::Rc;

use super::MAX_VALUE_BYTES;
use super::budget::{Budget, weight};

/// A variable's value as far as the text tells.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    /// Text to substitute (may itself hold literal `$1`, `${X:-d}`, `$(...)`).
    Text(String),
    /// Not knowable statically: the reference is kept as written at the point of use.
    Opaque,
    Array(Vec<String>),
    /// Set differently on paths the text cannot choose between (`cmd=...` then, inside an
    /// undecidable `if`, `cmd="nohup $cmd &"`): each value with the conditions it holds under,
    /// the value before the branch first. A command that names it is read once per value.
    Either(Vec<Alt>),
}

/// One value of a [`Val::Either`] and the conditions under which it holds (`when $1 = -d`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Alt {
    pub text: String,
    pub when: Vec<String>,
}

/// The values one variable may hold at once; more are not followed.
pub(crate) const MAX_ALTS: usize = 8;

/// The shell state at one point of the walk.
#[derive(Debug, Default, Clone)]
pub(crate) struct State {
    pub vars: BTreeMap<String, Val>,
    /// Shared with the commands recorded since it last changed ([`exports_mut`] to change it).
    pub exported: Rc<BTreeMap<String, String>>,
    pub cwd: Option<String>,
    pub context_wrappers: Vec<String>,
    pub venv: Option<String>,
    pub files: Rc<BTreeMap<String, String>>,
    /// Variables exported inside a branch the text does not decide (`if [ "$op" = vllm ];
    /// then export X=1`): the value and the branch's conditions, so that a command in the same
    /// branch runs with the value and one in another branch without it.
    pub branch_exports: BTreeMap<String, (String, Vec<String>)>,
    /// Why a variable kept as written is unknown, as its note says it: the output of a
    /// command substitution the text does not hold (`NUM_GPUS=$(python3 -c "...")`), or a
    /// default set only when the variable is empty (`if [ -z "$TP" ]; then TP=1; fi`).
    pub opaque_why: BTreeMap<String, String>,
    /// The work left to the whole reading this walk is part of (nested walks share it).
    pub budget: Rc<Budget>,
}

/// Sets (or appends to) a variable and refreshes its exported text.
pub(crate) fn set_var(state: &mut State, name: &str, val: Val, append: bool) {
    let val = bounded(val);
    if append {
        match (state.vars.get_mut(name), val) {
            (Some(Val::Array(old)), Val::Array(new)) => {
                if size(old) + size(&new) > MAX_VALUE_BYTES {
                    state.vars.insert(name.to_string(), Val::Opaque);
                } else {
                    old.extend(new);
                }
                return;
            }
            (Some(Val::Text(old)), Val::Text(new)) => {
                if old.len() + new.len() > MAX_VALUE_BYTES {
                    state.vars.insert(name.to_string(), Val::Opaque);
                } else {
                    old.push_str(&new);
                }
                return;
            }
            // Appended to every value it may hold.
            (Some(Val::Either(alts)), Val::Text(new)) => {
                if alts.iter().map(|a| a.text.len() + new.len()).sum::<usize>() > MAX_VALUE_BYTES {
                    state.vars.insert(name.to_string(), Val::Opaque);
                } else {
                    for a in alts.iter_mut() {
                        a.text.push_str(&new);
                    }
                }
                return;
            }
            (_, v) => {
                state.vars.insert(name.to_string(), v);
                return;
            }
        }
    }
    if state.exported.contains_key(name)
        && let Some(e) = exports_mut(state).get_mut(name)
    {
        *e = val_text(name, &val);
    }
    state.vars.insert(name.to_string(), val);
}

/// The exported variables, to change: when commands recorded so far share them, they are
/// copied first, and the copy is paid for.
pub(crate) fn exports_mut(state: &mut State) -> &mut BTreeMap<String, String> {
    if Rc::strong_count(&state.exported) > 1 {
        let _ = state.budget.take(weight(state.exported.iter()));
    }
    Rc::make_mut(&mut state.exported)
}

/// A value over [`MAX_VALUE_BYTES`] (`X=$X$X` doubling in a loop of lines) is not followed.
fn bounded(val: Val) -> Val {
    match &val {
        Val::Text(t) if t.len() > MAX_VALUE_BYTES => Val::Opaque,
        Val::Array(a) if size(a) > MAX_VALUE_BYTES => Val::Opaque,
        Val::Either(alts) if alts.iter().map(|a| a.text.len()).sum::<usize>() > MAX_VALUE_BYTES => {
            Val::Opaque
        }
        _ => val,
    }
}

fn size(items: &[String]) -> usize {
    items.iter().map(String::len).sum()
}

/// The text a value stands for; an unknowable value stays a reference (`${NAME}`).
pub(crate) fn val_text(name: &str, v: &Val) -> String {
    match v {
        Val::Text(t) => t.clone(),
        Val::Array(a) => a.join(" "),
        Val::Opaque | Val::Either(_) => format!("${{{name}}}"),
    }
}

/// What closes a frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Closer {
    /// `fi`
    Fi,
    /// `done`
    Done,
    /// `esac`
    Esac,
    /// `}`
    Brace,
    /// The end of the element (a command after `&&` / `||`) or of a walk (a function body).
    None,
}

/// A compound command the walk is in, and how sure it is that the commands in it run.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Frame {
    pub closer: Closer,
    /// The condition the commands here depend on, as the launch notes it (`when $1 = -d`,
    /// `in a loop`).
    pub when: Option<String>,
    /// May run or not, or many times (an `else` branch, a `case` arm, a loop body).
    pub conditional: bool,
    /// A value set here may differ at run time.
    pub unstable: bool,
    /// Many times, or not at all: a value set here is not followed (a `while` body).
    pub looped: bool,
    /// Decided false: nothing here runs.
    pub dead: bool,
    /// `if`/`elif` and `case` arms so far: the conditions of the branches before (to say
    /// `unless ...` in the next one) and whether one of them was decided true.
    pub before: Vec<String>,
    pub taken: bool,
    /// One of the branches before was not decided.
    pub undecided: bool,
    /// The frame of one element after `&&` / `||` (or of the group that element opens).
    pub chain: bool,
    /// `case SUBJECT in`: the subject as written and its value when the text fixes it.
    pub subject: Option<(String, Option<String>)>,
    /// In a `case`, the next element is an arm's pattern.
    pub expect_pattern: bool,
    /// `if`/`case` arms that may run, so far (the arm being read is the last).
    pub live_arms: usize,
    /// An `else` or a `*)` arm: one of the arms always runs.
    pub catch_all: bool,
    /// Plain values the arms set directly: (name, live arm, value), at most [`MAX_ARM_SETS`].
    pub arm_sets: Vec<(String, usize, String)>,
    /// Each arm of an `if`/`case` as a note names it (`$1 = vllm`, `otherwise`), at most
    /// [`MAX_ARMS_NAMED`].
    pub arms: Vec<String>,
    /// How many commands were recorded when the `if`/`case` opened: those after are in it.
    pub first_out: usize,
}

/// Arms of one `if`/`case` a note names.
pub(super) const MAX_ARMS_NAMED: usize = 16;

/// Values remembered per `if`/`case` to find those every arm sets alike.
pub(super) const MAX_ARM_SETS: usize = 32;

impl Frame {
    /// A frame every command of which runs once, as if it were not there (`{ ... }`, a literal
    /// loop's iteration, a called function's body).
    pub(super) fn plain(closer: Closer) -> Frame {
        Frame {
            closer,
            when: None,
            conditional: false,
            unstable: false,
            looped: false,
            dead: false,
            before: Vec::new(),
            taken: false,
            undecided: false,
            chain: false,
            subject: None,
            expect_pattern: false,
            live_arms: 0,
            catch_all: false,
            arm_sets: Vec::new(),
            arms: Vec::new(),
            first_out: 0,
        }
    }

    /// A loop body read once for all its iterations.
    pub(super) fn looped(closer: Closer, when: &str) -> Frame {
        Frame {
            when: Some(when.to_string()),
            conditional: true,
            unstable: true,
            looped: true,
            ..Frame::plain(closer)
        }
    }

    /// A branch taken under `cond`: `first` is an `if`'s first branch (taken as the default
    /// path), `decided` what the text fixes about the condition.
    pub(super) fn branch(
        closer: Closer,
        when: String,
        first: bool,
        decided: Option<bool>,
    ) -> Frame {
        match decided {
            Some(true) => Frame::plain(closer),
            Some(false) => Frame {
                dead: true,
                ..Frame::plain(closer)
            },
            None => Frame {
                when: Some(when),
                conditional: !first,
                unstable: true,
                ..Frame::plain(closer)
            },
        }
    }
}

/// How sure the walk is that the current command runs, from the frames around it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Branch {
    /// In a loop, a `case` arm, a function or an `else` branch: may run or not, or many times.
    pub conditional: bool,
    /// Anywhere but plain `{ ... }` groups: a value set here may differ at run time.
    pub unstable: bool,
    /// In a loop read once for all its iterations.
    pub looped: bool,
}

impl Branch {
    pub(super) fn of(frames: &[Frame]) -> Branch {
        Branch {
            conditional: frames.iter().any(|f| f.conditional),
            unstable: frames.iter().any(|f| f.unstable),
            looped: frames.iter().any(|f| f.looped),
        }
    }
}

/// Files are keyed by their path without a leading `./`.
pub(crate) fn normalize_path(p: &str) -> String {
    p.trim_start_matches("./").to_string()
}
