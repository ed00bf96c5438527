//! `probe diff A B`'s rollback plan: what rolling B's server back to A's launch takes on the
//! launcher that runs it (a systemd unit, a Compose service, a Kubernetes workload, a
//! container, a process started by hand), as typed steps ([`probe_model::RollbackPlan`]) in
//! the order they are done: stop, change, reload, start, verify. Secrets never appear: a value
//! the snapshots hold redacted is a named placeholder the plan says where to find. The
//! checklist `probe diff --rollback` prints is [`lines`], the plan's text. Nothing is run.

mod launchers;
mod secrets;
mod systemd;
mod unit_text;
mod verify;
pub(crate) mod words;

use probe_model::KeyArea;
use probe_model::{
    Change, LaunchConfig, LaunchOrigin, Launcher, RollbackAction, RollbackPlan, RollbackStep,
    Snapshot, SnapshotDiff,
};

pub(crate) use secrets::Secrets;

pub(crate) use words::{differing_flags, launch_text, pins};
use words::{driver_steps, env_assignment, matters, power_steps, quote, text};

/// One flag of the running launch to change: `remove` (the running one's words) becomes
/// `insert` (the earlier one's).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlagEdit {
    pub(crate) key: String,
    pub(crate) remove: Option<String>,
    pub(crate) insert: Option<String>,
    /// What the verdict said of the change (`explains the slower decode`), when it judged it.
    pub(crate) judged: Option<String>,
}

impl FlagEdit {
    /// `drop --x`, `restore --x 3`, `--x 5 -> --x 3`.
    pub(crate) fn said(&self) -> String {
        let what = match (&self.remove, &self.insert) {
            (Some(r), Some(i)) => format!("{r} -> {i}"),
            (Some(r), None) => format!("drop {r}"),
            (None, Some(i)) => format!("restore {i}"),
            (None, None) => self.key.clone(),
        };
        match &self.judged {
            Some(j) => format!("{what}, which {j}"),
            None => what,
        }
    }
}

/// One environment variable of the running launch to change back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EnvEdit {
    pub(crate) var: String,
    pub(crate) before: Option<String>,
    pub(crate) after: Option<String>,
    pub(crate) judged: Option<String>,
}

impl EnvEdit {
    pub(crate) fn why(&self) -> String {
        let what = match (&self.before, &self.after) {
            (Some(_), Some(_)) => format!("{} back to its earlier value", self.var),
            (None, Some(_)) => format!("{} was not set before", self.var),
            (Some(_), None) => format!("{} was set before", self.var),
            (None, None) => self.var.clone(),
        };
        match &self.judged {
            Some(j) => format!("{what}, which {j}"),
            None => what,
        }
    }
}

/// What the verdict said of a change, in a few words.
fn judged(change: &Change) -> Option<String> {
    let v = change.verdict.as_ref()?;
    let word = match v.assessment {
        probe_model::Assessment::Explains => "explains the symptom",
        probe_model::Assessment::Consistent => "is consistent with the symptom",
        probe_model::Assessment::RuledOut => "is ruled out as its cause",
    };
    Some(word.to_string())
}

/// The flags and variables that differ between the launches, from the running one to the
/// earlier one.
fn launch_edits(
    before: &LaunchConfig,
    after: &LaunchConfig,
    changes: &[Change],
) -> (Vec<FlagEdit>, Vec<EnvEdit>) {
    let mut flags = Vec::new();
    let mut envs: Vec<EnvEdit> = Vec::new();
    for c in changes {
        if let Some(var) = c.key_name(KeyArea::Env) {
            envs.push(EnvEdit {
                var: var.to_string(),
                before: text(c.before.as_ref()),
                after: text(c.after.as_ref()),
                judged: judged(c),
            });
            continue;
        }
        if !c.consequence_of.is_empty() {
            continue;
        }
        let flag = c.key.replace(['.', '_'], "-");
        let written = |l: &LaunchConfig| {
            l.options
                .get(&c.key)
                .or_else(|| l.options.get(&flag))
                .map(|o| o.written.clone())
        };
        let (remove, insert) = (written(after), written(before));
        if remove.is_none() && insert.is_none() {
            continue;
        }
        // A setting the engine reads from its environment, written `VAR=value`.
        let assignment = insert
            .as_deref()
            .and_then(env_assignment)
            .or_else(|| remove.as_deref().and_then(env_assignment));
        if let Some((var, _, _)) = assignment {
            if !matters(before, changes, var) {
                continue;
            }
            let value = |w: &Option<String>| {
                w.as_deref()
                    .and_then(env_assignment)
                    .map(|(_, v, _)| v.to_string())
            };
            envs.push(EnvEdit {
                var: var.to_string(),
                before: value(&insert),
                after: value(&remove),
                judged: judged(c),
            });
            continue;
        }
        flags.push(FlagEdit {
            key: c.key.clone(),
            remove,
            insert,
            judged: judged(c),
        });
    }
    (flags, envs)
}

/// Words as a POSIX shell reads them back.
pub(crate) fn shell_words(words: &[String]) -> String {
    words.iter().map(|w| quote(w)).collect::<Vec<_>>().join(" ")
}

/// The launcher that runs `launch` on `snapshot`.
fn launcher_of(snapshot: &Snapshot, launch: &LaunchConfig) -> Launcher {
    if let Some(unit) = crate::run::unit_of(snapshot, launch) {
        return Launcher::Systemd {
            unit: unit.name.clone(),
        };
    }
    let origins: Vec<LaunchOrigin> = std::iter::once(launch.source.origin())
        .chain(launch.source.also_seen())
        .collect();
    for origin in &origins {
        let LaunchOrigin::Container { name } = origin else {
            continue;
        };
        let Some(c) = launchers::container(snapshot, name) else {
            continue;
        };
        if let Some(compose) = &c.compose {
            return Launcher::Compose {
                project: compose.project.clone(),
                service: compose.service.clone(),
                files: compose.config_files.clone(),
            };
        }
        if let Some(pod) = &c.pod {
            return Launcher::Kubernetes {
                namespace: pod.namespace.clone(),
                pod: pod.pod.clone(),
                owner: pod.owner.as_ref().and_then(|o| {
                    use probe_model::PodOwnerKind as K;
                    let resource = match o.kind {
                        K::Deployment => "deployment",
                        K::StatefulSet => "statefulset",
                        K::LeaderWorkerSet => "leaderworkerset",
                        K::Static => "static-pod",
                        // A DaemonSet, a Job or a bare ReplicaSet: the name cannot tell which.
                        K::Generated => return None,
                    };
                    Some(format!("{resource}/{}", o.name))
                }),
            };
        }
        return Launcher::Container { name: name.clone() };
    }
    for origin in &origins {
        if let LaunchOrigin::Process { pid } = origin {
            return Launcher::Process { pid: Some(*pid) };
        }
    }
    Launcher::Unknown
}

/// The plan for rolling the server `after` runs (`first`: the first server both snapshots run,
/// as (before, after)) back to the launch `before` ran, with what the verdict compared to
/// check it by.
pub(crate) fn plan(
    snaps: (&Snapshot, &Snapshot),
    first: Option<(&LaunchConfig, &LaunchConfig)>,
    changes: &[Change],
    diff: &SnapshotDiff,
) -> RollbackPlan {
    let mut secrets = Secrets::new(&diff.before.host);
    let (launcher, mut steps) = steps_for(snaps, first, changes, &diff.before.host, &mut secrets);
    if !steps.is_empty() {
        steps.extend(verify::steps(snaps, first, diff));
    }
    RollbackPlan {
        launcher,
        steps,
        placeholders: secrets.into_placeholders(),
    }
}

/// The plan for one host's running launch (`after`) back to an earlier one of the same host
/// (`before`: the previous run, a history line): the steps of [`plan`] on the launcher that
/// runs it, without the checks that compare two hosts. The host report's restore text is
/// this plan's lines.
pub(crate) fn plan_within(
    snapshot: &Snapshot,
    before: &LaunchConfig,
    after: &LaunchConfig,
    changes: &[Change],
) -> RollbackPlan {
    let host = snapshot
        .host
        .hostname
        .clone()
        .unwrap_or_else(|| snapshot.target.clone());
    let mut secrets = Secrets::new(&host);
    let (launcher, steps) = steps_for(
        (snapshot, snapshot),
        Some((before, after)),
        changes,
        &host,
        &mut secrets,
    );
    RollbackPlan {
        launcher,
        steps,
        placeholders: secrets.into_placeholders(),
    }
}

/// The launcher and the steps (stop, change, reload, start, and the launcher's own check)
/// that roll the server `after` runs back to `before`'s launch; `host`: the earlier side's name.
fn steps_for(
    snaps: (&Snapshot, &Snapshot),
    first: Option<(&LaunchConfig, &LaunchConfig)>,
    changes: &[Change],
    host: &str,
    secrets: &mut Secrets,
) -> (Launcher, Vec<RollbackStep>) {
    let mut steps: Vec<RollbackStep> = Vec::new();
    let mut launcher = Launcher::Unknown;
    if let Some(launches) = first {
        launcher = launcher_of(snaps.1, launches.1);
        steps.extend(launch_steps(
            snaps, launches, &launcher, changes, host, secrets,
        ));
    }
    let interpreter =
        first.and_then(|(b, a)| a.interpreter.as_deref().or(b.interpreter.as_deref()));
    let pinned = pins(changes, interpreter);
    let host_steps = host_steps(pinned.clone(), changes, secrets);
    // Packages and power go before the restart that picks them up.
    let restart_at = steps
        .iter()
        .position(|s| matches!(s.action, RollbackAction::Restart { .. }));
    let at = restart_at.unwrap_or(steps.len());
    steps.splice(at..at, host_steps);
    // Pinned packages with no launch edit: the launcher restarts the server alone.
    if pinned.is_some() && restart_at.is_none() {
        steps.extend(first.and_then(|(_, after)| restart_alone(&launcher, snaps.1, after)));
    }
    (launcher, steps)
}

/// The steps on `launcher` that change the running launch (`after`) back to `before`.
fn launch_steps(
    (before_snap, after_snap): (&Snapshot, &Snapshot),
    (before, after): (&LaunchConfig, &LaunchConfig),
    launcher: &Launcher,
    changes: &[Change],
    host: &str,
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    let (flags, envs) = launch_edits(before, after, changes);
    match launcher {
        Launcher::Systemd { .. } => {
            // What the earlier side's own unit ran, where a unit ran it (on another host:
            // on this one, the unit's ExecStart= is the running launch's, not the earlier).
            let earlier = crate::run::unit_of(before_snap, before)
                .filter(|_| !std::ptr::eq(before_snap, after_snap))
                .and_then(|u| u.exec_start.last())
                .map(|e| secrets.fill(e, "ExecStart"));
            crate::run::unit_of(after_snap, after)
                .map(|unit| {
                    systemd::steps(unit, before, &flags, &envs, earlier.as_deref(), secrets)
                })
                .unwrap_or_default()
        }
        Launcher::Compose { .. } => {
            let image = launchers::image_back(before_snap, changes);
            launchers::compose(
                after_snap,
                launcher,
                before,
                &flags,
                &envs,
                image.as_ref(),
                secrets,
            )
        }
        Launcher::Kubernetes { .. } => launchers::kubernetes(launcher, &flags, &envs),
        Launcher::Container { name } => {
            launchers::container_run(name, before, &flags, &envs, secrets)
        }
        Launcher::Process { .. } | Launcher::Unknown => {
            if flags.is_empty() && envs.is_empty() {
                Vec::new()
            } else {
                launchers::by_hand(launcher, before, host, secrets)
            }
        }
    }
}

/// The steps on the host beside the launch: the packages pinned back (`pinned`), the power
/// limits, the driver and the model.
fn host_steps(
    pinned: Option<String>,
    changes: &[Change],
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    let mut host_steps = Vec::new();
    if let Some(pin) = pinned {
        host_steps.push(RollbackStep {
            action: RollbackAction::Run { command: pin },
            why: String::from(
                "the earlier package versions, into the interpreter that serves (then restart it)",
            ),
        });
    }
    for command in power_steps(changes) {
        host_steps.push(RollbackStep {
            action: RollbackAction::Run { command },
            why: String::from("the earlier power limit (lasts until the next reboot)"),
        });
    }
    for what in driver_steps(changes) {
        host_steps.push(RollbackStep {
            action: RollbackAction::Manual { what },
            why: String::from("a driver is not changed by a script line"),
        });
    }
    let model = |c: &&Change| matches!(c.key_area(), KeyArea::Model | KeyArea::ModelConfig);
    for change in changes.iter().filter(model) {
        if let Some(was) = text(change.before.as_ref()) {
            host_steps.push(RollbackStep {
                action: RollbackAction::Manual {
                    what: format!("{} back to {}", change.key, secrets.fill(&was, &change.key)),
                },
                why: String::from("the model the earlier launch served"),
            });
        }
    }
    host_steps
}

/// The step that restarts the server `after` runs through its launcher, where nothing else in
/// the plan does.
fn restart_alone(
    launcher: &Launcher,
    after_snap: &Snapshot,
    after: &LaunchConfig,
) -> Option<RollbackStep> {
    let why = String::from("the server loads the packages pinned back only once it starts again");
    match launcher {
        Launcher::Systemd { .. } => crate::run::unit_of(after_snap, after).map(systemd::restart),
        Launcher::Compose {
            project, service, ..
        } => Some(RollbackStep {
            action: RollbackAction::Restart {
                command: format!(
                    "docker compose -p {} restart {}",
                    quote(project),
                    quote(service)
                ),
            },
            why,
        }),
        Launcher::Container { name } => Some(RollbackStep {
            action: RollbackAction::Restart {
                command: format!("docker restart {}", quote(name)),
            },
            why,
        }),
        Launcher::Kubernetes { .. } | Launcher::Process { .. } | Launcher::Unknown => {
            Some(RollbackStep {
                action: RollbackAction::Manual {
                    what: String::from("restart the server the way it was started"),
                },
                why,
            })
        }
    }
}

/// The plan as the checklist `probe diff --rollback` prints: what differs (`flag: ...`), then
/// each step in order, one line each.
pub(crate) fn lines(plan: &RollbackPlan, flags: &[String]) -> Vec<String> {
    let mut out: Vec<String> = flags
        .iter()
        .map(|f| match f.strip_prefix("drop ") {
            Some(dropped) => format!("flag: drop {dropped}"),
            None => format!("flag: restore {f}"),
        })
        .collect();
    out.extend(plan.steps.iter().map(|s| line(&plan.launcher, s)));
    for p in &plan.placeholders {
        out.push(format!(
            "secret: {} stands for a value probe never prints: fill it in from {}",
            p.text, p.lives
        ));
    }
    out
}

/// One step as a line of the checklist.
fn line(launcher: &Launcher, step: &RollbackStep) -> String {
    let why = &step.why;
    match &step.action {
        RollbackAction::EditLine {
            file,
            role,
            old,
            new,
            section,
            key_only,
            ..
        } => {
            let old = old.as_deref().map(|o| {
                if *key_only {
                    let key = o.split_once('=').map_or(o, |(k, _)| k);
                    format!("the line {key}=...")
                } else {
                    format!("`{}`", one_line(o))
                }
            });
            let what = match (old, new) {
                (Some(o), Some(n)) => format!("change {o} to `{}`", one_line(n)),
                (Some(o), None) => format!("remove {o}"),
                (None, Some(n)) => format!(
                    "add `{}`{}",
                    one_line(n),
                    section
                        .as_deref()
                        .map(|s| format!(" under {s}"))
                        .unwrap_or_default()
                ),
                (None, None) => String::from("nothing"),
            };
            format!("edit: {} {file}: {what} ({why})", role.label())
        }
        RollbackAction::RemoveFile { file, role } => {
            format!("remove: the {} {file} ({why})", role.label())
        }
        RollbackAction::Stop { command } => format!("stop: {command} ({why})"),
        RollbackAction::Run { command } => format!("run: {command} ({why})"),
        RollbackAction::Restart { command } => match launcher {
            Launcher::Process { .. } | Launcher::Unknown => format!("launch: {command}   ({why})"),
            _ => format!("restart: {command} ({why})"),
        },
        RollbackAction::Verify {
            command,
            at,
            expect,
        } => {
            let place = match at {
                probe_model::VerifyAt::Host => "",
                probe_model::VerifyAt::Probe => " where probe runs",
            };
            match command {
                Some(c) => format!("verify{place}: {c}: expect {expect}"),
                None => format!("verify{place}: {expect}"),
            }
        }
        RollbackAction::Manual { what } => format!("by hand: {what} ({why})"),
    }
}

/// A text of several lines said on one (continuation lines joined).
pub(crate) fn one_line(text: &str) -> String {
    text.lines()
        .map(|l| l.trim().trim_end_matches('\\').trim_end())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The flags of the earlier launch that differ, as the checklist's first lines say them.
pub(crate) fn differing(
    first: Option<(&LaunchConfig, &LaunchConfig)>,
    changes: &[Change],
) -> Vec<String> {
    first
        .map(|(b, a)| differing_flags(b, a, changes))
        .unwrap_or_default()
}

/// The earlier launch as a shell text, for a launch started by hand.
pub(crate) fn earlier_text(before: &LaunchConfig) -> Option<String> {
    launch_text(before)
}

#[cfg(test)]
mod tests;
