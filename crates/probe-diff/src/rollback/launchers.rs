//! The plan's launch steps for launchers other than systemd: a Docker Compose service (the
//! compose file's line, `docker compose up -d SERVICE`), a Kubernetes workload (its owner and
//! `kubectl rollout undo` where the evidence names one, else what is unknown), a container
//! started by `docker run`, and a process started by hand (stop the running one: nothing
//! restarts it; then the earlier command).

use probe_model::KeyArea;
use probe_model::{
    ContainerInfo, DefiningFileRole, LaunchConfig, LaunchFileKind, Launcher, RollbackAction,
    RollbackStep, Snapshot,
};

use super::{EnvEdit, FlagEdit, Secrets};

/// The image a container ran before, by digest where known (`repo@sha256:...`), and the one
/// it runs now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImageBack {
    pub(crate) earlier: String,
    pub(crate) now: String,
    pub(crate) by_digest: bool,
}

/// The image change of the diff (`container:NAME.image`), with the earlier image by digest.
pub(crate) fn image_back(before: &Snapshot, changes: &[probe_model::Change]) -> Option<ImageBack> {
    let (change, key) = changes.iter().find_map(|c| {
        let key = c.parsed_key();
        (key.area == KeyArea::Container && key.name == "image").then_some((c, key))
    })?;
    let name = key.of.as_deref()?;
    let earlier_image = super::text(change.before.as_ref())?;
    let now = super::text(change.after.as_ref())?;
    let repository = probe_model::image_repository(&earlier_image);
    let digest = container(before, name).and_then(|c| {
        c.repo_digests
            .iter()
            .find(|d| probe_model::image_repository(d) == repository)
            .or(c.repo_digests.first())
            .cloned()
    });
    Some(ImageBack {
        by_digest: digest.is_some(),
        earlier: digest.unwrap_or(earlier_image),
        now,
    })
}

/// The container named `name` (or with that id).
pub(crate) fn container<'a>(snapshot: &'a Snapshot, name: &str) -> Option<&'a ContainerInfo> {
    snapshot
        .containers
        .iter()
        .find(|c| c.name.as_deref() == Some(name) || c.id == name)
}

fn manual(what: String, why: &str) -> RollbackStep {
    RollbackStep {
        action: RollbackAction::Manual { what },
        why: why.to_string(),
    }
}

/// The one line of the compose texts that holds `needle`, as (file, line).
fn one_line<'a>(texts: &[(&'a str, &'a str)], needle: &str) -> Option<(&'a str, &'a str)> {
    let mut found = texts
        .iter()
        .flat_map(|(path, text)| text.lines().map(move |l| (*path, l)))
        .filter(|(_, l)| l.contains(needle));
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// A compose line with `remove` replaced by `insert`; `None` when nothing but a list dash
/// (or an empty string) would be left: the line goes.
pub(crate) fn compose_edit(line: &str, remove: &str, insert: Option<&str>) -> Option<String> {
    let new = line.replacen(remove, insert.unwrap_or(""), 1);
    let bare = new
        .trim()
        .trim_start_matches('-')
        .trim()
        .trim_matches(['"', '\'']);
    if bare.is_empty() {
        return None;
    }
    // The gap a removed word leaves closes; the indentation stays (a line of a YAML block
    // scalar indented less than its first line ends the block, or is an error).
    let body = new.trim_start();
    let indent = &new[..new.len() - body.len()];
    Some(format!("{indent}{}", body.trim_end().replace("  -", " -")))
}

/// A Compose service and the compose files read that define it.
struct Service<'a> {
    name: &'a str,
    /// The compose files read, as (path, text).
    texts: Vec<(&'a str, &'a str)>,
    /// The compose files, said (`the compose file` where none is named).
    where_: String,
}

/// Steps for a Compose service: each difference at its line in the compose file (or the
/// service's env file), then `docker compose up -d SERVICE`.
pub(crate) fn compose(
    snapshot: &Snapshot,
    launcher: &Launcher,
    before: &LaunchConfig,
    flags: &[FlagEdit],
    envs: &[EnvEdit],
    image: Option<&ImageBack>,
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    let Launcher::Compose {
        project,
        service,
        files,
    } = launcher
    else {
        return Vec::new();
    };
    let s = Service {
        name: service,
        texts: snapshot
            .launch_files
            .iter()
            .filter(|f| f.kind == LaunchFileKind::Compose && files.contains(&f.path))
            .map(|f| (f.path.as_str(), f.text.as_str()))
            .collect(),
        where_: if files.is_empty() {
            String::from("the compose file")
        } else {
            files.join(", ")
        },
    };
    let mut out = Vec::new();
    for flag in flags {
        out.push(compose_flag(&s, flag, secrets));
    }
    for env in envs {
        out.push(compose_env(&s, before, env, secrets));
    }
    if let Some(image) = image {
        out.push(compose_image(&s, image));
    }
    if out.is_empty() {
        return out;
    }
    out.push(compose_up(project, files, service));
    out
}

/// `flag` changed on its line of the compose file, else said to change by hand.
fn compose_flag(s: &Service<'_>, flag: &FlagEdit, secrets: &mut Secrets) -> RollbackStep {
    let (service, where_) = (s.name, &s.where_);
    let Some(remove) = &flag.remove else {
        return manual(
            format!(
                "in {where_}, service {service}: add {} to its command",
                flag.insert.as_deref().unwrap_or(&flag.key)
            ),
            "the earlier launch had it; where it goes in the command list is for you to see",
        );
    };
    match one_line(&s.texts, remove) {
        Some((file, line)) => RollbackStep {
            action: RollbackAction::EditLine {
                file: file.to_string(),
                role: DefiningFileRole::Compose,
                setting: flag.key.clone(),
                old: Some(line.to_string()),
                new: compose_edit(line, remove, flag.insert.as_deref())
                    .map(|n| secrets.fill(&n, &flag.key)),
                section: None,
                key_only: false,
            },
            why: format!("{} (service {service})", flag.said()),
        },
        None => manual(
            format!("in {where_}, service {service}: {}", flag.said()),
            "the words are not on one line of the compose file as read",
        ),
    }
}

/// `env` back to its earlier value: on its line of the compose file (`VAR=value` or
/// `VAR: value`), else in the service's env file, else by hand.
fn compose_env(
    s: &Service<'_>,
    before: &LaunchConfig,
    env: &EnvEdit,
    secrets: &mut Secrets,
) -> RollbackStep {
    let service = s.name;
    let value = env.before.as_deref().map(|v| secrets.value(&env.var, v));
    let in_compose = [format!("{}=", env.var), format!("{}:", env.var)]
        .iter()
        .find_map(|needle| one_line(&s.texts, needle).map(|hit| (hit, needle.ends_with(':'))));
    let env_file = before
        .files
        .iter()
        .find(|f| f.role == DefiningFileRole::EnvFile && f.sets.contains(&env.var));
    match (in_compose, env_file) {
        (Some(((file, line), mapping)), _) => RollbackStep {
            action: RollbackAction::EditLine {
                file: file.to_string(),
                role: DefiningFileRole::Compose,
                setting: env.var.clone(),
                old: Some(line.to_string()),
                new: value.map(|v| compose_env_line(line, &env.var, &v, mapping)),
                section: None,
                key_only: false,
            },
            why: format!("{} (service {service})", env.why()),
        },
        (None, Some(f)) => RollbackStep {
            action: RollbackAction::EditLine {
                file: f.path.clone(),
                role: DefiningFileRole::EnvFile,
                setting: env.var.clone(),
                old: Some(format!("{}=", env.var)),
                new: value.map(|v| format!("{}={v}", env.var)),
                section: None,
                key_only: true,
            },
            why: format!("{} (the env_file of service {service})", env.why()),
        },
        (None, None) => manual(
            format!(
                "in {}, service {service}: {}{}",
                s.where_,
                env.var,
                value.map_or_else(|| String::from(" unset"), |v| format!("={v}"))
            ),
            "no compose file line read sets it",
        ),
    }
}

/// The compose `line` that sets `var`, setting it to `value` instead: `VAR: "value"` in a
/// mapping, `VAR=value` in a list; what comes before the name stays.
fn compose_env_line(line: &str, var: &str, value: &str, mapping: bool) -> String {
    let at = line.find(var).unwrap_or(0);
    let head = line.get(..at).unwrap_or("");
    if mapping {
        format!("{head}{var}: \"{value}\"")
    } else {
        format!("{head}{var}={value}")
    }
}

/// The service's `image:` line back to the image it ran before.
fn compose_image(s: &Service<'_>, image: &ImageBack) -> RollbackStep {
    let service = s.name;
    let line = one_line(&s.texts, &format!("image: {}", image.now))
        .or_else(|| one_line(&s.texts, &format!("image: \"{}\"", image.now)));
    let Some((file, line)) = line else {
        return manual(
            format!(
                "in {}, service {service}: image: {}",
                s.where_, image.earlier
            ),
            "the image line was not found once in the compose file as read",
        );
    };
    let indent: String = line.chars().take_while(|c| c.is_whitespace()).collect();
    RollbackStep {
        action: RollbackAction::EditLine {
            file: file.to_string(),
            role: DefiningFileRole::Compose,
            setting: String::from("image"),
            old: Some(line.to_string()),
            new: Some(format!("{indent}image: {}", image.earlier)),
            section: None,
            key_only: false,
        },
        why: format!(
            "the image {service} ran before{}",
            if image.by_digest {
                " (by digest: the same bytes, whatever its tag points to now)"
            } else {
                " (its digest is not known: the tag may point to other bytes now)"
            }
        ),
    }
}

/// `docker compose up -d SERVICE` with the project and files that define it.
fn compose_up(project: &str, files: &[String], service: &str) -> RollbackStep {
    let mut command = String::from("docker compose");
    if !project.is_empty() {
        command.push_str(&format!(" -p {}", super::quote(project)));
    }
    for f in files {
        command.push_str(&format!(" -f {}", super::quote(f)));
    }
    command.push_str(&format!(" up -d {}", super::quote(service)));
    RollbackStep {
        action: RollbackAction::Restart { command },
        why: format!(
            "Compose recreates {service}'s container from the changed file (the other services \
             stay as they run)"
        ),
    }
}

/// Steps for a Kubernetes pod: the workload's undo where its kind is known, and the fields to
/// change; the manifest itself was not read, so nothing is edited.
pub(crate) fn kubernetes(
    launcher: &Launcher,
    flags: &[FlagEdit],
    envs: &[EnvEdit],
) -> Vec<RollbackStep> {
    let Launcher::Kubernetes {
        namespace,
        pod,
        owner,
    } = launcher
    else {
        return Vec::new();
    };
    if flags.is_empty() && envs.is_empty() {
        return Vec::new();
    }
    let ns = namespace
        .as_deref()
        .map(|n| format!(" -n {}", super::quote(n)))
        .unwrap_or_default();
    let fields: Vec<String> = flags
        .iter()
        .map(FlagEdit::said)
        .chain(envs.iter().map(|e| {
            format!(
                "env {}: {}",
                e.var,
                e.before
                    .as_deref()
                    .map_or("remove it", |_| "its earlier value")
            )
        }))
        .collect();
    let mut out = Vec::new();
    match owner.as_deref() {
        Some(o) if o.starts_with("deployment/") || o.starts_with("statefulset/") => {
            out.push(manual(
                format!(
                    "kubectl{ns} rollout history {o}, then kubectl{ns} rollout undo {o} \
                     (--to-revision=N for the revision that ran the earlier launch)"
                ),
                "the owner is inferred from the pod's name, not read from the API server: \
                 check it first",
            ));
        }
        Some(o) if o.starts_with("static-pod/") => out.push(manual(
            format!(
                "edit the manifest of static pod {pod} in the kubelet's staticPodPath on this \
                 host (usually /etc/kubernetes/manifests); the kubelet recreates the pod"
            ),
            "a static pod has no workload object to roll back",
        )),
        Some(o) => out.push(manual(
            format!("kubectl{ns} edit {o}"),
            "its kind has no `kubectl rollout undo`: change the fields in its spec",
        )),
        None => out.push(manual(
            format!("find the workload that owns pod {pod}{ns}"),
            "the pod's name does not tell its owner (a DaemonSet, a Job or a ReplicaSet)",
        )),
    }
    out.push(manual(
        format!(
            "the fields to change in the container's args and env: {}",
            fields.join("; ")
        ),
        "the manifest was not read; these are the differences of the running launch",
    ));
    out
}

/// Steps for a container started with `docker run`: replaced by hand.
pub(crate) fn container_run(
    name: &str,
    before: &LaunchConfig,
    flags: &[FlagEdit],
    envs: &[EnvEdit],
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    if flags.is_empty() && envs.is_empty() {
        return Vec::new();
    }
    let args = secrets.fill(&super::shell_words(&before.argv), "argv");
    vec![manual(
        format!(
            "docker rm -f {name}, then docker run it again with the earlier command ({args}) \
             and its earlier environment"
        ),
        "a container started by `docker run` has no file that defines it; nothing restarts \
         it with other arguments",
    )]
}

/// Steps for a process started by hand: stop the running one (nothing else does, and its port
/// is in use), then the earlier command, in the background with its output kept.
pub(crate) fn by_hand(
    launcher: &Launcher,
    before: &LaunchConfig,
    host: &str,
    secrets: &mut Secrets,
) -> Vec<RollbackStep> {
    let Some(text) = super::earlier_text(before) else {
        return Vec::new();
    };
    // A history line's own `nohup` goes: the step runs it under nohup already.
    let text = match text.strip_prefix("nohup ") {
        Some(rest) => rest.to_string(),
        None => text.replace("&& nohup ", "&& "),
    };
    let mut out = Vec::new();
    if let Launcher::Process { pid: Some(pid) } = launcher {
        out.push(RollbackStep {
            action: RollbackAction::Stop {
                command: format!("kill {pid} && while kill -0 {pid} 2>/dev/null; do sleep 1; done"),
            },
            why: String::from(
                "the running server was started by hand: nothing else stops it, and the \
                 earlier one needs its port (this waits until it has exited)",
            ),
        });
    }
    let log = before
        .log_files
        .first()
        .cloned()
        .unwrap_or_else(|| String::from("nohup.out"));
    out.push(RollbackStep {
        action: RollbackAction::Restart {
            command: format!(
                "nohup sh -c {} >> {} 2>&1 &",
                super::quote(&secrets.fill(&text, "argv")),
                super::quote(&log)
            ),
        },
        why: format!(
            "the earlier launch ({} on {host}); started by hand: nothing restarts it if it \
             stops",
            probe_launch::evidence_label(before)
        ),
    });
    out
}
