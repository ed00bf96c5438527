//! podman quadlets (`*.container` units, podman-systemd.unit(5)): the `[Container]` section's
//! `Image=`, `Exec=` (the command after the image), `Entrypoint=`, `Environment=` and
//! `PodmanArgs=` make one container launch under podman.

use std::collections::BTreeMap;

use probe_model::LaunchConfig;

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::ini::{Section, sections, starts_with_header};
use super::spec::{Spec, from_spec};
use super::systemd::split_exec;

/// Whether `text` is a quadlet: an INI text with a `[Container]` section naming an image.
pub(crate) fn is_quadlet(text: &str) -> bool {
    starts_with_header(text) && container(&sections(text)).is_some()
}

fn container(sections: &[Section]) -> Option<&Section> {
    sections
        .iter()
        .find(|s| s.name == "Container" && s.get("Image").is_some())
}

/// Words of a quadlet value, split the way systemd splits settings.
fn words(v: &str) -> Vec<String> {
    split_exec(
        v,
        &BTreeMap::new(),
        &BTreeMap::new(),
        &mut Vec::new(),
        false,
    )
}

/// The launch of the quadlet's container.
pub(crate) fn launch(
    text: &str,
    read: ReadArgv,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let all = sections(text);
    let c = container(&all)?;
    let mut env = BTreeMap::new();
    for v in c.all("Environment") {
        for w in words(v) {
            if let Some((k, val)) = w.split_once('=') {
                env.insert(k.to_string(), val.to_string());
            }
        }
    }
    let mut entrypoint = c.get("Entrypoint").map(words);
    // `PodmanArgs=` are `podman run` options: `-e K=V` and `--entrypoint` matter here.
    let podman_args: Vec<String> = c.all("PodmanArgs").flat_map(words).collect();
    let mut it = podman_args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let value = || inline.clone().or_else(|| it.clone().next().cloned());
        match flag {
            "-e" | "--env" => {
                if let Some((k, v)) = value().as_deref().and_then(|v| v.split_once('=')) {
                    env.insert(k.to_string(), v.to_string());
                }
            }
            "--entrypoint" => entrypoint = value().map(|v| words(&v)),
            _ => {}
        }
    }
    if let Some(d) = c.get("WorkingDir") {
        ctx.cwd = Some(d.to_string());
    }
    ctx.wrappers.push("podman".into());
    let spec = Spec {
        image: c.get("Image").map(str::to_string),
        entrypoint,
        cmd: c.get("Exec").map(words).unwrap_or_default(),
        env,
        docker_wrapper: false,
    };
    from_spec(read, spec, ctx, hints)
}
