//! One compact text per launch for the data-driven case files (`cases_*.rs`): what an operator
//! reads first, one field a line, empty fields left out.

use probe_launch::{ParseHints, TextKind, reconstruct};
use probe_model::LaunchConfig;

/// `check!(KIND, input, @"expected")`: the launches read from `input` as the [`TextKind`] `KIND`,
/// rendered, against an inline snapshot.
macro_rules! check {
    ($kind:ident, $input:expr, @$expected:literal) => {
        insta::assert_snapshot!(
            $crate::render::read($input, probe_launch::TextKind::$kind),
            @$expected
        )
    };
}

/// Every launch `text` holds, read as `kind`, rendered.
pub fn read(text: &str, kind: TextKind) -> String {
    let hints = ParseHints {
        kind,
        ..ParseHints::default()
    };
    let launches = reconstruct(text, &hints);
    if launches.is_empty() {
        return "no launch".to_string();
    }
    launches
        .iter()
        .map(render)
        .collect::<Vec<_>>()
        .join("\n---\n")
}

fn line(out: &mut Vec<String>, key: &str, value: &str) {
    if !value.is_empty() {
        out.push(format!("{key}: {value}"));
    }
}

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
    line(&mut out, "wrappers", &l.wrappers.join(", "));
    for (name, o) in &l.options {
        out.push(format!("option {name} = {} ({})", o.value, o.written));
    }
    let env: Vec<String> = l.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    line(&mut out, "env", &env.join(" "));
    line(&mut out, "unknown", &l.unknown.join(" "));
    line(&mut out, "logs", &l.log_files.join(" "));
    line(
        &mut out,
        "cwd",
        l.working_directory.as_deref().unwrap_or(""),
    );
    for w in &l.warnings {
        out.push(format!("warning: {w}"));
    }
    out.join("\n")
}
