//! Which kind of text a launch text is, when the caller does not say: the format it is written
//! in (an argv, a unit, a compose file, a start-up log line, a shell text, ...).

use serde_json::Value;

use crate::hints::TextKind;
use crate::{dockerfile, ini, modelfile, pm2, quadlet, supervisor};

pub(crate) fn detect_kind(text: &str) -> TextKind {
    if text.contains('\0') {
        return TextKind::Argv;
    }
    if text.contains("server_args=") {
        return TextKind::SglangServerArgs;
    }
    if text.contains("non-default args:") {
        return TextKind::VllmNonDefaultArgs;
    }
    // Texts whose own format says what runs (before a unit: a quadlet has `[Service]` too).
    if quadlet::is_quadlet(text) {
        return TextKind::Quadlet;
    }
    // A JSON object (Triton's vLLM `model.json`, a serving config): read as YAML.
    if text.trim_start().starts_with('{')
        && serde_json::from_str::<serde_json::Map<String, Value>>(text.trim()).is_ok()
    {
        return TextKind::Kubernetes;
    }
    if supervisor::is_supervisor(text) {
        return TextKind::Supervisor;
    }
    if modelfile::is_modelfile(text) {
        return TextKind::Modelfile;
    }
    if dockerfile::is_dockerfile(text) {
        return TextKind::Dockerfile;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    // A script that writes a unit with a here-document is a script (its file is read as a unit
    // when the script runs no server itself).
    let writes_a_file = !ini::starts_with_header(text) && lines.iter().any(|l| l.contains("<<"));
    if !writes_a_file
        && lines
            .iter()
            .any(|l| *l == "[Service]" || l.starts_with("ExecStart="))
    {
        return TextKind::SystemdUnit;
    }
    if pm2::is_ecosystem(text) {
        return TextKind::Pm2;
    }
    let yaml_key = |l: &&str, k: &str| {
        let l = l.trim_start_matches("- ").trim_start();
        l.starts_with(k)
            && l.get(k.len()..)
                .map(|r| r.starts_with(':'))
                .unwrap_or(false)
    };
    let has = |k: &str| lines.iter().any(|l| yaml_key(l, k));
    // Shell scripts that write YAML with a here-document are still shell.
    let shellish = lines.iter().any(|l| l.contains("<<") || l.ends_with('\\'));
    if !shellish || has("containers") || has("services") {
        // Servers described without a container command (serving charts, Ray Serve, KServe).
        let serving = [
            "servingEngineSpec",
            "modelSpec",
            "llm_configs",
            "serveConfigV2",
            "modelFormat",
        ];
        if has("containers")
            || serving.iter().any(|k| has(k))
            || (has("args") && has("image"))
            || (has("env") && has("image") && !has("environment"))
        {
            return TextKind::Kubernetes;
        }
        if has("image") || has("services") || (has("command") && !shellish) || has("entrypoint") {
            return TextKind::Compose;
        }
    }
    TextKind::Shell
}
