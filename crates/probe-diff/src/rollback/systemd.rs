//! The plan for a server systemd runs: which file holds each difference (the unit file, each
//! drop-in, an `EnvironmentFile=`), the exact lines to change there (a drop-in's `ExecStart=`
//! overrides the unit file's, so the unit file is never the one edited then), or the drop-ins
//! to remove where they hold only the change and the unit file's own launch is the earlier one
//! (what `systemctl revert` would do, said with what else it would drop otherwise); then
//! `daemon-reload`, the restart and how to check it took.

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
    let files = probe_launch::unit_files(unit);
    let text_of = |path: &str| {
        std::iter::once(&unit.fragment)
            .chain(&unit.drop_ins)
            .find(|f| f.path == path)
            .map(|f| f.content.as_str())
    };
    let role_of = |drop_in: bool| {
        if drop_in {
            DefiningFileRole::DropIn
        } else {
            DefiningFileRole::Unit
        }
    };
    let name = &unit.name;
    let mut edits: Vec<Edit> = Vec::new();
    let mut manual: Vec<RollbackStep> = Vec::new();
    if !flags.is_empty() {
        let pairs: Vec<(Option<String>, Option<String>)> = flags
            .iter()
            .map(|f| (f.remove.clone(), f.insert.clone()))
            .collect();
        let said: Vec<String> = flags.iter().map(FlagEdit::said).collect();
        let file = probe_launch::exec_start_file(&files);
        let block = file.and_then(|f| unit_text::exec_start(text_of(f.path)?));
        match (file, block) {
            (Some(f), Some(block)) => {
                let over = if f.drop_in {
                    format!(
                        "the drop-in's ExecStart= overrides the unit file's ({}), so editing the \
                         unit file would change nothing",
                        unit.fragment.path
                    )
                } else {
                    format!("{name} takes its ExecStart= from its unit file")
                };
                match exec_start_edit(&block.joined, &pairs) {
                    Some(new) => edits.push(Edit {
                        path: f.path.to_string(),
                        role: role_of(f.drop_in),
                        setting: String::from("ExecStart="),
                        new: Some(secrets.fill(&new, "ExecStart")),
                        old: Some(block.raw.clone()),
                        key_only: false,
                        what: said.join("; "),
                        why: format!("{}: {over}", said.join("; ")),
                        directive: Some(block.joined.clone()),
                    }),
                    None => manual.push(RollbackStep {
                        action: RollbackAction::Manual {
                            what: match probe_launch::start_script(
                                block
                                    .joined
                                    .strip_prefix("ExecStart=")
                                    .unwrap_or(&block.joined),
                            ) {
                                Some(script) => format!(
                                    "in {script}, the script {name}'s ExecStart= runs (probe did \
                                     not read it), change the flags ({})",
                                    said.join("; ")
                                ),
                                None => format!(
                                    "in {} change the flags of its ExecStart= ({})",
                                    f.path,
                                    said.join("; ")
                                ),
                            },
                        },
                        why: format!("the words are not in that line as written: {over}"),
                    }),
                }
            }
            _ => manual.push(RollbackStep {
                action: RollbackAction::Manual {
                    what: format!(
                        "change the flags of {name}'s ExecStart= ({}): the file that holds it \
                         was not read",
                        said.join("; ")
                    ),
                },
                why: String::from("systemd runs the server from that line"),
            }),
        }
    }
    for env in envs {
        let before_value = env.before.as_deref().map(|v| secrets.value(&env.var, v));
        let source = probe_launch::environment_source(unit, &files, &env.var);
        let why = env.why();
        match source {
            Some(path) => match files.iter().find(|f| f.path == path) {
                Some(f) => {
                    let line =
                        text_of(f.path).and_then(|t| unit_text::environment_line(t, &env.var));
                    match line {
                        Some(line) => edits.push(Edit {
                            path: f.path.to_string(),
                            role: role_of(f.drop_in),
                            setting: format!("Environment={}", env.var),
                            new: environment_edit(&line.joined, &env.var, before_value.as_deref()),
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
                        }),
                        None => manual.push(RollbackStep {
                            action: RollbackAction::Manual {
                                what: format!("in {} change {}= for {name}", f.path, env.var),
                            },
                            why,
                        }),
                    }
                }
                None => edits.push(Edit {
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
                    new: before_value.as_deref().map(|v| format!("{}={v}", env.var)),
                    key_only: true,
                    what: why.clone(),
                    why: format!(
                        "{why}: {name} reads it from its EnvironmentFile= {path} (the file alone: \
                         no other setting of {name} changes)"
                    ),
                    directive: None,
                }),
            },
            None => {
                let Some(value) = before_value else { continue };
                let target = files.iter().rev().find(|f| f.drop_in).or(files.first());
                let Some(target) = target else { continue };
                edits.push(Edit {
                    path: target.path.to_string(),
                    role: role_of(target.drop_in),
                    setting: format!("Environment={}", env.var),
                    old: None,
                    new: Some(format!(
                        "Environment={}",
                        environment_word(&env.var, &value)
                    )),
                    key_only: false,
                    what: why.clone(),
                    why: format!("{why}: nothing sets it for {name} now"),
                    directive: None,
                });
            }
        }
    }
    if edits.is_empty() && manual.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let changed: Vec<(&str, &str)> = edits
        .iter()
        .filter_map(|e| Some((e.path.as_str(), e.directive.as_deref()?)))
        .chain(
            // An `ExecStart=` reset before the edited one goes with it.
            files
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
        .collect();
    let revert = revert_step(unit, before, &files, &changed);
    let exact = revert.as_deref().is_some_and(|r| r.starts_with("or "))
        && manual.is_empty()
        && edits.iter().all(|e| {
            e.role == DefiningFileRole::DropIn && (e.setting == "ExecStart=" || e.new.is_none())
        });
    if exact {
        let holds: Vec<String> = edits.iter().map(|e| e.what.clone()).collect();
        for f in files.iter().filter(|f| f.drop_in) {
            out.push(RollbackStep {
                action: RollbackAction::RemoveFile {
                    file: f.path.to_string(),
                    role: DefiningFileRole::DropIn,
                },
                why: format!(
                    "it holds only this change: {}; without it the unit file's own \
                     ExecStart= is the earlier launch (a drop-in's ExecStart= overrides the unit \
                     file's, so editing the unit file would change nothing): what `{} revert \
                     {name}` does, as it removes every drop-in and here there is no other",
                    holds.join("; "),
                    systemctl(unit)
                ),
            });
        }
    } else {
        let revert_note = revert.filter(|r| r.starts_with("not "));
        for (i, e) in edits.into_iter().enumerate() {
            let why = match (&revert_note, i) {
                (Some(note), 0) => format!("{}; {note}", e.why),
                _ => e.why,
            };
            let section = e.old.is_none().then(|| String::from("[Service]"));
            out.push(RollbackStep {
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
            });
        }
    }
    out.extend(manual);
    let ctl = systemctl(unit);
    out.push(RollbackStep {
        action: RollbackAction::Run {
            command: format!("{ctl} daemon-reload"),
        },
        why: String::from("systemd reads unit files and drop-ins again only at a reload"),
    });
    out.push(RollbackStep {
        action: RollbackAction::Restart {
            command: format!("{ctl} restart {name}"),
        },
        why: format!("the server runs with the changed launch only once {name} starts again"),
    });
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
    out.push(RollbackStep {
        action: RollbackAction::Verify {
            command: Some(format!(
                "{ctl} show -p ExecStart -p Environment {}",
                super::quote(name)
            )),
            at: VerifyAt::Host,
            expect: expect.join("; "),
        },
        why: format!("what systemd runs {name} with now"),
    });
    out
}
