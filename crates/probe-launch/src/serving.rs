//! Kubernetes objects that describe a model server without a container command, each turned
//! into the argv its operator or chart runs:
//!
//! * the vLLM production stack's Helm values (`servingEngineSpec.modelSpec[]`): the chart's
//!   `deployment-vllm-multi.yaml` runs `vllm serve <modelURL>` with each `vllmConfig` key as its
//!   kebab-case flag (`maxModelLen` -> `--max-model-len`, a `false` boolean as `--no-...`) and
//!   `extraArgs` appended;
//! * Ray Serve LLM configs (`llm_configs[]` of `ray.serve.llm:build_openai_app`, in a Serve
//!   config file or a KubeRay `RayService`'s `serveConfigV2`): a vLLM engine for
//!   `model_loading_config.model_source`, served as `model_id`, with `engine_kwargs` as vLLM
//!   engine arguments and `runtime_env.env_vars` as its environment;
//! * KServe `InferenceService` predictors of the `huggingface` format (kserve's
//!   `huggingfaceserver`, whose vLLM backend takes vLLM's arguments): `--model_id` is the model,
//!   `--model_name` the served name, the other `args` go to vLLM (unless `--backend=huggingface`
//!   turns vLLM off);
//! * a serving chart's `values.yaml` (an `image` map with its `repository`): the argv is
//!   `image.command` (or `command`) followed by `args` and `extraArgs` (under `image` or beside
//!   it), the model under its own key (`model`, `model.name`, `modelName`, ...), `env` a
//!   Kubernetes list; how the chart's templates pass the model is not in the values, so a
//!   model only the key names is said to come from it;
//! * Triton Inference Server's vLLM backend `model.json` (`{"model": ..., <engine args>}`): the
//!   backend builds vLLM's `AsyncEngineArgs` from its keys, so each key is a vLLM option.

use std::collections::BTreeMap;

use probe_model::LaunchConfig;
use serde_json::{Map, Value};

use super::ctx::{Ctx, ReadArgv};
use super::hints::ParseHints;
use super::serving_formats::formats;
use super::spec::{Spec, from_spec};

/// A server to read: its image (when named), its argv and its environment.
type Server = (Option<String>, Vec<String>, BTreeMap<String, String>);

/// Launches of `m` when it is one of the objects above; `None` when it is none of them.
pub(crate) fn from_object(
    read: ReadArgv,
    m: &Map<String, Value>,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Option<Vec<LaunchConfig>> {
    if let Some(found) = chart_values(read, m, ctx, hints) {
        return Some(found);
    }
    if let Some(found) = triton_vllm(read, m, ctx, hints) {
        return Some(found);
    }
    let argvs: Vec<Server> = if let Some(Value::Array(specs)) = m.get("modelSpec") {
        specs.iter().filter_map(model_spec).collect()
    } else if let Some(Value::Array(configs)) = m
        .get("llm_configs")
        .or_else(|| m.get("args").and_then(|a| a.get("llm_configs")))
    {
        configs.iter().filter_map(llm_config).collect()
    } else if is_kserve_huggingface(m) {
        vec![(None, kserve(m)?, k8s_env(m.get("env")))]
    } else {
        return None;
    };
    let mut out = Vec::new();
    for (image, argv, env) in argvs {
        let spec = Spec {
            image,
            entrypoint: Some(argv),
            cmd: Vec::new(),
            env,
            docker_wrapper: false,
        };
        out.extend(from_spec(read, spec, ctx.clone(), hints));
    }
    Some(out)
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `name`/`value` pairs of a Kubernetes `env` list (values from secrets are not in the text).
fn k8s_env(v: Option<&Value>) -> BTreeMap<String, String> {
    let mut env = BTreeMap::new();
    if let Some(Value::Array(items)) = v {
        for it in items {
            if let (Some(n), Some(v)) = (
                it.get("name").and_then(text),
                it.get("value").and_then(text),
            ) {
                env.insert(n, v);
            }
        }
    }
    env
}

/// `maxModelLen` -> `max-model-len`.
fn kebab(camel: &str) -> String {
    let mut out = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            if !out.is_empty() {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// `--name value` flags of a map of settings; `true` is the bare flag, `false` its `--no-`
/// form, an object its JSON, a list one value per item.
fn flags(settings: &Map<String, Value>, name: impl Fn(&str) -> String, out: &mut Vec<String>) {
    for (k, v) in settings {
        let flag = name(k);
        match v {
            Value::Bool(true) => out.push(format!("--{flag}")),
            Value::Bool(false) => out.push(format!("--no-{flag}")),
            Value::Null => {}
            Value::Object(_) => out.extend([format!("--{flag}"), v.to_string()]),
            Value::Array(items) => {
                out.push(format!("--{flag}"));
                out.extend(
                    items
                        .iter()
                        .map(|i| text(i).unwrap_or_else(|| i.to_string())),
                );
            }
            other => out.extend([format!("--{flag}"), text(other).unwrap_or_default()]),
        }
    }
}

/// Settings of a production-stack `modelSpec` outside `vllmConfig` that its chart turns into
/// flags (`deployment-vllm-multi.yaml`).
const MODEL_SPEC_FLAGS: &[(&str, &str)] = &[
    ("enableLoRA", "enable-lora"),
    ("enableTool", "enable-auto-tool-choice"),
    ("toolCallParser", "tool-call-parser"),
    ("modelRevision", "revision"),
];

/// Keys of `vllmConfig` the chart reads for itself, not as flags.
const VLLM_CONFIG_OWN: &[&str] = &["extraArgs", "v0", "prometheusMultiprocDir"];

/// `vllm serve <model>`: how vLLM starts (its definition's entry point, as for an image whose
/// entry point is not known), then the model. The production stack and Ray Serve run vLLM.
fn vllm_serve(model: String) -> Vec<String> {
    engine_serve(probe_model::Engine::Vllm, model)
}

/// How `engine` starts (its definition's entry point), then the model.
fn engine_serve(engine: probe_model::Engine, model: String) -> Vec<String> {
    let catalog = super::catalog::catalog(engine, None);
    let mut argv = super::entry::default_entry_argv(catalog).unwrap_or_default();
    argv.push(model);
    argv
}

fn model_spec(s: &Value) -> Option<Server> {
    let url = s.get("modelURL").and_then(text)?;
    let mut argv = vllm_serve(url);
    for (key, flag) in MODEL_SPEC_FLAGS {
        match s.get(*key) {
            Some(Value::Bool(true)) => argv.push(format!("--{flag}")),
            Some(v) => {
                if let Some(t) = text(v) {
                    argv.extend([format!("--{flag}"), t]);
                }
            }
            None => {}
        }
    }
    if let Some(Value::Object(cfg)) = s.get("vllmConfig") {
        let own: Map<String, Value> = cfg
            .iter()
            .filter(|(k, _)| !VLLM_CONFIG_OWN.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        flags(&own, kebab, &mut argv);
        match cfg.get("extraArgs") {
            Some(Value::Array(extra)) => argv.extend(extra.iter().filter_map(text)),
            Some(Value::String(extra)) => argv.extend(super::shell::split_words(extra)),
            _ => {}
        }
    }
    let image = match (
        s.get("repository").and_then(text),
        s.get("tag").and_then(text),
    ) {
        (Some(r), Some(t)) => Some(format!("{r}:{t}")),
        (r, _) => r,
    };
    Some((image, argv, k8s_env(s.get("env"))))
}

fn llm_config(c: &Value) -> Option<Server> {
    let loading = c.get("model_loading_config")?;
    let id = loading.get("model_id").and_then(text);
    let source = loading.get("model_source").and_then(text);
    let model = source.clone().or_else(|| id.clone())?;
    let mut argv = vllm_serve(model);
    if let (Some(id), Some(_)) = (id, source) {
        argv.extend(["--served-model-name".to_string(), id]);
    }
    if let Some(Value::Object(kwargs)) = c.get("engine_kwargs") {
        flags(kwargs, str::to_string, &mut argv);
    }
    // `runtime_env.env_vars`: the environment of the engine's replicas.
    let mut env = BTreeMap::new();
    if let Some(Value::Object(vars)) = c.get("runtime_env").and_then(|r| r.get("env_vars")) {
        for (k, v) in vars {
            if let Some(v) = text(v) {
                env.insert(k.clone(), v);
            }
        }
    }
    Some((None, argv, env))
}

fn is_kserve_huggingface(m: &Map<String, Value>) -> bool {
    !m.contains_key("image")
        && !m.contains_key("command")
        && m.get("modelFormat")
            .and_then(|f| f.get("name"))
            .and_then(Value::as_str)
            .is_some_and(|n| {
                formats()
                    .kserve
                    .model_formats
                    .iter()
                    .any(|f| f.eq_ignore_ascii_case(n))
            })
}

fn kserve(m: &Map<String, Value>) -> Option<Vec<String>> {
    let kserve = &formats().kserve;
    let args: Vec<String> = match m.get("args") {
        Some(Value::Array(a)) => a.iter().filter_map(text).collect(),
        _ => Vec::new(),
    };
    let mut model = m.get("storageUri").and_then(text);
    let mut name = None;
    let mut rest = Vec::new();
    let mut it = args.into_iter().peekable();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f.to_string(), Some(v.to_string())),
            None => (a.clone(), None),
        };
        let key = flag.trim_start_matches('-').replace('-', "_");
        let takes =
            matches!(key.as_str(), "model_id" | "model_name") || kserve.own_options.contains(&key);
        if !takes {
            rest.push(a);
            continue;
        }
        let value = match inline {
            Some(v) => Some(v),
            None if it.peek().is_some_and(|n| !n.starts_with("--")) => it.next(),
            None => None,
        };
        match key.as_str() {
            "model_id" => model = value.or(model),
            "model_name" => name = value,
            // `--backend=huggingface` turns the engine off: the model runs on transformers.
            "backend" if value.as_ref() == Some(&kserve.engine_off_backend) => return None,
            _ => {}
        }
    }
    let mut argv = engine_serve(kserve.engine, model?);
    if let Some(n) = name {
        argv.extend(["--served-model-name".to_string(), n]);
    }
    argv.extend(rest);
    Some(argv)
}

/// Words of a list (`["vllm", "serve"]`) or of a string (`vllm serve`).
fn words(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::Array(items)) => items.iter().filter_map(text).collect(),
        Some(Value::String(s)) => super::shell::split_words(s),
        _ => Vec::new(),
    }
}

/// The model a chart's values name under a key of its own.
fn chart_model(m: &Map<String, Value>) -> Option<String> {
    for key in [
        "model",
        "modelName",
        "modelId",
        "model_name",
        "model_id",
        "modelPath",
    ] {
        match m.get(key) {
            Some(Value::String(s)) if !s.trim().is_empty() => return Some(s.trim().to_string()),
            Some(Value::Object(o)) => {
                for k in ["name", "id", "repo", "path", "modelId", "repository"] {
                    if let Some(Value::String(s)) = o.get(k)
                        && !s.trim().is_empty()
                    {
                        return Some(s.trim().to_string());
                    }
                }
            }
            _ => {}
        }
    }
    None
}

/// A serving chart's `values.yaml`; `None` when `m` is no such map or runs no model server.
fn chart_values(
    read: ReadArgv,
    m: &Map<String, Value>,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Option<Vec<LaunchConfig>> {
    let Some(Value::Object(image)) = m.get("image") else {
        return None;
    };
    let repository = image.get("repository").and_then(text)?;
    let image_name = match image.get("tag").and_then(text) {
        Some(t) if !t.is_empty() => format!("{repository}:{t}"),
        _ => repository,
    };
    let command = match words(image.get("command")) {
        c if c.is_empty() => words(m.get("command")),
        c => c,
    };
    let mut args = Vec::new();
    for v in [
        image.get("args"),
        m.get("args"),
        image.get("extraArgs"),
        m.get("extraArgs"),
    ] {
        match v {
            Some(Value::Object(settings)) => flags(settings, str::to_string, &mut args),
            other => args.extend(words(other)),
        }
    }
    let model = chart_model(m);
    if command.is_empty() && args.is_empty() && model.is_none() {
        return None;
    }
    let spec = Spec {
        image: Some(image_name),
        entrypoint: (!command.is_empty()).then_some(command),
        cmd: args,
        env: k8s_env(m.get("env")),
        docker_wrapper: false,
    };
    let mut l = from_spec(read, spec, ctx.clone(), hints)?;
    if l.model.is_none()
        && let Some(model) = model
    {
        l.warnings.push(format!(
            "model {model} from the values' own key: how the chart passes it is in its templates"
        ));
        l.model = Some(model);
    }
    Some(vec![l])
}

/// Triton's vLLM backend `model.json`: `model` and vLLM engine arguments, nothing else; `None`
/// for any other object.
fn triton_vllm(
    read: ReadArgv,
    m: &Map<String, Value>,
    ctx: &Ctx,
    hints: &ParseHints,
) -> Option<Vec<LaunchConfig>> {
    let model = m.get("model").and_then(Value::as_str)?;
    let triton = &formats().triton;
    let own = |k: &String| triton.own_keys.contains(k);
    let engine = super::catalog::catalog(triton.engine, None);
    let rest: Map<String, Value> = m
        .iter()
        .filter(|(k, _)| !own(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Every key an engine argument (snake_case, as `AsyncEngineArgs` names them).
    let all_known = m.keys().all(|k| {
        own(k)
            || (k
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
                && engine.lookup_name_loose(k).is_some())
    });
    if !all_known || rest.is_empty() {
        return None;
    }
    let mut argv = engine_serve(triton.engine, model.to_string());
    flags(&rest, |k| k.replace('_', "-"), &mut argv);
    let mut l = read(&argv, ctx.clone(), hints)?;
    l.entrypoint = Some(triton.entrypoint.clone());
    l.warnings.push(triton.warning.clone());
    Some(vec![l])
}
