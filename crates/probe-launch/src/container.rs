//! Containers: `docker run` / `podman run` command lines, compose services and Kubernetes
//! container specs.

use std::collections::BTreeMap;

use probe_model::LaunchConfig;
use serde_json::Value;

use super::ctx::{Ctx, ReadArgv, basename};

use super::hints::ParseHints;
use super::shell::split_words;
use super::spec::{Spec, resolve};

/// docker/podman `run` options that take a value (when not written `--opt=value`): the container
/// runtimes' `value-flags` in `configs/wrappers.toml`.
fn value_opts() -> &'static [String] {
    super::wrappers::wrapper("docker").map_or(&[], |w| w.value_flags.as_slice())
}

/// `docker run [OPTIONS] IMAGE [COMMAND] [ARG...]` (also podman, nerdctl, `container run`).
pub(crate) fn docker_run(
    argv: &[String],
    ctx: Ctx,
    hints: &ParseHints,
    read: ReadArgv,
) -> Option<LaunchConfig> {
    let mut i = 1;
    if argv.get(i).map(String::as_str) == Some("container") {
        i += 1;
    }
    if argv.get(i).map(String::as_str) == Some("exec") {
        return docker_exec(read, argv.get(i + 1..).unwrap_or(&[]), ctx, hints);
    }
    if !matches!(argv.get(i).map(String::as_str), Some("run" | "create")) {
        return None;
    }
    i += 1;
    let mut env = BTreeMap::new();
    let mut entrypoint = None;
    let value_opts = value_opts();
    while let Some(a) = argv.get(i) {
        if !a.starts_with('-') || a == "-" {
            break;
        }
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let takes_value = value_opts.contains(&flag);
        let value = if takes_value && inline.is_none() {
            i += 1;
            argv.get(i).cloned()
        } else {
            inline
        };
        i += 1;
        match flag.as_str() {
            "-e" | "--env" => {
                if let Some(v) = value
                    && let Some((k, val)) = v.split_once('=')
                {
                    env.insert(k.to_string(), val.to_string());
                }
            }
            "--entrypoint" => entrypoint = value.map(|v| split_words(&v)),
            _ => {}
        }
    }
    let image = argv.get(i).cloned()?;
    let cmd = argv.get(i + 1..).unwrap_or(&[]).to_vec();
    resolve(
        read,
        Spec {
            image: Some(image),
            entrypoint,
            cmd,
            env,
            docker_wrapper: true,
        },
        ctx,
        hints,
    )
}

/// `docker exec [OPTIONS] CONTAINER COMMAND [ARG...]`: the command runs inside a container that
/// already exists (its image is not in the text).
fn docker_exec(
    read: ReadArgv,
    args: &[String],
    mut ctx: Ctx,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let mut i = 0;
    while let Some(a) = args.get(i) {
        if !a.starts_with('-') {
            break;
        }
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let takes_value = matches!(
            flag,
            "-e" | "--env" | "--env-file" | "-u" | "--user" | "-w" | "--workdir" | "--detach-keys"
        );
        let value = if takes_value && inline.is_none() {
            i += 1;
            args.get(i).cloned()
        } else {
            inline
        };
        i += 1;
        if matches!(flag, "-e" | "--env")
            && let Some((k, v)) = value.as_deref().and_then(|v| v.split_once('='))
        {
            ctx.env.insert(k.to_string(), v.to_string());
        }
    }
    // The container name, then the command.
    let cmd = args.get(i + 1..)?;
    ctx.wrappers.push("docker".into());
    ctx.depth += 1;
    read(cmd, ctx, hints)
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn words(v: Option<&Value>) -> Option<Vec<String>> {
    match v? {
        Value::Array(a) => Some(a.iter().filter_map(scalar).collect()),
        Value::String(s) => Some(split_words(s)),
        Value::Null => Some(Vec::new()),
        other => scalar(other).map(|s| vec![s]),
    }
}

/// Replaces Kubernetes `$(VAR)` references from the container's env (`$$(VAR)` stays literal).
fn k8s_subst(s: &str, env: &BTreeMap<String, String>) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(p) = rest.find("$(") {
        let (head, tail) = rest.split_at(p);
        if head.ends_with('$') {
            out.push_str(head.strip_suffix('$').unwrap_or(head));
            out.push_str("$(");
            rest = tail.get(2..).unwrap_or("");
            continue;
        }
        out.push_str(head);
        match tail.find(')') {
            Some(end) => {
                let name = tail.get(2..end).unwrap_or("");
                match env.get(name) {
                    Some(v) if name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
                        out.push_str(v)
                    }
                    _ => out.push_str(tail.get(..=end).unwrap_or("")),
                }
                rest = tail.get(end + 1..).unwrap_or("");
            }
            None => {
                out.push_str(tail);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Launches of compose services or Kubernetes containers found anywhere in a YAML document.
pub(crate) fn from_yaml(
    read: ReadArgv,
    doc: &Value,
    kubernetes: bool,
    ctx: &Ctx,
    hints: &ParseHints,
    out: &mut Vec<LaunchConfig>,
    depth: usize,
) {
    if depth > 32 {
        return;
    }
    match doc {
        Value::Object(m) => {
            if let Some(found) = super::serving::from_object(read, m, ctx, hints) {
                out.extend(found);
                return;
            }
            // A KubeRay `RayService` carries its Serve config as a YAML string.
            for key in ["serveConfigV2", "serveConfig"] {
                if let Some(Value::String(s)) = m.get(key)
                    && ctx.budget.take(s.len())
                    && let Some(inner) = super::yaml::yaml_to_json(s)
                {
                    from_yaml(read, &inner, kubernetes, ctx, hints, out, depth + 1);
                }
            }
            let is_container = m.contains_key("image")
                || m.contains_key("command")
                || m.contains_key("entrypoint")
                || m.contains_key("args");
            if is_container
                && (m.contains_key("command") || m.contains_key("args") || m.contains_key("image"))
            {
                let k8s = kubernetes
                    || m.contains_key("args")
                    || (m.get("env").map(Value::is_array).unwrap_or(false)
                        && !m.contains_key("environment"));
                let spec = if k8s {
                    kubernetes_spec(m)
                } else {
                    compose_spec(m)
                };
                out.extend(resolve(read, spec, ctx.clone(), hints));
                return;
            }
            for v in m.values() {
                from_yaml(read, v, kubernetes, ctx, hints, out, depth + 1);
            }
        }
        Value::Array(a) => {
            for v in a {
                from_yaml(read, v, kubernetes, ctx, hints, out, depth + 1);
            }
        }
        _ => {}
    }
}

/// A Kubernetes container: `command` is the entrypoint, `args` the command, `env` a list of
/// `name`/`value` pairs (`$(VAR)` substituted).
fn kubernetes_spec(m: &serde_json::Map<String, Value>) -> Spec {
    let mut env = BTreeMap::new();
    if let Some(Value::Array(items)) = m.get("env") {
        for it in items {
            if let (Some(n), Some(v)) = (
                it.get("name").and_then(scalar),
                it.get("value").and_then(scalar),
            ) {
                let v = k8s_subst(&v, &env);
                env.insert(n, v);
            }
        }
    }
    let entrypoint =
        words(m.get("command")).map(|w| w.iter().map(|s| k8s_subst(s, &env)).collect());
    let cmd = words(m.get("args"))
        .unwrap_or_default()
        .iter()
        .map(|s| k8s_subst(s, &env))
        .collect();
    Spec {
        image: m.get("image").and_then(scalar),
        entrypoint,
        cmd,
        env,
        docker_wrapper: false,
    }
}

/// A compose service: `entrypoint`, `command`, and `environment` as a map or `K=V` list.
fn compose_spec(m: &serde_json::Map<String, Value>) -> Spec {
    let mut env = BTreeMap::new();
    match m.get("environment") {
        Some(Value::Object(e)) => {
            for (k, v) in e {
                if let Some(v) = scalar(v) {
                    env.insert(k.clone(), v);
                }
            }
        }
        Some(Value::Array(items)) => {
            for it in items {
                if let Some(s) = scalar(it)
                    && let Some((k, v)) = s.split_once('=')
                {
                    env.insert(k.trim().to_string(), v.to_string());
                }
            }
        }
        _ => {}
    }
    Spec {
        image: m.get("image").and_then(scalar),
        entrypoint: words(m.get("entrypoint")),
        cmd: words(m.get("command")).unwrap_or_default(),
        env,
        docker_wrapper: true,
    }
}

/// A running container (`docker inspect` facts).
pub(crate) fn from_container(
    read: ReadArgv,
    c: &probe_model::ContainerInfo,
    hints: &ParseHints,
) -> Option<LaunchConfig> {
    let spec = Spec {
        image: Some(c.image.clone()),
        entrypoint: Some(c.entrypoint.clone()).filter(|e| !e.is_empty()),
        cmd: c.cmd.clone(),
        env: c.env.clone(),
        docker_wrapper: true,
    };
    let mut ctx = Ctx {
        budget: super::work::budget_of(
            super::work::words(&spec.cmd)
                + spec.entrypoint.as_deref().map_or(0, super::work::words),
            &spec.env,
        ),
        ..Ctx::default()
    };
    if c.runtime == probe_model::ContainerRuntime::Podman {
        ctx.wrappers.push("podman".into());
        let mut l = resolve(
            read,
            Spec {
                docker_wrapper: false,
                ..spec
            },
            ctx,
            hints,
        )?;
        l.wrappers.retain(|w| w != "docker");
        return Some(l);
    }
    let _ = basename("");
    resolve(read, spec, ctx, hints)
}
