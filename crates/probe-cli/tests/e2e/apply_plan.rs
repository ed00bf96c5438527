//! The rollback loop of issue 33 item 6, end to end: `probe diff GOOD CHANGED --format sh`
//! written onto the changed fixture host, reviewed (`REVIEWED=yes`) and run there as root over
//! SSH (the files it edits are the host's own copy; its restart goes through the host's
//! launcher, or its stand-in, which starts the fake engine again from the edited files), the
//! host collected again, and `probe diff GOOD CHANGED` exits 0. The changed host is a private
//! instance (its own copy, sshd and namespace), so the shared one other tests read stays as it
//! was; probe itself only reads, before and after.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use probe_testkit::fixture::FixtureHost;

use crate::util;

/// A good host from the shared fleet and a private instance of the changed one, with one
/// ssh_config naming both and a store of their own.
pub struct Loop {
    pub good: String,
    pub changed: FixtureHost,
    /// Kept for its ssh_config and known_hosts, which `config` names.
    _fleet: probe_testkit::fixture::SharedFleet,
    config: PathBuf,
    dir: tempfile::TempDir,
    store: PathBuf,
}

impl Loop {
    pub fn start(good: &str, changed: &str) -> Loop {
        let fleet = util::fleet(&[good]);
        let changed = FixtureHost::start(changed);
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("ssh_config");
        let mut text = std::fs::read_to_string(fleet.ssh_config()).unwrap();
        text.push('\n');
        text.push_str(&std::fs::read_to_string(changed.ssh_config()).unwrap());
        std::fs::write(&config, text).unwrap();
        let store = dir.path().join("snapshots.db");
        Loop {
            good: format!("fx-{good}"),
            changed,
            _fleet: fleet,
            config,
            dir,
            store,
        }
    }

    pub fn probe(&self, args: &[&str]) -> Output {
        util::probe_on(self.dir.path(), &self.config, &self.store).run(args)
    }

    /// Both hosts collected now.
    pub fn collect(&self) {
        for alias in [self.good.as_str(), self.changed.alias.as_str()] {
            let out = self.probe(&["host", alias]);
            assert_eq!(out.status.code(), Some(0), "{}", util::text(&out.stderr));
        }
    }

    /// `probe diff GOOD@latest CHANGED@latest` with `extra`.
    pub fn diff(&self, extra: &[&str]) -> Output {
        let good = format!("{}@latest", self.good);
        let changed = format!("{}@latest", self.changed.alias);
        let args = [&["diff", good.as_str(), changed.as_str()][..], extra].concat();
        let out = self.probe(&args);
        util::assert_output_schema(&args, &out);
        out
    }

    /// The diff's JSON.
    pub fn diff_json(&self) -> (probe_model::SnapshotDiff, i32) {
        let out = self.diff(&["--format", "json"]);
        let diff = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", util::text(&out.stdout)));
        (diff, out.status.code().unwrap_or(-1))
    }

    /// The plan as a script, written into the changed host's /root, then run there as root
    /// from a login shell's environment (`env`, the variables the server was started with
    /// where it was started by hand) with `REVIEWED=yes`.
    pub fn apply(&self, env: &str) -> Output {
        let sh = self.diff(&["--format", "sh"]);
        assert_eq!(sh.status.code(), Some(1), "{}", util::text(&sh.stderr));
        let file = self.changed.dir.join("root/root/probe-rollback.sh");
        std::fs::write(&file, &sh.stdout).unwrap();
        self.changed.ssh(&format!(
            "cd /root && env -i {env} REVIEWED=yes sh /root/probe-rollback.sh </dev/null"
        ))
    }

    /// A file of the changed host (its path inside the namespace).
    pub fn file(&self, path: &str) -> PathBuf {
        self.changed
            .dir
            .join("root")
            .join(path.trim_start_matches('/'))
    }

    /// Waits until `path` of the changed host holds `text` at least `count` times.
    pub fn wait_for(&self, path: &str, text: &str, count: usize) {
        let file = self.file(path);
        util::wait_until(
            &format!("{count} x {text:?} in {path}"),
            Duration::from_secs(60),
            || count_in(&file, text) >= count,
        );
    }
}

/// How many times `text` is in the file at `path` (0 when unreadable).
pub fn count_in(path: &Path, text: &str) -> usize {
    String::from_utf8_lossy(&std::fs::read(path).unwrap_or_default())
        .matches(text)
        .count()
}

/// The login environment the fixture hosts' servers were started from by hand.
pub const LOGIN_ENV: &str = "HOME=/root LANG=C.UTF-8 \
     PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LOGNAME=root USER=root \
     SHELL=/bin/bash";

/// What a diff still holds that counts, said for a failed assertion.
pub fn left(diff: &probe_model::SnapshotDiff) -> Vec<String> {
    diff.changes
        .iter()
        .filter(|c| c.impact != probe_model::Impact::None)
        .map(|c| {
            format!(
                "{} ({:?}): {:?} -> {:?}",
                c.key, c.impact, c.before, c.after
            )
        })
        .collect()
}
