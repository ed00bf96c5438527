//! Earlier versions known, not only "older than": the `pip install NAME==VERSION` lines of the
//! shell histories, read as what an environment held from then on. A run that started after such
//! a pin (and before the next install of that package) ran the pinned version.

use probe_model::{Snapshot, UnixTime};

use probe_model::civil::utc_minute as utc;

/// A version pinned by a history line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pin {
    pub version: String,
    pub at: UnixTime,
    /// `/root/.bash_history` line and time, for the report.
    pub evidence: String,
}

/// `pip`, `pip3`, `python -m pip`, `uv pip` (any path before them, after `sudo` and variable
/// assignments) followed by `install`; a line that only mentions one (`echo pip install`) is not.
fn is_pip_install(words: &[&str]) -> bool {
    let base = |w: &str| w.rsplit('/').next().unwrap_or(w).to_string();
    let start = words
        .iter()
        .position(|w| *w != "sudo" && !w.contains('='))
        .unwrap_or(words.len());
    let rest = words.get(start..).unwrap_or_default();
    match rest {
        [tool, "install", ..] if base(tool).starts_with("pip") => true,
        [python, "-m", "pip", "install", ..] if base(python).starts_with("python") => true,
        [uv, "pip", "install", ..] if base(uv) == "uv" => true,
        _ => false,
    }
}

/// `NAME==VERSION` (extras allowed, quotes stripped) when NAME is `name` (PEP 503 normalised).
fn pinned<'a>(word: &'a str, name: &str) -> Option<&'a str> {
    let word = word.trim_matches(|c| c == '\'' || c == '"');
    let (package, version) = word.split_once("==")?;
    let package = package.split('[').next().unwrap_or(package);
    let normal = |s: &str| s.to_ascii_lowercase().replace(['_', '.'], "-");
    let plain = !version.is_empty()
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || ".+-_!".contains(c));
    (normal(package) == normal(name) && plain).then_some(version)
}

/// The timestamped `pip install` lines of a snapshot's histories, found once for all its runs
/// (a run asks for its engine's pin; scanning every history entry per run made the analysis
/// grow with runs times entries).
pub struct Pins<'a> {
    /// (time, the line's words, file, entry index), in no particular order.
    lines: Vec<(UnixTime, Vec<&'a str>, &'a str, u32)>,
}

impl<'a> Pins<'a> {
    pub fn of(snapshot: &'a Snapshot) -> Pins<'a> {
        let mut lines = Vec::new();
        for file in &snapshot.histories {
            for entry in &file.entries {
                let Some(at) = entry.time else { continue };
                let words: Vec<&str> = entry.command.split_whitespace().collect();
                if is_pip_install(&words) {
                    lines.push((at, words, file.path.as_str(), entry.index));
                }
            }
        }
        Pins { lines }
    }

    /// The latest pin of one of `names` before `before`.
    pub fn before<S: AsRef<str>>(&self, names: &[S], before: UnixTime) -> Option<Pin> {
        let mut best: Option<Pin> = None;
        for (at, words, path, index) in &self.lines {
            if *at >= before || best.as_ref().is_some_and(|b| b.at >= *at) {
                continue;
            }
            let version = words
                .iter()
                .find_map(|w| names.iter().find_map(|n| pinned(w, n.as_ref())));
            if let Some(version) = version {
                best = Some(Pin {
                    version: version.to_string(),
                    at: *at,
                    evidence: format!("{path}#{index} at {}", utc(*at)),
                });
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use probe_model::{HistoryEntry, HistoryFile};

    use super::*;

    fn snapshot(lines: &[(i64, &str)]) -> Snapshot {
        Snapshot {
            histories: vec![HistoryFile {
                path: "/root/.bash_history".into(),
                entries: lines
                    .iter()
                    .enumerate()
                    .map(|(i, (t, c))| HistoryEntry {
                        index: i as u32,
                        time: Some(*t),
                        command: c.to_string(),
                    })
                    .collect(),
                ..HistoryFile::default()
            }],
            ..Snapshot::default()
        }
    }

    #[test]
    fn pins_from_history() {
        let s = snapshot(&[
            (100, "/opt/venv/bin/pip install 'sglang[all]==0.5.6'"),
            (200, "pip3 install -U sglang==0.5.8 sgl-kernel==0.3.20"),
            (300, "uv pip install sglang==0.5.9"),
            (350, "echo pip install sglang==9.9.9"),
            (400, "python -m pip install vllm==0.10.2"),
            (500, "pip install 'sglang==0.5.9; rm -rf /'"),
        ]);
        // (before, names, version)
        let cases: [(i64, &[&str], Option<&str>); 6] = [
            (150, &["sglang"], Some("0.5.6")),
            (250, &["sglang"], Some("0.5.8")),
            (301, &["sglang"], Some("0.5.9")),
            (100, &["sglang"], None),
            (450, &["vllm"], Some("0.10.2")),
            (450, &["sgl_kernel"], Some("0.3.20")),
        ];
        for (before, names, want) in cases {
            let got = Pins::of(&s).before(names, before);
            assert_eq!(
                got.as_ref().map(|p| p.version.as_str()),
                want,
                "{before} {names:?}"
            );
        }
        assert_eq!(
            Pins::of(&s).before(&["sglang"], 1000).map(|p| p.version),
            Some("0.5.9".into())
        );
        assert!(
            Pins::of(&s)
                .before(&["sglang"], 250)
                .unwrap()
                .evidence
                .starts_with("/root/.bash_history#1 at ")
        );
    }
}
