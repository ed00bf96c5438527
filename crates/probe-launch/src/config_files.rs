//! Config files a launch names (`--config`, `--extra_llm_api_options`): which they are, and
//! their values put into the launch once the file is read (the collector's round 2 reads it on
//! the host; a file the same text writes with a here-document is read at once, in `argv`).
//! Each value keeps the file it came from (`written`: `key: value (in PATH)`).

use probe_model::{
    DefiningFile, DefiningFileRole, LaunchConfig, LaunchFile, LaunchFileKind, SectionStatus,
    Snapshot,
};

use crate::catalog::catalog;
use crate::options::{ConfigFile, merge_config, speculative};
use crate::yaml::yaml_to_json;

/// The config files `launch` names, as absolute paths when its working directory is known
/// (otherwise as written), in the order of the engine catalog's `config_options`.
pub fn config_files(launch: &LaunchConfig) -> Vec<String> {
    let mut out = Vec::new();
    for (_, path) in named(launch) {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

/// Each config file option's value as written, and the path it names.
fn named(launch: &LaunchConfig) -> Vec<(String, String)> {
    let cat = catalog(launch.engine, launch.engine_version.as_deref());
    let mut out = Vec::new();
    for name in &cat.config_options {
        let Some(written) = launch.options.get(name).and_then(|o| o.value.as_str()) else {
            continue;
        };
        let path = match (&launch.working_directory, written.starts_with('/')) {
            (Some(dir), false) if dir.starts_with('/') => format!(
                "{}/{}",
                dir.trim_end_matches('/'),
                written.trim_start_matches("./")
            ),
            _ => written.to_string(),
        };
        out.push((written.to_string(), path));
    }
    out
}

/// Puts the values of config file `path` (YAML or JSON text, as read) into `launch`, mapped to
/// the engine's options through its catalog: the command line wins unless the engine applies
/// the file over it (TRT-LLM). Returns whether the text was a config (a mapping).
pub fn apply_config_file(launch: &mut LaunchConfig, path: &str, text: &str) -> bool {
    let Some(cfg) = yaml_to_json(text).filter(serde_json::Value::is_object) else {
        launch
            .warnings
            .push(format!("config file {path} is not YAML or JSON"));
        return false;
    };
    let cat = catalog(launch.engine, launch.engine_version.as_deref());
    let file = ConfigFile {
        path: path.to_string(),
    };
    merge_config(
        cat,
        &cfg,
        &file,
        &mut launch.options,
        &mut launch.warnings,
        "",
    );
    // The file is read now: its options are visible.
    for (written, named_path) in named(launch) {
        if named_path == path || written == path {
            let said = format!("options in config file {written} are not visible here");
            launch.warnings.retain(|w| *w != said);
        }
    }
    if launch.model.is_none() {
        launch.model = cat.model_options.iter().find_map(|m| {
            launch
                .options
                .get(m)
                .and_then(|o| o.value.as_str().map(str::to_string))
        });
    }
    launch.speculative = speculative(cat, &launch.options);
    true
}

/// Puts the config files round 2 read (`Snapshot::launch_files` of kind `engine_config`) into
/// the launches that name them, each listed among the launch's defining files. A running launch:
/// the file on disk now is what the running server read (unless it changed since, which is
/// said). An earlier launch only where the file was last written before that launch started
/// (its mtime, and a timed launch): then the file now is what it read; otherwise the file now
/// says nothing of what it read, and it is left alone. A file not read says why.
pub(crate) fn fill(snapshot: &Snapshot, out: &mut [LaunchConfig]) {
    for l in out.iter_mut() {
        for path in config_files(l) {
            let Some(f) = snapshot
                .launch_files
                .iter()
                .find(|f| f.kind == LaunchFileKind::EngineConfig && same_file(&f.path, &path))
            else {
                continue;
            };
            let unchanged_since_start = matches!(
                (f.mtime, l.source.time.at),
                (Some(m), Some(start)) if m <= start
            );
            if !l.source.running && (f.status != SectionStatus::Ok || !unchanged_since_start) {
                continue;
            }
            apply_read_file(l, &path, f);
        }
    }
}

fn apply_read_file(l: &mut LaunchConfig, path: &str, f: &LaunchFile) {
    if f.status != SectionStatus::Ok {
        let why = f.message.as_deref().unwrap_or("not read");
        l.warnings.push(format!(
            "config file {path} was not read on the host: {why}"
        ));
        return;
    }
    if !apply_config_file(l, path, &f.text) {
        return;
    }
    if f.truncated {
        l.warnings.push(format!(
            "config file {path} was read only in part (over its size bound): keys after the \
             cut are not visible here"
        ));
    }
    if let (Some(m), Some(start)) = (f.mtime, l.source.time.at)
        && m > start
    {
        l.warnings.push(format!(
            "config file {path} changed after this launch started: its values here are the \
             file's now, which the running server may not have read"
        ));
    }
    record_file(l, DefiningFileRole::EngineConfig, path);
}

/// `path` among the files that define `l`, with the options whose value it gave (their
/// `written` ends `(in PATH)`).
pub(crate) fn record_file(l: &mut LaunchConfig, role: DefiningFileRole, path: &str) {
    let from_file = format!("(in {path})");
    let sets = l
        .options
        .iter()
        .filter(|(_, o)| o.written.ends_with(&from_file))
        .map(|(k, _)| k.clone())
        .collect();
    l.files.push(DefiningFile {
        role,
        path: path.to_string(),
        optional: false,
        sets,
    });
}

/// `read` is `named` as round 2 read it: the same path, or it inside a process's mount
/// namespace (`/proc/PID/root/...`).
pub(crate) fn same_file(read: &str, named: &str) -> bool {
    read == named
        || read
            .strip_prefix("/proc/")
            .and_then(|r| r.split_once('/'))
            .is_some_and(|(pid, rest)| {
                pid.bytes().all(|b| b.is_ascii_digit()) && rest.strip_prefix("root") == Some(named)
            })
}
