//! The plan for a server systemd runs: which file holds each difference (the unit file, each
//! drop-in, an `EnvironmentFile=`), the exact lines to change there (a drop-in's `ExecStart=`
//! overrides the unit file's, so the unit file is never the one edited then), or the drop-ins
//! to remove where they hold only the change and the unit file's own launch is the earlier one
//! (what `systemctl revert` would do, said with what else it would drop otherwise); then
//! `daemon-reload`, the restart and how to check it took.

use probe_launch::UnitFile;
use probe_model::{
    DefiningFileRole, LaunchConfig, RollbackAction, RollbackStep, SystemdUnit, UnitScope, VerifyAt,
};

use super::unit_text::{self, environment_edit, environment_word, exec_start_edit};
use super::words::revert_step;
use super::{EnvEdit, FlagEdit, Secrets, one_line};

/// One planned edit of a unit's file, before the steps are written.
struct Edit {
    path: String,
    role: DefiningFileRole,
    setting: String,
    old: Option<String>,
    new: Option<String>,
    key_only: bool,
    /// What it undoes, in a few words (`drop --x`, `NCCL_P2P_DISABLE unset`).
    what: String,
    why: String,
    /// The directive it changes, joined (for what a revert would also drop).
    directive: Option<String>,
}

/// `systemctl` for the unit's scope.
fn systemctl(unit: &SystemdUnit) -> String {
    match (unit.scope, unit.owner.as_deref()) {
        (UnitScope::User, Some(owner)) => {
            format!("systemctl --user -M {}", super::quote(&format!("{owner}@")))
        }
        (UnitScope::User, None) => String::from("systemctl --user"),
        (UnitScope::System, _) => String::from("systemctl"),
    }
}

/// Restarting `unit` alone (what the packages pinned into its interpreter need).
pub(crate) fn restart(unit: &SystemdUnit) -> RollbackStep {
    let name = unit.name.as_str();
    RollbackStep {
        action: RollbackAction::Restart {
            command: format!("{} restart {name}", systemctl(unit)),
        },
        why: format!("the server loads the packages pinned back only once {name} starts again"),
    }
}

/// A unit and the files that define it (the unit file, then its drop-ins), as the plan reads
/// them.
struct UnitFiles<'a> {
    unit: &'a SystemdUnit,
    files: Vec<UnitFile<'a>>,
}

impl<'a> UnitFiles<'a> {
    fn of(unit: &'a SystemdUnit) -> Self {
        UnitFiles {
            unit,
            files: probe_launch::unit_files(unit),
        }
    }

    /// The text of the file at `path`.
    fn text_of(&self, path: &str) -> Option<&'a str> {
        std::iter::once(&self.unit.fragment)
            .chain(&self.unit.drop_ins)
            .find(|f| f.path == path)
            .map(|f| f.content.as_str())
    }
}

/// A drop-in's role, or the unit file's.
fn role_of(drop_in: bool) -> DefiningFileRole {
    if drop_in {
        DefiningFileRole::DropIn
    } else {
        DefiningFileRole::Unit
    }
}

/// One difference planned: an edit of a file, or a step left to do by hand.
enum Planned {
    Edit(Edit),
    Manual(RollbackStep),
}

/// The steps for `unit`, which runs the running launch; empty when no difference is the
/// launcher's.
pub(crate) fn steps(
    unit: &SystemdUnit,
    before: &LaunchConfig,
    flags: &[FlagEdit],
    envs: &[EnvEdit],
    earlier_exec: Option<&str>,
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    let u = UnitFiles::of(unit);
    let mut planned = Vec::new();
    if !flags.is_empty() {
        planned.push(flag_edit(&u, flags, secrets));
    }
    for env in envs {
        planned.extend(env_edit(&u, env, secrets));
    }
    if planned.is_empty() {
        return Vec::new();
    }
    let (mut edits, mut manual) = (Vec::new(), Vec::new());
    for p in planned {
        match p {
            Planned::Edit(e) => edits.push(e),
            Planned::Manual(m) => manual.push(m),
        }
    }
    let mut out = file_steps(&u, before, edits, manual.is_empty());
    out.extend(manual);
    out.extend(reload_and_restart(unit));
    out.push(verify(unit, flags, envs, earlier_exec, secrets));
    out
}

/// The flags changed in the `ExecStart=` of the file that holds the one systemd runs, or said
/// to change by hand where that line was not read or does not hold the words as written.
fn flag_edit(u: &UnitFiles<'_>, flags: &[FlagEdit], secrets: &mut Secrets) -> Planned {
    let name = &u.unit.name;
    let said = flags
        .iter()
        .map(FlagEdit::said)
        .collect::<Vec<_>>()
        .join("; ");
    let file = probe_launch::exec_start_file(&u.files);
    let block = file.and_then(|f| unit_text::exec_start(u.text_of(f.path)?));
    let (Some(f), Some(block)) = (file, block) else {
        return Planned::Manual(RollbackStep {
            action: RollbackAction::Manual {
                what: format!(
                    "change the flags of {name}'s ExecStart= ({said}): the file that holds it \
                     was not read",
                ),
            },
            why: String::from("systemd runs the server from that line"),
        });
    };
    let over = if f.drop_in {
        format!(
            "the drop-in's ExecStart= overrides the unit file's ({}), so editing the \
             unit file would change nothing",
            u.unit.fragment.path
        )
    } else {
        format!("{name} takes its ExecStart= from its unit file")
    };
    let pairs: Vec<(Option<String>, Option<String>)> = flags
        .iter()
        .map(|f| (f.remove.clone(), f.insert.clone()))
        .collect();
    match exec_start_edit(&block.joined, &pairs) {
        Some(new) => Planned::Edit(Edit {
            path: f.path.to_string(),
            role: role_of(f.drop_in),
            setting: String::from("ExecStart="),
            new: Some(secrets.fill(&new, "ExecStart")),
            old: Some(block.raw.clone()),
            key_only: false,
            what: said.clone(),
            why: format!("{said}: {over}"),
            directive: Some(block.joined.clone()),
        }),
        None => Planned::Manual(RollbackStep {
            action: RollbackAction::Manual {
                what: exec_start_by_hand(name, f.path, &block.joined, &said),
            },
            why: format!("the words are not in that line as written: {over}"),
        }),
    }
}

/// What to change by hand where the `ExecStart=` line (`joined`) in `path` does not hold the
/// flags' words: the script it runs, else the line itself.
fn exec_start_by_hand(name: &str, path: &str, joined: &str, said: &str) -> String {
    match probe_launch::start_script(joined.strip_prefix("ExecStart=").unwrap_or(joined)) {
        Some(script) => format!(
            "in {script}, the script {name}'s ExecStart= runs (probe did \
             not read it), change the flags ({said})"
        ),
        None => format!("in {path} change the flags of its ExecStart= ({said})"),
    }
}

/// `env` back to its earlier value where it is set: its `Environment=` line, its
/// `EnvironmentFile=`, or a new line in the last drop-in where nothing sets it now; `None`
/// when nothing sets it and it was not set before.
fn env_edit(u: &UnitFiles<'_>, env: &EnvEdit, secrets: &mut Secrets) -> Option<Planned> {
    let before_value = env.before.as_deref().map(|v| secrets.value(&env.var, v));
    let Some(path) = probe_launch::environment_source(u.unit, &u.files, &env.var) else {
        return unset_env_edit(u, env, &before_value?).map(Planned::Edit);
    };
    Some(match u.files.iter().find(|f| f.path == path) {
        Some(f) => environment_line_edit(u, f, env, before_value.as_deref()),
        None => Planned::Edit(environment_file_edit(
            &u.unit.name,
            path,
            env,
            before_value.as_deref(),
        )),
    })
}

/// `env`'s word in the `Environment=` line of `f`, a unit file or a drop-in.
fn environment_line_edit(
    u: &UnitFiles<'_>,
    f: &UnitFile<'_>,
    env: &EnvEdit,
    before_value: Option<&str>,
) -> Planned {
    let name = &u.unit.name;
    let why = env.why();
    let line = u
        .text_of(f.path)
        .and_then(|t| unit_text::environment_line(t, &env.var));
    let Some(line) = line else {
        return Planned::Manual(RollbackStep {
            action: RollbackAction::Manual {
                what: format!("in {} change {}= for {name}", f.path, env.var),
            },
            why,
        });
    };
    Planned::Edit(Edit {
        path: f.path.to_string(),
        role: role_of(f.drop_in),
        setting: format!("Environment={}", env.var),
        new: environment_edit(&line.joined, &env.var, before_value),
        old: Some(line.raw.clone()),
        key_only: false,
        what: why.clone(),
        why: format!(
            "{why}: {} sets it for {name} ({})",
            f.path,
            if f.drop_in {
                "a drop-in"
            } else {
                "the unit file"
            }
        ),
        directive: Some(line.joined.clone()),
    })
}

/// `env`'s line in the `EnvironmentFile=` at `path`, matched by its key.
fn environment_file_edit(
    name: &str,
    path: &str,
    env: &EnvEdit,
    before_value: Option<&str>,
) -> Edit {
    let why = env.why();
    Edit {
        path: path.to_string(),
        role: DefiningFileRole::EnvironmentFile,
        setting: env.var.clone(),
        // Matched by its key: the file is read as variables, and a redacted
        // value is never written into a step.
        old: Some(match env.after.as_deref() {
            Some(v) if !v.contains(probe_model::text::REDACTED_PREFIX) => {
                format!("{}={v}", env.var)
            }
            _ => format!("{}=", env.var),
        }),
        new: before_value.map(|v| format!("{}={v}", env.var)),
        key_only: true,
        what: why.clone(),
        why: format!(
            "{why}: {name} reads it from its EnvironmentFile= {path} (the file alone: \
             no other setting of {name} changes)"
        ),
        directive: None,
    }
}

/// A new `Environment=` line for `env` (earlier `value`), which nothing sets now: in the last
/// drop-in, else the unit file.
fn unset_env_edit(u: &UnitFiles<'_>, env: &EnvEdit, value: &str) -> Option<Edit> {
    let target = u
        .files
        .iter()
        .rev()
        .find(|f| f.drop_in)
        .or(u.files.first())?;
    let why = env.why();
    Some(Edit {
        path: target.path.to_string(),
        role: role_of(target.drop_in),
        setting: format!("Environment={}", env.var),
        old: None,
        new: Some(format!("Environment={}", environment_word(&env.var, value))),
        key_only: false,
        what: why.clone(),
        why: format!("{why}: nothing sets it for {} now", u.unit.name),
        directive: None,
    })
}

/// The steps on the unit's files: the drop-ins removed where they hold only the change and no
/// step is by hand (`no_manual`), else each edit; a revert's note on the first.
fn file_steps(
    u: &UnitFiles<'_>,
    before: &LaunchConfig,
    edits: Vec<Edit>,
    no_manual: bool,
) -> Vec<RollbackStep> {
    let changed = changed_directives(u, &edits);
    let revert = revert_step(u.unit, before, &u.files, &changed);
    let exact = revert.as_deref().is_some_and(|r| r.starts_with("or "))
        && no_manual
        && edits.iter().all(|e| {
            e.role == DefiningFileRole::DropIn && (e.setting == "ExecStart=" || e.new.is_none())
        });
    if exact {
        remove_drop_ins(u, &edits)
    } else {
        edit_lines(edits, revert.filter(|r| r.starts_with("not ")))
    }
}

/// The directives the edits change, as (file, directive joined).
fn changed_directives<'a>(u: &'a UnitFiles<'_>, edits: &'a [Edit]) -> Vec<(&'a str, &'a str)> {
    edits
        .iter()
        .filter_map(|e| Some((e.path.as_str(), e.directive.as_deref()?)))
        .chain(
            // An `ExecStart=` reset before the edited one goes with it.
            u.files
                .iter()
                .filter(|f| {
                    edits
                        .iter()
                        .any(|e| e.path == f.path && e.setting == "ExecStart=")
                })
                .flat_map(|f| {
                    f.directives
                        .iter()
                        .filter(|d| d.as_str() == "ExecStart=")
                        .map(move |d| (f.path, d.as_str()))
                }),
        )
        .collect()
}

/// Every drop-in removed, as `systemctl revert` would: they hold only the change.
fn remove_drop_ins(u: &UnitFiles<'_>, edits: &[Edit]) -> Vec<RollbackStep> {
    let holds: Vec<String> = edits.iter().map(|e| e.what.clone()).collect();
    u.files
        .iter()
        .filter(|f| f.drop_in)
        .map(|f| RollbackStep {
            action: RollbackAction::RemoveFile {
                file: f.path.to_string(),
                role: DefiningFileRole::DropIn,
            },
            why: format!(
                "it holds only this change: {}; without it the unit file's own \
                 ExecStart= is the earlier launch (a drop-in's ExecStart= overrides the unit \
                 file's, so editing the unit file would change nothing): what `{} revert \
                 {}` does, as it removes every drop-in and here there is no other",
                holds.join("; "),
                systemctl(u.unit),
                u.unit.name
            ),
        })
        .collect()
}

/// Each edit as a step, the first with what a revert would not do (`revert_note`).
fn edit_lines(edits: Vec<Edit>, revert_note: Option<String>) -> Vec<RollbackStep> {
    edits
        .into_iter()
        .enumerate()
        .map(|(i, e)| {
            let why = match (&revert_note, i) {
                (Some(note), 0) => format!("{}; {note}", e.why),
                _ => e.why,
            };
            let section = e.old.is_none().then(|| String::from("[Service]"));
            RollbackStep {
                action: RollbackAction::EditLine {
                    file: e.path,
                    role: e.role,
                    setting: e.setting,
                    old: e.old,
                    new: e.new,
                    section,
                    key_only: e.key_only,
                },
                why,
            }
        })
        .collect()
}

/// `daemon-reload`, then the restart.
fn reload_and_restart(unit: &SystemdUnit) -> [RollbackStep; 2] {
    let ctl = systemctl(unit);
    let name = &unit.name;
    [
        RollbackStep {
            action: RollbackAction::Run {
                command: format!("{ctl} daemon-reload"),
            },
            why: String::from("systemd reads unit files and drop-ins again only at a reload"),
        },
        RollbackStep {
            action: RollbackAction::Restart {
                command: format!("{ctl} restart {name}"),
            },
            why: format!("the server runs with the changed launch only once {name} starts again"),
        },
    ]
}

/// The check that systemd runs the unit with the earlier launch: its `ExecStart=` and
/// environment.
fn verify(
    unit: &SystemdUnit,
    flags: &[FlagEdit],
    envs: &[EnvEdit],
    earlier_exec: Option<&str>,
    secrets: &mut Secrets,
) -> RollbackStep {
    let name = &unit.name;
    let mut expect: Vec<String> = match earlier_exec {
        Some(exec) => vec![format!("ExecStart= runs {}", one_line(exec))],
        None if flags.is_empty() => Vec::new(),
        None => vec![format!(
            "ExecStart= with {}",
            flags
                .iter()
                .map(FlagEdit::said)
                .collect::<Vec<_>>()
                .join("; ")
        )],
    };
    for env in envs {
        expect.push(match &env.before {
            Some(v) => format!(
                "Environment= or an EnvironmentFile= sets {}={}",
                env.var,
                secrets.value(&env.var, v)
            ),
            None => format!("nothing sets {}", env.var),
        });
    }
    RollbackStep {
        action: RollbackAction::Verify {
            command: Some(format!(
                "{} show -p ExecStart -p Environment {}",
                systemctl(unit),
                super::quote(name)
            )),
            at: VerifyAt::Host,
            expect: expect.join("; "),
        },
        why: format!("what systemd runs {name} with now"),
    }
}
