//! The one renderer of launch cases (`cases_*.rs`, `launch_texts.rs`, `launch_launchers.rs`):
//! what an operator reads first, one field a line, empty fields left out, then the cross-engine
//! fields and the warnings.
//!
//! Each case is an inline insta snapshot. After a deliberate change,
//! `INSTA_FORCE_PASS=1 cargo test -p probe-launch --test launch` runs every case to its end and
//! leaves the new texts in `.<file>.pending-snap` beside each test file; `cargo insta accept`
//! writes them in. Only cargo-insta rewrites inline snapshots (`INSTA_UPDATE=always` also just
//! writes that file); without it, copy each new text from its failure's diff. Review the diff
//! either way.

use probe_launch::common::common_fields;
use probe_launch::{ParseHints, TextKind, reconstruct};
use probe_model::LaunchConfig;

/// `check!(KIND, input, @"expected")`: the launches read from `input` as the [`TextKind`] `KIND`
/// (`Auto` to let the reader guess), rendered by [`read`], against an inline snapshot.
macro_rules! check {
    ($kind:ident, $input:expr, @$expected:literal $(,)?) => {
        insta::assert_snapshot!(
            $crate::render::read($input, probe_launch::TextKind::$kind),
            @$expected
        )
    };
}

/// Every launch `text` holds, read as `kind`: `launches: N`, then each launch as [`render`]
/// shows it, `---` between them; `no launch` when there is none.
pub fn read(text: &str, kind: TextKind) -> String {
    let hints = ParseHints {
        kind,
        ..ParseHints::default()
    };
    let launches = reconstruct(text, &hints);
    if launches.is_empty() {
        return "no launch".to_string();
    }
    let shown: Vec<String> = launches.iter().map(render).collect();
    format!("launches: {}\n{}", launches.len(), shown.join("\n---\n"))
}

fn line(out: &mut Vec<String>, key: &str, value: &str) {
    if !value.is_empty() {
        out.push(format!("{key}: {value}"));
    }
}

/// One launch, one field a line: engine, entry point, model, interpreter, venv, wrappers
/// (outermost first), each option as read and as written, environment, unknown words, log
/// files, working directory, then the cross-engine fields (`common_fields`) and each warning.
pub fn render(l: &LaunchConfig) -> String {
    let mut out = vec![format!("engine: {}", l.engine)];
    line(&mut out, "entry", l.entrypoint.as_deref().unwrap_or(""));
    line(&mut out, "model", l.model.as_deref().unwrap_or(""));
    line(
        &mut out,
        "interpreter",
        l.interpreter.as_deref().unwrap_or(""),
    );
    line(&mut out, "venv", l.venv.as_deref().unwrap_or(""));
    line(&mut out, "wrappers", &l.wrappers.join(" > "));
    for (name, o) in &l.options {
        out.push(format!("option {name} = {} ({})", o.value, o.written));
    }
    let env: Vec<String> = l.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    line(&mut out, "env", &env.join(" "));
    line(&mut out, "unknown", &l.unknown.join(" "));
    line(&mut out, "logs", &l.log_files.join(", "));
    line(
        &mut out,
        "cwd",
        l.working_directory.as_deref().unwrap_or(""),
    );
    out.push(format!("fields: {}", common_fields(l)));
    for w in &l.warnings {
        out.push(format!("warning: {w}"));
    }
    out.join("\n")
}
