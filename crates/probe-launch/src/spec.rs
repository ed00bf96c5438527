//! What every container launcher shares once its own format is read: the image, the command
//! and entrypoint, the environment (`Spec`), resolved into a launch; and the engine version an
//! image tag names. `container.rs` (docker run, compose, Kubernetes) and `serving.rs` (serving
//! YAML) both build on it.

use std::collections::BTreeMap;

use probe_model::LaunchConfig;

use super::ctx::{Ctx, ReadArgv};
use super::entry::{entry_for_image, guess_image_entry, is_launcher_word};
use super::hints::ParseHints;
use super::wrappers::guess_engine_from_name;

/// Container facts shared by `docker run`, compose, Kubernetes, Dockerfiles and quadlets.
pub(crate) struct Spec {
    pub image: Option<String>,
    /// `None`: the image's own; `Some(empty)`: cleared.
    pub entrypoint: Option<Vec<String>>,
    pub cmd: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Listed as run by `docker`.
    pub docker_wrapper: bool,
}

pub(crate) fn resolve(
    read: ReadArgv,
    spec: Spec,
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    for (k, v) in &spec.env {
        ctx.env.insert(k.clone(), v.clone());
    }
    if spec.docker_wrapper {
        ctx.wrappers.push("docker".into());
    }
    let image_entry = spec.image.as_deref().and_then(entry_for_image);
    let argv: Vec<String> = match spec.entrypoint {
        Some(ep) if !ep.is_empty() => ep.into_iter().chain(spec.cmd).collect(),
        Some(_) => spec.cmd,
        None => {
            let first_is_launcher = spec
                .cmd
                .first()
                .map(|w| is_launcher_word(w, spec.cmd.get(1..).unwrap_or(&[])))
                .unwrap_or(false);
            match image_entry {
                Some((_, ep)) if !first_is_launcher && !ep.image_entrypoint.is_empty() => ep
                    .image_entrypoint
                    .iter()
                    .cloned()
                    .chain(spec.cmd)
                    .collect(),
                None if !first_is_launcher => {
                    match spec
                        .image
                        .as_deref()
                        .and_then(|i| guess_image_entry(i, &spec.cmd))
                    {
                        Some(head) => head.into_iter().chain(spec.cmd).collect(),
                        None => spec.cmd,
                    }
                }
                _ => spec.cmd,
            }
        }
    };
    ctx.depth += 1;
    let image = spec.image;
    let mut l = read(&argv, ctx, hints)?;
    if l.engine_version.is_none() {
        l.engine_version = image.as_deref().and_then(|i| image_version(i, l.engine));
    }
    Some(l)
}

/// A container given by its parts (a Dockerfile, a podman quadlet): what [`Spec`] says, run as
/// a container under the wrappers `ctx` already has.
pub(crate) fn from_spec(
    read: ReadArgv,
    spec: Spec,
    ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    resolve(read, spec, ctx, hints)
}

/// `0.10.2`, `3.0.1`, `0.11.0rc1`: at least two dot-separated parts, the first all digits,
/// each starting with a digit.
fn is_version(s: &str) -> bool {
    let parts: Vec<&str> = s.split('.').collect();
    parts.len() >= 2
        && parts
            .first()
            .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
        && parts.iter().all(|p| {
            p.bytes().next().is_some_and(|b| b.is_ascii_digit())
                && p.bytes().all(|b| b.is_ascii_alphanumeric())
        })
}

/// The engine version an image's tag names (`vllm/vllm-openai:v0.10.2` -> `0.10.2`,
/// `lmsysorg/sglang:v0.5.9-cu128` -> `0.5.9`), for the engine's own images only. `latest`, no
/// tag, a digest or a tag that is no version: `None`. An engine's own image is one whose name
/// the engine hints of `configs/wrappers.toml` give to that engine.
pub(crate) fn image_version(image: &str, engine: probe_model::Engine) -> Option<String> {
    let image = image.trim();
    if image.contains('@') {
        return None;
    }
    let (repo, tag) = image.rsplit_once(':')?;
    if tag.contains('/') {
        return None;
    }
    let name = repo.rsplit('/').next().unwrap_or(repo).to_ascii_lowercase();
    if guess_engine_from_name(&name) != Some(engine) {
        return None;
    }
    let tag = tag.strip_prefix(['v', 'V']).unwrap_or(tag);
    if is_version(tag) {
        return Some(tag.to_string());
    }
    let (head, _) = tag.split_once('-')?;
    is_version(head).then(|| head.to_string())
}
