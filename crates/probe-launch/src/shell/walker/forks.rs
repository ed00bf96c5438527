//! A command that names variables of several values: read once per value, or the variable kept
//! as written and said to be undecided.

use super::{Assign, MAX_WHEN, Simple, Walk, contradictory, either};
use crate::shell::lexer::{Part, Word};
use crate::shell::state::{Alt, Branch, Val};

impl Walk<'_> {
    /// The readings of a command that names variables holding several values: the values of
    /// each reading and its conditions (at most [`MAX_VARIANTS`]).
    pub(super) fn forks(&self, words: &[&Word]) -> Vec<Fork> {
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
    pub(super) fn alts_here(&self, alts: &[Alt]) -> Vec<Alt> {
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
    pub(super) fn undecided_notes(&self, argv: &[String]) -> Vec<String> {
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
    pub(super) fn run_forked(&mut self, simple: &Simple, words: &[&Word], forks: Vec<Fork>) {
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
}

/// Readings of one command when the variables it names hold several values.
const MAX_VARIANTS: usize = 8;
/// One reading of a command that names variables of several values: the value each takes,
/// and the conditions of that reading.
type Fork = (Vec<(String, String)>, Vec<String>);
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
