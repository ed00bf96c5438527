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
}

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
        Val::Opaque => format!("${{{name}}}"),
    }
}

/// The compound command the walk is in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Frame {
    /// `if ... then` first branch.
    IfThen,
    /// `elif` / `else` branches.
    IfElse,
    /// `while`/`until`/`for`/`select` bodies, `case` arms, function bodies.
    Loop,
    Case,
    /// `{ ... }` group (not a function).
    Group,
}

/// How sure the walk is that the current command runs, from the frames around it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Branch {
    /// In a loop, a `case` arm, a function or an `else` branch: may run or not, or many times.
    pub conditional: bool,
    /// Anywhere but plain `{ ... }` groups: a value set here may differ at run time.
    pub unstable: bool,
}

impl Branch {
    pub(super) fn of(frames: &[Frame]) -> Branch {
        Branch {
            conditional: frames
                .iter()
                .any(|f| !matches!(f, Frame::Group | Frame::IfThen)),
            unstable: frames.iter().any(|f| !matches!(f, Frame::Group)),
        }
    }
}

/// Files are keyed by their path without a leading `./`.
pub(crate) fn normalize_path(p: &str) -> String {
    p.trim_start_matches("./").to_string()
}
