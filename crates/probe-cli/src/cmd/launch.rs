//! `probe launch [FILE|-]`: reconstruct launches from a text and print them.

use std::io::Read;

use probe_collect::redact::Redactor;
use probe_launch::{ParseHints, TextKind, reconstruct};
use probe_model::{Engine, LaunchConfig, exit_codes};

use super::Ctx;
use crate::args::{LaunchArgs, LaunchKind};
use crate::errors::{ExpectedError, Result};
use crate::render;

/// Launch texts larger than this are refused (a unit file or script is kilobytes).
const MAX_INPUT: u64 = 16 << 20;

pub fn run(ctx: &Ctx, args: LaunchArgs) -> Result<u8> {
    let (name, raw) = match args.file.as_deref() {
        None => ("standard input".to_string(), read_stdin()?),
        Some(path) if path.as_os_str() == "-" => ("standard input".to_string(), read_stdin()?),
        Some(path) => {
            let bytes = probe_transport::local_file::read_bounded(path, MAX_INPUT)
                .map_err(|err| ExpectedError::file(path, err.kind))?;
            (path.display().to_string(), bytes)
        }
    };
    if raw.len() as u64 > MAX_INPUT {
        return Err(ExpectedError::Usage(format!(
            "{name}: larger than {} MiB, not a launch text",
            MAX_INPUT >> 20
        )));
    }
    // Reconstruct from the text as written (a redaction marker would read as shell syntax), then
    // redact every value of the result before anything is printed.
    let text = String::from_utf8_lossy(&raw).into_owned();
    let engine = match args.engine.as_deref() {
        Some(name) => Some(Engine::parse(name).ok_or_else(|| {
            ExpectedError::Usage(format!(
                "unknown engine {name:?} (one of: {})",
                Engine::ALL.map(Engine::as_str).join(", ")
            ))
        })?),
        None => None,
    };
    let hints = ParseHints {
        kind: text_kind(args.kind),
        engine,
        engine_version: args.engine_version.clone(),
        ..ParseHints::default()
    };
    let mut launches = reconstruct(&text, &hints);
    if ctx.settings.redact {
        launches.iter_mut().for_each(redact_launch);
    }
    let items: Vec<serde_json::Value> = launches
        .iter()
        .map(|launch| {
            serde_json::json!({
                "launch": launch,
                "common": probe_launch::common::common_fields(launch),
            })
        })
        .collect();
    if args.json {
        ctx.write(&render::json::pretty(&items))?;
    } else {
        ctx.emit(&items, || render::launches_doc(&launches))?;
    }
    Ok(exit_codes::OK)
}

fn read_stdin() -> Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|err| ExpectedError::file("standard input", err))?;
    Ok(bytes)
}

fn text_kind(kind: LaunchKind) -> TextKind {
    match kind {
        LaunchKind::Auto => TextKind::Auto,
        LaunchKind::Argv => TextKind::Argv,
        LaunchKind::Unit => TextKind::SystemdUnit,
        LaunchKind::Shell => TextKind::Shell,
        LaunchKind::Docker => TextKind::DockerRun,
        LaunchKind::Compose => TextKind::Compose,
        LaunchKind::K8s => TextKind::Kubernetes,
        LaunchKind::SglangLog => TextKind::SglangServerArgs,
        LaunchKind::VllmLog => TextKind::VllmNonDefaultArgs,
    }
}

/// Redacts secret values in a reconstructed launch: an option named like a secret loses its
/// value whatever its type (a number, vLLM's list), then every string goes through the one
/// redaction pass.
pub fn redact_launch(launch: &mut LaunchConfig) {
    let redactor = Redactor::builtin();
    for (name, option) in launch.options.iter_mut() {
        let secret_value = match &option.value {
            serde_json::Value::Null | serde_json::Value::Bool(_) => None,
            serde_json::Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        };
        match secret_value {
            Some(value)
                if redactor.is_secret_key(name) && !probe_model::text::is_redacted(&value) =>
            {
                let marker = probe_collect::redact::marker(&value);
                option.written = format!("--{name} {marker}");
                option.value = serde_json::Value::String(marker);
            }
            _ => {
                option.written = redactor.redact_text(&option.written).into_owned();
                if let serde_json::Value::String(text) = &mut option.value {
                    *text = redactor.redact_text(text).into_owned();
                }
            }
        }
    }
    // Then the one pass over every string (argv, env, warnings, model, paths, ...).
    probe_collect::redact::redact_serde(launch, redactor);
}
