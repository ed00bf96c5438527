//! A rollback plan, typed: what rolling one host's server back to another's launch changes, on
//! the launcher that runs it (systemd, Docker Compose, Kubernetes, a process started by hand),
//! step by step (stop, change, reload, start, verify), each step saying the file, the old and
//! new text and why. probe prints it (as a checklist or a POSIX sh script to review); it never
//! runs any of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::DefiningFileRole;

/// What rolling `after` back to `before` takes, in order.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RollbackPlan {
    /// The launcher that runs the server being rolled back.
    pub launcher: Launcher,
    /// The steps, in the order they are to be done: stop, change, reload, start, verify.
    pub steps: Vec<RollbackStep>,
    /// Values the snapshots hold redacted that a step needs: each is a named placeholder in
    /// the steps (`<REDACTED:HF_TOKEN>`) that the person running the plan fills in.
    pub placeholders: Vec<Placeholder>,
}

impl RollbackPlan {
    /// Whether the plan has nothing to do.
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }
}

/// The launcher that runs a server.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Launcher {
    /// No launcher is known (no server both sides run, or only a log line of it).
    #[default]
    Unknown,
    /// A systemd unit.
    Systemd { unit: String },
    /// A Docker Compose service.
    Compose {
        project: String,
        service: String,
        files: Vec<String>,
    },
    /// A Kubernetes pod, with its workload as far as its name tells.
    Kubernetes {
        namespace: Option<String>,
        pod: String,
        /// `deployment/vllm`, `statefulset/vllm`, `leaderworkerset/vllm`, when inferred.
        owner: Option<String>,
    },
    /// A container started without Compose or Kubernetes (`docker run`).
    Container { name: String },
    /// A process started by hand (a shell, a script): nothing restarts it.
    Process { pid: Option<u32> },
}

/// One step of a plan.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct RollbackStep {
    pub action: RollbackAction,
    /// Why: what it undoes and what it leaves alone.
    pub why: String,
}

/// What a step does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RollbackAction {
    /// Change one setting's line(s) of a file: `old` becomes `new`; no `old`: add `new` (to
    /// the end, or under `section`); no `new`: remove `old`. A line whose value the snapshot
    /// holds redacted is matched by `old` up to its marker (its `KEY=`), never printed.
    EditLine {
        file: String,
        role: DefiningFileRole,
        /// The setting (`ExecStart=`, `Environment=NCCL_P2P_DISABLE`, `HF_TOKEN`).
        setting: String,
        /// The line(s) as the file holds them now (continuation lines joined by `\n`).
        old: Option<String>,
        new: Option<String>,
        /// The section a new line goes under (`[Service]`).
        section: Option<String>,
        /// `old` is matched by its key alone (`HF_TOKEN=`): the file's text was not read (an
        /// `EnvironmentFile=` is read as its variables) or its value is redacted.
        #[serde(default)]
        key_only: bool,
    },
    /// Remove a whole file (a drop-in that holds only the change).
    RemoveFile {
        file: String,
        role: DefiningFileRole,
    },
    /// Stop what runs now (a process started by hand: nothing else stops it).
    Stop { command: String },
    /// Run a command on the host (a reload, a package pin, a power limit).
    Run { command: String },
    /// Start the server again under its launcher.
    Restart { command: String },
    /// Check that it took: `command` (run on the host, or where probe runs) and what it
    /// should show.
    Verify {
        command: Option<String>,
        at: VerifyAt,
        expect: String,
    },
    /// What cannot be written as a command from the evidence (a driver, a manifest probe has
    /// not read): said in words.
    Manual { what: String },
}

impl Default for RollbackAction {
    fn default() -> Self {
        RollbackAction::Manual {
            what: String::new(),
        }
    }
}

/// Where a verify step's command runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerifyAt {
    /// On the host rolled back.
    #[default]
    Host,
    /// Where probe runs (`probe diff A B` again).
    Probe,
}

/// A value a step needs that the snapshots hold redacted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct Placeholder {
    /// What stands in the steps (`<REDACTED:HF_TOKEN>`).
    pub text: String,
    /// The variable or option it is the value of.
    pub name: String,
    /// Where the real value lives (`the HF_TOKEN= line of /etc/default/vllm on host a`).
    pub lives: String,
}

/// The placeholder text for a redacted value of `name`.
pub fn placeholder(name: &str) -> String {
    format!("<REDACTED:{name}>")
}

/// The start of every placeholder: a step holding it must be filled in first.
pub const PLACEHOLDER_PREFIX: &str = "<REDACTED:";
