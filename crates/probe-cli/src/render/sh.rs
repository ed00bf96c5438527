//! `probe diff A B --format sh`: the rollback plan as a POSIX sh script for a person to review
//! and run on B. It does nothing unless run with `REVIEWED=yes`; it stops at the first step
//! that fails (`set -eu`); every step is commented with why; each file is copied before it is
//! changed (the copy's name no longer ends in `.conf`, so systemd ignores a drop-in's copy); a
//! line is changed only where the file holds it exactly as probe read it (once), and a
//! placeholder for a redacted value stops the script until it is filled in. `ROOT=DIR` applies
//! the file edits under DIR instead of `/`, to try them on a copy. probe never runs it.
//!
//! Every text from a host reaches the script either inside single quotes (exact bytes) or, in
//! a comment, folded onto one line without control characters; a step whose text holds a
//! control character other than a newline or tab is left to do by hand.

use probe_model::text::sanitize_line;
use probe_model::{Launcher, RollbackAction, RollbackPlan, RollbackStep, SnapshotDiff, VerifyAt};

/// A word quoted for a POSIX shell (always single quotes but for plain words).
fn quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `text` as comment lines, each starting `# ` (after `lead`).
fn comment(out: &mut String, lead: &str, text: &str) {
    out.push_str(&format!("# {lead}{}\n", sanitize_line(text)));
}

/// Whether a text can go into the script as it is (in single quotes): no control character
/// but a newline or a tab.
fn exact(text: &str) -> bool {
    !text
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\t')
        && sanitize_line(text) == text.replace(['\n', '\t'], " ")
}

/// The functions the steps use.
const PRELUDE: &str = r#"set -eu
ROOT=${ROOT:-}
if [ "${REVIEWED:-}" != yes ]; then
    echo "probe rollback plan: nothing done. Review every step, then run it with REVIEWED=yes" >&2
    exit 2
fi
# The switch is for this script only: a server it starts must not inherit it.
unset REVIEWED
if [ ! -f "$0" ]; then
    echo "probe rollback plan: run it as sh FILE (it checks its own text)" >&2
    exit 2
fi
if grep -v '^[[:space:]]*#' "$0" | grep -q '<REDACTED[:]'; then
    echo "probe rollback plan: nothing done. Fill in every REDACTED placeholder first" >&2
    exit 3
fi
STAMP=$(date -u +%Y%m%dT%H%M%SZ)

# keep FILE: a copy of FILE as it was before this run, beside it: FILE.probe-rollback-TIME.
keep() {
    if [ ! -e "$1.probe-rollback-$STAMP" ]; then
        cp -p "$1" "$1.probe-rollback-$STAMP"
        echo "kept a copy of $1 as $1.probe-rollback-$STAMP"
    fi
}

# remove_file FILE: moves FILE aside (the copy is the backup).
remove_file() {
    mv "$1" "$1.probe-rollback-$STAMP"
    echo "moved $1 aside as $1.probe-rollback-$STAMP"
}

# edit_line FILE MODE OLD HAS_NEW NEW SECTION
#   MODE exact: OLD's lines, found exactly once, become NEW (or go: HAS_NEW=0);
#   MODE key: the one line starting with OLD (a KEY=) becomes NEW (or goes);
#   MODE add: NEW goes at the end of the section SECTION (added at the end when missing).
edit_line() {
    case $5 in
    *'<REDACTED'[:]*)
        echo "$1: fill in the placeholder first: $5" >&2
        exit 3
        ;;
    esac
    keep "$1"
    if ! PLAN_MODE=$2 PLAN_OLD=$3 PLAN_HAS_NEW=$4 PLAN_NEW=$5 PLAN_SECTION=$6 awk '
BEGIN {
    mode = ENVIRON["PLAN_MODE"]; old = ENVIRON["PLAN_OLD"]; new = ENVIRON["PLAN_NEW"]
    has_new = ENVIRON["PLAN_HAS_NEW"]; section = ENVIRON["PLAN_SECTION"]
    n = split(old, want, "\n")
    if (mode == "key") n = 1
}
{ line[NR] = $0 }
END {
    hits = 0; at = 0; width = 0
    if (mode == "add") {
        for (i = 1; i <= NR; i++) if (line[i] == section) { sec = i; at = i + 1; hits = 1; break }
        while (hits && at <= NR && substr(line[at], 1, 1) != "[") at++
        while (hits && at - 1 > sec && line[at - 1] == "") at--
        if (!hits) {
            for (i = 1; i <= NR; i++) print line[i]
            print section
            print new
            exit 0
        }
    } else {
        width = n
        for (i = 1; i + n - 1 <= NR; i++) {
            ok = 1
            if (mode == "key") ok = (index(line[i], old) == 1)
            else for (j = 1; j <= n; j++) if (line[i + j - 1] != want[j]) { ok = 0; break }
            if (ok) { hits++; at = i }
        }
        if (hits != 1) exit 1
    }
    for (i = 1; i < at; i++) print line[i]
    if (has_new == "1") print new
    for (i = at + width; i <= NR; i++) print line[i]
}' "$1" > "$1.probe-rollback-new"; then
        rm -f "$1.probe-rollback-new"
        echo "$1: the line to change is not in it exactly once as probe read it; nothing changed there" >&2
        exit 3
    fi
    cat "$1.probe-rollback-new" > "$1"
    rm -f "$1.probe-rollback-new"
    echo "changed $1"
}
"#;

/// The launcher in words.
fn launcher(l: &Launcher) -> String {
    match l {
        Launcher::Unknown => String::from("not known"),
        Launcher::Systemd { unit } => format!("systemd unit {unit}"),
        Launcher::Compose {
            project, service, ..
        } => format!("Docker Compose service {service} of project {project}"),
        Launcher::Kubernetes { pod, owner, .. } => format!(
            "Kubernetes pod {pod}{}",
            owner
                .as_deref()
                .map(|o| format!(" ({o})"))
                .unwrap_or_default()
        ),
        Launcher::Container { name } => format!("container {name} (docker run)"),
        Launcher::Process { pid } => format!(
            "a process started by hand{}",
            pid.map(|p| format!(" (pid {p})")).unwrap_or_default()
        ),
    }
}

/// One step: its comment and its command (or, for what is done by hand or checked where
/// probe runs, comments only).
fn step(out: &mut String, n: usize, s: &RollbackStep) {
    out.push('\n');
    match &s.action {
        RollbackAction::EditLine {
            file,
            role,
            setting,
            old,
            new,
            section,
            key_only,
        } => {
            let texts = [old.as_deref(), new.as_deref(), Some(file.as_str())];
            if !texts.iter().flatten().all(|t| exact(t)) {
                return by_hand(
                    out,
                    n,
                    &format!(
                        "in the {} {file}, change {setting} (its text holds control characters)",
                        role.label()
                    ),
                    &s.why,
                );
            }
            let what = match (old.is_some(), new.is_some()) {
                (true, true) => "change",
                (true, false) => "remove",
                _ => "add",
            };
            comment(
                out,
                &format!("{n}. {what} {setting} in the {} ", role.label()),
                file,
            );
            comment(out, "   why: ", &s.why);
            out.push_str(&edit_line_call(
                file,
                old.as_deref(),
                new.as_deref(),
                section.as_deref(),
                *key_only,
            ));
        }
        RollbackAction::RemoveFile { file, role } => {
            if !exact(file) {
                return by_hand(
                    out,
                    n,
                    &format!("remove the {} {file}", role.label()),
                    &s.why,
                );
            }
            comment(out, &format!("{n}. remove the {} ", role.label()), file);
            comment(out, "   why: ", &s.why);
            out.push_str(&format!("remove_file \"$ROOT\"{}\n", quote(file)));
        }
        RollbackAction::Stop { command }
        | RollbackAction::Run { command }
        | RollbackAction::Restart { command } => command_step(out, n, s, command),
        RollbackAction::Verify {
            command,
            at,
            expect,
        } => verify_step(out, n, &s.why, command.as_deref(), *at, expect),
        RollbackAction::Manual { what } => by_hand(out, n, what, &s.why),
    }
}

/// A step left to do by hand: what, and why.
fn by_hand(out: &mut String, n: usize, what: &str, why: &str) {
    comment(out, &format!("{n}. BY HAND (not scripted): "), what);
    comment(out, "   why: ", why);
}

/// The `edit_line` call of an edit: `old` found exactly (or by its key, `key_only`) becomes
/// `new`, or `new` added under `section` where there is no `old`.
fn edit_line_call(
    file: &str,
    old: Option<&str>,
    new: Option<&str>,
    section: Option<&str>,
    key_only: bool,
) -> String {
    let (mode, old_arg) = match (old, key_only) {
        (None, _) => ("add", String::new()),
        (Some(o), true) => (
            "key",
            o.split_once('=')
                .map_or(o.to_string(), |(k, _)| format!("{k}=")),
        ),
        (Some(o), false) => ("exact", o.to_string()),
    };
    format!(
        "edit_line \"$ROOT\"{} {mode} {} {} {} {}\n",
        quote(file),
        quote(&old_arg),
        if new.is_some() { "1" } else { "0" },
        quote(new.unwrap_or("")),
        quote(section.unwrap_or(""))
    )
}

/// A step that runs `command` (a stop, a run, a start), left by hand where it is not one
/// exact line.
fn command_step(out: &mut String, n: usize, s: &RollbackStep, command: &str) {
    let what = match &s.action {
        RollbackAction::Stop { .. } => "stop",
        RollbackAction::Run { .. } => "run",
        _ => "start again",
    };
    if !exact(command) || command.contains('\n') {
        return by_hand(out, n, command, &s.why);
    }
    comment(out, &format!("{n}. {what}: "), &s.why);
    out.push_str(command);
    out.push('\n');
}

/// A check: run on the host where its command is one exact line, else said in comments.
fn verify_step(
    out: &mut String,
    n: usize,
    why: &str,
    command: Option<&str>,
    at: VerifyAt,
    expect: &str,
) {
    match (command, at) {
        (Some(c), VerifyAt::Host) if exact(c) && !c.contains('\n') => {
            comment(out, &format!("{n}. check: "), why);
            comment(out, "   expect: ", expect);
            out.push_str(&format!(
                "echo {}\n{c} || echo {} >&2\n",
                quote(&format!("check: {}", sanitize_line(c))),
                quote("that check did not answer; run it again once the server is up")
            ));
        }
        (command, _) => {
            let lead = match at {
                VerifyAt::Probe => format!("{n}. then, where probe runs: "),
                VerifyAt::Host => format!("{n}. check by hand: "),
            };
            comment(out, &lead, command.unwrap_or(why));
            comment(out, "   expect: ", expect);
        }
    }
}

/// The plan of `diff` as a script.
pub fn rollback_script(diff: &SnapshotDiff) -> String {
    let plan: &RollbackPlan = &diff.rollback_plan;
    let mut out = String::from("#!/bin/sh\n");
    comment(
        &mut out,
        "probe rollback plan: ",
        &format!(
            "{} ({}) back to {} ({})",
            diff.after.host, diff.after.id, diff.before.host, diff.before.id
        ),
    );
    comment(&mut out, "launcher: ", &launcher(&plan.launcher));
    out.push_str(&format!(
        "#\n# Written by `probe diff --format sh`; probe ran none of it. Read every step, then run it\n\
         # on {} as the user that owns these files (root for a system unit):\n\
         #     REVIEWED=yes sh THIS-FILE\n\
         # It stops at the first step that fails. Each file is copied to FILE.probe-rollback-TIME\n\
         # before it changes. ROOT=DIR applies the file edits under DIR instead of / (to try them\n\
         # on a copy); the commands still run.\n",
        sanitize_line(&diff.after.host)
    ));
    if !plan.placeholders.is_empty() {
        out.push_str(
            "#\n# Secrets are never printed. Fill in each placeholder below before running (the\n\
             # script stops at a line that still holds one):\n",
        );
        for p in &plan.placeholders {
            comment(&mut out, "  ", &format!("{}: {}", p.text, p.lives));
        }
    }
    if plan.steps.is_empty() {
        out.push_str("#\n# Nothing to roll back: no flag, package, driver, model or power limit differs.\nexit 0\n");
        return out;
    }
    out.push('\n');
    out.push_str(PRELUDE);
    for (i, s) in plan.steps.iter().enumerate() {
        step(&mut out, i + 1, s);
    }
    out
}

#[cfg(test)]
mod tests;
