//! Round 2's `R2_*` shell variables: what the plan found, one entry a line, each entry that
//! could break the line format left out.

use super::{BenchDir, NOT_UTF8_BYTE, Round2Inputs, valid_unit_name};

/// The `R2_*` shell variables of round 2: one entry a line, entries that could break the
/// line format left out.
pub(super) fn round2_vars(inputs: &Round2Inputs) -> Vec<(&'static str, String)> {
    let line = |v: &[String]| {
        v.iter()
            .filter(|x| !x.contains('\n'))
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    };
    let pids = |v: &[u32]| v.iter().map(u32::to_string).collect::<Vec<_>>().join("\n");
    let models: Vec<String> = inputs
        .models
        .iter()
        .filter(|m| !(m.named.contains(['\t', '\n']) || m.dir.contains(['\t', '\n'])))
        .map(|m| format!("{}\t{}\t{}", m.kind.as_str(), m.named, m.dir))
        .collect();
    let units: Vec<String> = inputs
        .units
        .iter()
        .filter(|(_, n)| valid_unit_name(n))
        .map(|(s, n)| format!("{s} {n}"))
        .collect();
    let clogs: Vec<String> = inputs
        .container_logs
        .iter()
        .filter(|(d, p)| {
            !(d.contains(['\t', '\n']) || p.contains(['\t', '\n']) || !p.starts_with('/'))
        })
        .map(|(d, p)| format!("{d}\t{p}"))
        .collect();
    let lfiles: Vec<String> = inputs
        .launch_files
        .iter()
        .filter(|(k, by, p)| {
            !(k.contains(['\t', '\n', ' '])
                || by.contains(['\t', '\n'])
                || p.contains(['\t', '\n'])
                || !p.starts_with('/'))
        })
        .map(|(k, by, p)| format!("{k}\t{by}\t{p}"))
        .collect();
    // The thinning program only where something is read with it (round 1 parses none of it).
    let thin = if inputs.is_empty() {
        String::new()
    } else {
        crate::thin::program().to_string()
    };
    vec![
        ("THIN", thin),
        ("R2_PY", line(&inputs.python_prefixes)),
        ("R2_MODELS", models.join("\n")),
        ("R2_LOGS", log_lines(&inputs.logs)),
        ("R2_UNITS", units.join("\n")),
        ("R2_CLOGS", clogs.join("\n")),
        ("R2_GPUPIDS", pids(&inputs.gpu_pids)),
        ("R2_MAPS", pids(&inputs.maps_pids)),
        ("R2_BENCH", bench_lines(&inputs.bench_dirs)),
        ("R2_LFILES", lfiles.join("\n")),
        ("R2_FOUND", crate::found::script_lines(&inputs.found)),
        ("R2_SELF", self_lines(&inputs.self_installed)),
    ]
}

/// `$R2_LOGS`: a path a line. A path whose name came with bytes that are not UTF-8 (a Latin-1
/// name under an ISO-8859-1 locale: U+FFFD in their place here) goes as
/// `?<TAB>PATH<TAB>PATTERN`, each U+FFFD one [`NOT_UTF8_BYTE`] that the host matches against
/// the one file it names, so the file is read under its exact name. A path that could break the
/// line format, or one already holding a pattern character, goes as it is.
fn log_lines(logs: &[String]) -> String {
    logs.iter()
        .filter(|p| !p.contains(['\t', '\n']))
        .map(|p| {
            if p.contains('\u{fffd}') && !p.contains(['*', '?', '[', ']', '\\']) {
                format!("?\t{p}\t{}", p.replace('\u{fffd}', NOT_UTF8_BYTE))
            } else {
                p.clone()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `OWNER<TAB>UID<TAB>HOME<TAB>DIR` per directory; an entry whose fields could break the line
/// format (a tab or newline, a relative path, an owner that is not a plain name) is left out.
fn bench_lines(dirs: &[BenchDir]) -> String {
    let plain = |s: &str| !s.is_empty() && !s.contains(['\t', '\n']);
    dirs.iter()
        .filter(|d| plain(&d.owner) && !d.owner.contains(' '))
        .filter(|d| plain(&d.dir) && d.dir.starts_with('/'))
        .filter(|d| {
            d.home
                .as_deref()
                .is_none_or(|h| plain(h) && h.starts_with('/'))
        })
        .map(|d| {
            let uid = d.uid.map_or_else(|| "-".to_string(), |u| u.to_string());
            format!(
                "{}\t{uid}\t{}\t{}",
                d.owner,
                d.home.as_deref().unwrap_or("-"),
                d.dir
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `$R2_SELF`: `KIND<TAB>PATH` a line; an entry whose fields could break the line format (a
/// tab or newline, a relative path) is left out.
fn self_lines(entries: &[(String, String)]) -> String {
    entries
        .iter()
        .filter(|(k, p)| {
            !k.is_empty()
                && !k.contains(['\t', '\n', ' '])
                && p.starts_with('/')
                && !p.contains(['\t', '\n'])
        })
        .map(|(k, p)| format!("{k}\t{p}"))
        .collect::<Vec<_>>()
        .join("\n")
}
