//! Assignments: leading `NAME=value` words, what an arm or a branch sets, and the value a
//! variable keeps when a branch may or may not have set it.

use super::{Assign, Walk, either};
use crate::shell::expand::{assigned, is_assignment};
use crate::shell::lexer::{Part, Word, word_lit};
use crate::shell::state::{Alt, Branch, Closer, MAX_ALTS, MAX_ARM_SETS, Val, set_var};

impl Walk<'_> {
    /// Remembers a plain value an `if`/`case` arm sets directly, for [`Walk::settle`].
    pub(super) fn note_arm_set(&mut self, name: &str, val: &Val, append: bool) {
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
    pub(super) fn leading_assignments(&self, words: &[&Word]) -> (Vec<Assign>, usize) {
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
    pub(super) fn assign_all(&mut self, assigns: Vec<Assign>, branch: Branch) {
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
    pub(super) fn tests_empty(&self, name: &str) -> bool {
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
    pub(super) fn both_values(&self, name: &str, val: Val, append: bool) -> Val {
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
}

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

/// Variables whose value is unknown for a reason a note gives, remembered to say so.
const MAX_OPAQUE_WHY: usize = 64;
