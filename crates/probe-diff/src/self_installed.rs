//! Engines installed outside package managers on the timeline (issue 32, item 4), each event
//! with its evidence: a server's version changing between runs where an install script ran or
//! its binary was written in between (`curl ... | sh` in a history, the binary's and the unit
//! file's mtimes, the versions its start-up lines gave); a binary built in a git checkout (its
//! mtime, the commit checked out, the history lines that pulled and built it); an editable
//! install's checkout (`pip install -e`: the commit it runs, and whether it moved since the
//! install, which changes the code without touching the installed version).
//!
//! Nothing here names an engine: the engine and its versions come from the launches, the
//! files from `Snapshot::self_installed`.

use probe_model::{
    Checkout, Confidence, HistoryEntry, InstalledBinary, LaunchConfig, PythonEnv, PythonPackage,
    Run, RunVersion, Snapshot, TimeBounds, Timeline, TimelineEvent, TimelineEventKind, UnixTime,
    VersionSource,
};

/// How long before a build the history lines that prepared it are looked for.
const BUILD_WINDOW_S: i64 = 86_400;

/// A checkout's ref written this long after the binary means it moved after the build.
const MOVED_AFTER_S: i64 = 60;

/// The self-installed engine events a snapshot's files give (builds, editable checkouts).
pub(crate) fn events(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    let mut out = builds(snapshot);
    out.extend(editables(snapshot));
    out
}

/// Adds the version changes of self-installed engines between runs to the timeline, each at
/// its place in time (the runs are read from the timeline, so they come after it).
pub(crate) fn annotate(timeline: &mut Timeline, snapshot: &Snapshot, runs: &[Run]) {
    for event in version_changes(snapshot, runs) {
        let at = event
            .time
            .at
            .or(event.time.not_after)
            .unwrap_or(UnixTime::MAX);
        let position = timeline
            .events
            .iter()
            .position(|e| {
                e.time
                    .at
                    .or(e.time.not_after)
                    .or(e.time.not_before)
                    .is_some_and(|t| t > at)
            })
            .unwrap_or(timeline.events.len());
        timeline.events.insert(position, event);
    }
}

/// `(history path, entry)` of every timed history entry.
fn history(snapshot: &Snapshot) -> impl Iterator<Item = (&str, &HistoryEntry)> {
    snapshot
        .histories
        .iter()
        .flat_map(|h| h.entries.iter().map(move |e| (h.path.as_str(), e)))
}

/// An install script piped into a shell (`curl -fsSL https://.../install.sh | sh`, `wget -qO-
/// ... | bash`).
fn is_install_script(command: &str) -> bool {
    let fetch = command.contains("curl ") || command.contains("wget ");
    let piped = command.split('|').skip(1).any(|part| {
        let w = part.split_whitespace().find(|w| !w.contains('='));
        matches!(w, Some("sh" | "bash" | "sudo" | "/bin/sh" | "/bin/bash"))
    });
    fetch && piped
}

/// A line that builds or updates a checkout (`git pull`, `cmake --build`, `make`).
fn is_build_step(command: &str) -> bool {
    [
        "git pull",
        "git fetch",
        "git checkout",
        "git reset",
        "cmake --build",
        "cmake -B",
        "make ",
    ]
    .iter()
    .any(|s| command.contains(s))
        || command.trim_end() == "make"
}

fn line_of(path: &str, e: &HistoryEntry) -> String {
    format!(
        "history {path}#{}{}: `{}`",
        e.index,
        e.time
            .map(|t| format!(" at {}", stamp(t)))
            .unwrap_or_default(),
        probe_model::text::clip(&e.command, 160)
    )
}

/// What gave a run's version.
fn said_by(run: &Run) -> &'static str {
    match run.engine_version.source {
        probe_model::VersionSource::StartupLine => "its start-up version line",
        probe_model::VersionSource::Running => "the running process",
        probe_model::VersionSource::InstalledBefore
        | probe_model::VersionSource::InstalledAfter => "the installed package",
        probe_model::VersionSource::HistoryPin => "a history line's pin",
        probe_model::VersionSource::Unknown => "unknown",
    }
}

fn stamp(t: UnixTime) -> String {
    probe_model::civil::utc_second(t)
}

/// A run with its start and version.
type TimedRun<'a> = (&'a Run, UnixTime, &'a str);

/// Consecutive runs of one engine whose versions differ, where an install script ran or a
/// program file was written in between.
fn version_changes(snapshot: &Snapshot, runs: &[Run]) -> Vec<TimelineEvent> {
    let mut runs: Vec<TimedRun> = runs
        .iter()
        .filter_map(|r| Some((r, r.start.at?, r.engine_version.version.as_deref()?)))
        .collect();
    runs.sort_by_key(|(r, at, _)| (r.engine.as_str(), *at));
    runs.windows(2)
        .filter_map(|pair| match pair {
            [before, after] => version_change(snapshot, before, after),
            _ => None,
        })
        .collect()
}

/// Two consecutive runs as one install outside the package manager, when their engine is the
/// same, their versions differ and an install script ran or a program file was written between
/// their starts.
fn version_change(
    snapshot: &Snapshot,
    (before, from, old): &TimedRun,
    (after, to, new): &TimedRun,
) -> Option<TimelineEvent> {
    if before.engine != after.engine || old == new {
        return None;
    }
    let within = |t: UnixTime| *from < t && t <= *to;
    let scripts: Vec<(&str, &HistoryEntry)> = history(snapshot)
        .filter(|(_, e)| e.time.is_some_and(within) && is_install_script(&e.command))
        .collect();
    let binaries: Vec<_> = snapshot
        .self_installed
        .binaries
        .iter()
        .filter(|b| b.mtime.is_some_and(within))
        .collect();
    if scripts.is_empty() && binaries.is_empty() {
        // A package manager's upgrade: its own events say it.
        return None;
    }
    let mut evidence = vec![run_line(old, *from, before), run_line(new, *to, after)];
    evidence.extend(scripts.iter().map(|(p, e)| line_of(p, e)));
    evidence.extend(binaries.iter().map(|b| {
        format!(
            "binary {} written {}",
            b.path,
            b.mtime.map(stamp).unwrap_or_default()
        )
    }));
    evidence.extend(units_written(snapshot, within));
    let at = scripts.last().and_then(|(_, e)| e.time);
    Some(TimelineEvent {
        kind: TimelineEventKind::EngineInstall,
        time: TimeBounds {
            at,
            not_before: at.is_none().then_some(*from),
            not_after: at.is_none().then_some(*to),
        },
        confidence: if at.is_some() {
            Confidence::Exact
        } else {
            Confidence::Bounded
        },
        summary: format!(
            "{} {old} -> {new} installed outside the package manager{}",
            after.engine,
            if scripts.is_empty() {
                String::new()
            } else {
                " (install script)".to_string()
            }
        ),
        evidence,
        ..TimelineEvent::default()
    })
}

/// `version 0.5.1 in the run from ... (launch: what gave the version)`.
fn run_line(version: &str, from: UnixTime, run: &Run) -> String {
    format!(
        "version {version} in the run from {} ({}: {})",
        stamp(from),
        run.launch,
        said_by(run)
    )
}

/// The unit files written in a time window (an install script writes its unit anew).
fn units_written(snapshot: &Snapshot, within: impl Fn(UnixTime) -> bool) -> Vec<String> {
    let mut out = Vec::new();
    for u in &snapshot.units {
        if let Some(m) = u.fragment.mtime.filter(|m| within(*m)) {
            out.push(format!(
                "unit file {} written {} (the install script writes it anew)",
                u.fragment.path,
                stamp(m)
            ));
        }
    }
    out
}

/// A binary built in a git checkout: when it was written, from which commit, and whether the
/// checkout moved after it.
fn builds(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    let si = &snapshot.self_installed;
    si.binaries
        .iter()
        .filter_map(|b| {
            let (Some(dir), Some(mtime)) = (b.checkout.as_deref(), b.mtime) else {
                return None;
            };
            let c = si.checkouts.iter().find(|c| c.dir == dir)?;
            Some(build(snapshot, b, (dir, c), mtime))
        })
        .collect()
}

/// One binary written at `mtime` in the checkout `c` (at `dir`).
fn build(
    snapshot: &Snapshot,
    b: &InstalledBinary,
    (dir, c): (&str, &Checkout),
    mtime: UnixTime,
) -> TimelineEvent {
    let short = c.short().unwrap_or("?");
    let branch = c
        .branch
        .as_deref()
        .map(|b| b.trim_start_matches("refs/heads/"))
        .unwrap_or("detached HEAD");
    let moved = c.ref_mtime.is_some_and(|r| r > mtime + MOVED_AFTER_S);
    // Moved by a pull after the build: ORIG_HEAD holds where it was, the commit built.
    let built = c
        .moved_from
        .as_deref()
        .filter(|_| moved && c.moved_at.is_some_and(|m| m > mtime))
        .and_then(|id| id.get(..7));
    let mut evidence = vec![format!("binary {} written {}", b.path, stamp(mtime))];
    evidence.extend(checkout_lines(dir, c, branch));
    let until = c.ref_mtime.filter(|_| moved).unwrap_or(mtime) + MOVED_AFTER_S;
    evidence.extend(build_steps(snapshot, dir, mtime, until));
    if moved {
        evidence.push(format!(
            "the checkout moved after the build: {} does not run the commit checked out",
            b.path
        ));
    }
    let summary = match built {
        Some(built) => format!(
            "{} built from {dir} @ {built} ({branch}); the checkout moved to {short} since, not rebuilt",
            b.path
        ),
        None => format!(
            "{} built from {dir} @ {short} ({branch}){}",
            b.path,
            if moved {
                "; the checkout moved since"
            } else {
                ""
            }
        ),
    };
    TimelineEvent {
        kind: TimelineEventKind::EngineInstall,
        time: TimeBounds {
            at: Some(mtime),
            ..TimeBounds::default()
        },
        confidence: Confidence::Bounded,
        summary,
        evidence,
        ..TimelineEvent::default()
    }
}

/// What a checkout's files say: the commit checked out on `branch`, the last pull, merge or
/// reset (ORIG_HEAD) and the last fetch.
fn checkout_lines(dir: &str, c: &Checkout, branch: &str) -> Vec<String> {
    let mut out = vec![format!(
        "checkout {dir}: {branch} at {}{}",
        c.commit.as_deref().unwrap_or("?"),
        c.ref_mtime
            .map(|t| format!(" (ref written {})", stamp(t)))
            .unwrap_or_default()
    )];
    if let (Some(t), Some(from)) = (c.moved_at, c.moved_from.as_deref()) {
        out.push(format!(
            "ORIG_HEAD {from} written {}: HEAD was there before the last pull, merge or reset",
            stamp(t)
        ));
    }
    if let Some(t) = c.fetched_at {
        out.push(format!("last fetch or pull {} (FETCH_HEAD)", stamp(t)));
    }
    out
}

/// The history lines that pulled or built the checkout at `dir`: up to `until`, at most
/// [`BUILD_WINDOW_S`] before the binary's `mtime`, naming the checkout or in its home.
fn build_steps(snapshot: &Snapshot, dir: &str, mtime: UnixTime, until: UnixTime) -> Vec<String> {
    let base = dir.rsplit('/').next().unwrap_or(dir);
    history(snapshot)
        .filter(|(path, e)| {
            e.time
                .is_some_and(|t| t <= until && mtime - t <= BUILD_WINDOW_S)
                && is_build_step(&e.command)
                && (e.command.contains(base) || same_home(path, dir))
        })
        .map(|(p, e)| line_of(p, e))
        .collect()
}

/// A history file in the home that holds the checkout (`/home/ana/.bash_history`,
/// `/home/ana/llama.cpp`).
fn same_home(history: &str, dir: &str) -> bool {
    history
        .rsplit_once('/')
        .is_some_and(|(home, _)| !home.is_empty() && dir.starts_with(&format!("{home}/")))
}

/// A run's version with what a self-installed engine adds: an editable install's checkout
/// (`editable, /opt/src/vllm @ 8d41f0b`), or, where no version is known, the checkout the
/// program was built in (`built from /home/ana/llama.cpp @ 3f4ae8a`).
pub(crate) fn run_version(
    snapshot: &Snapshot,
    launch: &LaunchConfig,
    start: UnixTime,
    packages: &[String],
    env: Option<&PythonEnv>,
    version: RunVersion,
) -> RunVersion {
    if version.note.is_some() {
        return version;
    }
    let checkouts = &snapshot.self_installed.checkouts;
    if matches!(
        version.source,
        VersionSource::Running | VersionSource::InstalledBefore
    ) && let Some((dir, c)) = env
        .into_iter()
        .flat_map(|e| e.packages.iter())
        .filter(|p| packages.contains(&p.name))
        .filter_map(|p| editable_dir(p.direct_url.as_deref()?))
        .find_map(|dir| Some((dir, checkouts.iter().find(|c| c.dir == dir)?)))
    {
        // The checkout moved after the run started: the run ran where it was before.
        let at = c
            .moved_from
            .as_deref()
            .filter(|_| c.moved_at.is_some_and(|m| m > start))
            .and_then(|id| id.get(..7))
            .or(c.short())
            .unwrap_or("?");
        return RunVersion {
            note: Some(format!("editable, {dir} @ {at}")),
            ..version
        };
    }
    if version.version.is_some() || version.source != VersionSource::Unknown {
        return version;
    }
    let Some(program) = program_of(launch) else {
        return version;
    };
    let built = snapshot.self_installed.binaries.iter().find_map(|b| {
        let dir = b.checkout.as_deref()?;
        (squeeze(&b.path) == program)
            .then(|| Some((dir, checkouts.iter().find(|c| c.dir == dir)?, b.mtime?)))
            .flatten()
    });
    let Some((dir, c, mtime)) = built else {
        return version;
    };
    RunVersion {
        note: Some(format!("built from {dir} @ {}", built_commit(c, mtime))),
        ..version
    }
}

/// The program a launch runs, as an absolute path (`./build/bin/x` under its working
/// directory).
fn program_of(launch: &LaunchConfig) -> Option<String> {
    let a0 = launch.argv.first()?;
    let path = if a0.starts_with('/') {
        a0.clone()
    } else if a0.contains('/') {
        let cwd = launch.working_directory.as_deref()?;
        format!("{cwd}/{}", a0.trim_start_matches("./"))
    } else {
        return None;
    };
    Some(squeeze(&path))
}

fn squeeze(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        if !(c == '/' && out.ends_with('/')) {
            out.push(c);
        }
    }
    out
}

/// The commit a binary written at `mtime` was built from: where the checkout was before a
/// move after the build (ORIG_HEAD), else where it is.
fn built_commit(c: &Checkout, mtime: UnixTime) -> &str {
    let moved = c.ref_mtime.is_some_and(|r| r > mtime + MOVED_AFTER_S)
        && c.moved_at.is_some_and(|m| m > mtime);
    c.moved_from
        .as_deref()
        .filter(|_| moved)
        .and_then(|id| id.get(..7))
        .or(c.short())
        .unwrap_or("?")
}

/// `file:///opt/src/vllm (editable)` → `/opt/src/vllm`.
fn editable_dir(url: &str) -> Option<&str> {
    url.strip_suffix(" (editable)")
        .and_then(|u| u.strip_prefix("file://"))
        .map(|d| d.trim_end_matches('/'))
}

/// `0.11.1.dev123+gabc1234` → `abc1234`: the commit setuptools-scm wrote into the version.
fn version_commit(version: &str) -> Option<&str> {
    let local = version.split_once('+')?.1;
    local
        .split('.')
        .find_map(|p| p.strip_prefix('g'))
        .filter(|h| h.len() >= 7 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An editable install's checkout: the commit it runs, and a move since the install.
fn editables(snapshot: &Snapshot) -> Vec<TimelineEvent> {
    let mut out = Vec::new();
    for env in &snapshot.python_envs {
        out.extend(
            env.packages
                .iter()
                .filter_map(|p| editable(snapshot, env, p)),
        );
    }
    out
}

/// One package of `env`, when it is an editable install of a checkout the host holds.
fn editable(snapshot: &Snapshot, env: &PythonEnv, p: &PythonPackage) -> Option<TimelineEvent> {
    let url = p.direct_url.as_deref()?;
    let dir = editable_dir(url)?;
    let c = snapshot
        .self_installed
        .checkouts
        .iter()
        .find(|c| c.dir == dir)?;
    let short = c.short().unwrap_or("?");
    let installed = version_commit(&p.version);
    let moved = installed.is_some_and(|h| c.commit.as_deref().is_some_and(|c| !c.starts_with(h)));
    let mut evidence = editable_lines(env, p, (url, dir), c);
    if let (true, Some(h)) = (moved, installed) {
        evidence.push(format!(
            "installed at g{h} (its version), the checkout now at {short}: the code runs from the checkout, the version string is the install's"
        ));
    }
    let at = c.ref_mtime.or(c.moved_at).or(p.installed_at);
    Some(TimelineEvent {
        kind: TimelineEventKind::EngineInstall,
        time: TimeBounds {
            at,
            ..TimeBounds::default()
        },
        confidence: if at.is_some() {
            Confidence::Bounded
        } else {
            Confidence::Unknown
        },
        summary: format!(
            "{} {} (editable, {dir} @ {short}){}",
            p.name,
            p.version,
            match (moved, installed) {
                (true, Some(h)) => format!(": checkout moved {h} -> {short} since the install"),
                _ => String::new(),
            }
        ),
        evidence,
        ..TimelineEvent::default()
    })
}

/// An editable install's evidence: the package's `direct_url.json` and install time, the
/// commit its checkout holds and the last move of HEAD.
fn editable_lines(
    env: &PythonEnv,
    p: &PythonPackage,
    (url, dir): (&str, &str),
    c: &Checkout,
) -> Vec<String> {
    let mut out = vec![format!(
        "{} in {}: direct_url.json {url}{}",
        p.name,
        env.interpreter,
        p.installed_at
            .map(|t| format!(", installed {}", stamp(t)))
            .unwrap_or_default()
    )];
    out.push(format!(
        "checkout {dir} at {}{}",
        c.commit.as_deref().unwrap_or("?"),
        c.ref_mtime
            .map(|t| format!(" (ref written {})", stamp(t)))
            .unwrap_or_default()
    ));
    if let Some(t) = c.moved_at {
        out.push(format!(
            "HEAD last moved by a pull, merge or reset {} (ORIG_HEAD)",
            stamp(t)
        ));
    }
    out
}

#[cfg(test)]
mod tests;
