//! Command-line types (clap derive). Doc comments here are the `--help` text.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const ABOUT: &str = "What is running on a GPU model server, how was it launched, and what changed?";

const MAIN_AFTER: &str = "\
Examples:
  probe host local                        report on this machine (no SSH)
  probe host gpu7 gpu8                    collect two hosts over SSH, store and report
  probe diff gpu7@~1 gpu7@latest          what changed on gpu7 since the snapshot before last
  probe diff gpu7 gpu8                    compare two live hosts (exit 1 when they differ)
  probe timeline gpu7                     every launch on gpu7, oldest first
  probe launch server.service --json      reconstruct a launch from a unit file
  probe audit --inventory fleet.toml      audit a fleet, report drift
  probe snapshots list                    stored snapshots, newest first
  probe resolve gpu7                      the SSH settings probe uses for gpu7 (like ssh -G)

Exit codes: 0 ok / no differences, 1 differences (diff, audit --fail-on drift), 2 error,
3 hosts failed (audit), 4 a host key was refused, 5 reported but not stored (kept in the spool),
6 a host's snapshot lost sections to the connection (probe host; audit status partial); host and
audit exit with the most severe (4 > 3 > 5 > 6 > 1).

Configuration: --config FILE, else $XDG_CONFIG_HOME/probe/config.toml (~/.config/probe/config.toml).
Snapshots are stored in $XDG_DATA_HOME/probe/snapshots.db unless --store PATH is given; a team
shares a PostgreSQL store with --store postgres://USER@HOST/DB (see docs/STORE.md).";

/// The `probe` command line.
#[derive(Debug, Parser)]
#[command(
    name = "probe",
    version,
    about = ABOUT,
    long_about = "probe connects to model-serving GPU hosts over SSH (honouring your ~/.ssh/config, \
agent and known_hosts), collects read-only evidence of how the model server was launched and what \
it runs on, stores a snapshot, and explains what changed, ranked by likely throughput impact.",
    after_long_help = MAIN_AFTER,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Options every command accepts.
#[derive(Debug, Clone, Args, Default)]
pub struct GlobalArgs {
    /// SSH client config file to use instead of ~/.ssh/config (as `ssh -F`).
    #[arg(short = 'F', long = "ssh-config", value_name = "FILE", global = true)]
    pub ssh_config: Option<PathBuf>,
    /// Snapshot store: a SQLite file, or a shared PostgreSQL store (`postgres://USER@HOST/DB`;
    /// the password from PGPASSWORD, ~/.pgpass or PGSERVICE, never the URL)
    /// [default: $XDG_DATA_HOME/probe/snapshots.db].
    #[arg(long, value_name = "PATH|URL", global = true, env = "PROBE_STORE")]
    pub store: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, global = true)]
    pub format: Option<Format>,
    /// When to use colour (NO_COLOR in the environment means never, unless `always`).
    #[arg(long, value_enum, global = true)]
    pub color: Option<ColorChoice>,
    /// More log output on stderr (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// probe config file [default: $XDG_CONFIG_HOME/probe/config.toml].
    #[arg(long, value_name = "FILE", global = true)]
    pub config: Option<PathBuf>,
    /// Trust and record the key of a host seen for the first time (as StrictHostKeyChecking
    /// accept-new). A changed key is always refused.
    #[arg(long, global = true)]
    pub accept_new: bool,
    /// Use the known_hosts FILE only (read and write) instead of the configured ones.
    #[arg(long, value_name = "FILE", global = true)]
    pub known_hosts: Option<PathBuf>,
    /// Run the same read-only collection under `sudo -n` (never prompts).
    #[arg(long, global = true)]
    pub sudo: bool,
    /// Keep secret values (tokens, keys, passwords) instead of redacting them. The snapshot is
    /// stored unredacted too.
    #[arg(long, global = true)]
    pub no_redact: bool,
    /// Do not ask the running model servers about themselves (by default a few GETs on a
    /// loopback port of the host: see docs/CLI.md, "What probe sends to a model server").
    #[arg(long, global = true)]
    pub no_ask_server: bool,
    /// Where a snapshot that could not be stored is kept, as a JSON file for `probe snapshots
    /// import` (a full disk, a read-only store, a shared store that does not answer)
    /// [default: $XDG_STATE_HOME/probe/spool].
    #[arg(long, value_name = "DIR", global = true, env = "PROBE_SPOOL")]
    pub spool: Option<PathBuf>,
    /// Also collect this systemd unit (repeatable), even if it does not look like a model server.
    #[arg(long = "unit", value_name = "NAME", global = true)]
    pub units: Vec<String>,
    /// Seconds allowed for TCP connect plus SSH handshake [default: ConnectTimeout or 10].
    #[arg(long, value_name = "SECS", global = true)]
    pub connect_timeout: Option<u64>,
    /// Seconds allowed per host for the whole collection [default: 120]; each wait for the
    /// store is bounded by it too, and an audit waits for its store no longer than
    /// (⌈hosts ÷ jobs⌉ + 1) deadlines after it started.
    #[arg(long, value_name = "SECS", global = true)]
    pub deadline: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// Text for a terminal.
    Human,
    /// JSON documents (probe-model types, with `schema_version`).
    Json,
    /// Markdown that fits a ticket.
    Markdown,
    /// One self-contained HTML page (host, diff, timeline, audit report): charts drawn as
    /// inline SVG, the JSON document embedded, no script, no external resource.
    Html,
    /// A POSIX sh script (`probe diff` only): the rollback plan, for a person to review and run
    /// on B with REVIEWED=yes. probe runs none of it.
    Sh,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ColorChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Collect one or more hosts, store a snapshot of each, and print the report.
    #[command(after_long_help = HOST_AFTER)]
    Host(HostArgs),
    /// Compare two hosts or snapshots (exit 0 same, 1 different, 2 error, like diff).
    #[command(after_long_help = DIFF_AFTER)]
    Diff(DiffArgs),
    /// Every launch of a host's model server, oldest first, with the one running now marked.
    #[command(after_long_help = TIMELINE_AFTER)]
    Timeline(TimelineArgs),
    /// Reconstruct a launch from a text: unit file, shell line, docker run, compose, k8s, argv.
    #[command(after_long_help = LAUNCH_AFTER)]
    Launch(LaunchArgs),
    /// Audit a fleet from an inventory: collect all hosts, report drift and failures.
    #[command(after_long_help = AUDIT_AFTER)]
    Audit(AuditArgs),
    /// List, show, export, import and prune stored snapshots.
    #[command(subcommand)]
    Snapshots(SnapshotsCommand),
    /// Print the SSH settings probe resolves for a target, in the form of `ssh -G`.
    #[command(after_long_help = RESOLVE_AFTER)]
    Resolve(ResolveArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(after_long_help = COMPLETIONS_AFTER)]
    Completions(CompletionsArgs),
    /// Print probe's man page (roff) to standard output.
    #[command(after_long_help = MAN_AFTER)]
    Man,
}

const COMPLETIONS_AFTER: &str = "\
Install:
  probe completions bash > ~/.local/share/bash-completion/completions/probe
  probe completions zsh > ~/.zfunc/_probe        # with fpath+=~/.zfunc before compinit
  probe completions fish > ~/.config/fish/completions/probe.fish";

const MAN_AFTER: &str = "\
Install:
  probe man > ~/.local/share/man/man1/probe.1 && man probe";

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum, value_name = "SHELL")]
    pub shell: clap_complete::Shell,
}

const HOST_AFTER: &str = "\
The report lists the host and its GPUs, each serving launch running now (engine, version, model,
the options that matter and where the launch came from), earlier launches, what changed against
the previous launch and against the last stored snapshot of this host (most likely cause of a
slowdown first), then log metrics with their time range.

Examples:
  probe host local
  probe host gpu7 root@10.0.0.8:2222 --format markdown > ticket.md
  probe host gpu7 --sudo --unit my-llm.service
  probe -F ./ssh_config host lab-a --accept-new";

const DIFF_AFTER: &str = "\
Each side is one of:
  TARGET              a live host: collected now (and stored)
  HOST@latest         the newest stored snapshot of HOST
  HOST@~N             N snapshots before the newest (HOST@~1: the one before last)
  HOST@YYYY-MM-DD     the newest snapshot taken on or before that day (UTC)
  SNAPSHOT-ID         a stored snapshot, by id (see `probe snapshots list`)
  FILE.json           a snapshot file (from `probe snapshots export`)

Examples:
  probe diff gpu7@~1 gpu7@latest
  probe diff gpu7 gpu8 --format markdown
  probe diff before.json gpu7
  probe diff gpu7 gpu8 --rollback                   # the plan to roll gpu8 back to gpu7
  probe diff gpu7 gpu8 --format sh -o rollback.sh   # the same plan as a script to review;
                                                    # on gpu8: REVIEWED=yes sh rollback.sh";

const TIMELINE_AFTER: &str = "\
TARGET is a live host, a stored snapshot reference (HOST@latest, HOST@~1, an id) or a snapshot
file.

Examples:
  probe timeline gpu7
  probe timeline gpu7@latest --format json";

const LAUNCH_AFTER: &str = "\
Reads FILE, or standard input when FILE is `-` or absent. Secrets are redacted unless --no-redact.
With --json (or --format json) prints an array of {\"launch\": LaunchConfig, \"common\": {...}}.

Examples:
  probe launch /etc/systemd/system/vllm.service
  echo 'python -m sglang.launch_server --model-path m --tp 2' | probe launch - --json
  probe launch compose.yaml --engine vllm --version 0.11.0";

const AUDIT_AFTER: &str = "\
Inventory formats (by extension, else by content): probe TOML (see configs/inventory.example.toml),
Ansible INI and YAML inventories, and ssh_config files (every non-wildcard Host entry).

The summary has one line per host: ok, changed (what), unreachable, auth failed, host key
refused, timed out or error. Drift is measured against each host's previous stored snapshot.

Exit status with --fail-on, the most severe outcome first (4 > 3 > 5 > 1):
  drift  (default) 4 when a host key was refused, else 3 when a host failed, else 5 when a
         snapshot could not be stored (kept in the spool), else 1 when any host drifted
  error  4 when a host key was refused, else 3 when a host failed, else 5 when a snapshot was
         not stored; drift does not fail
  never  0 unless probe itself failed
A refused host key (a possible impostor) is never masked by failed or drifted hosts.

Examples:
  probe audit --inventory fleet.toml
  probe audit --inventory hosts.ini -j 16 --jsonl > audit.jsonl
  probe audit --inventory ~/.ssh/config --prometheus /var/lib/node_exporter/probe.prom
  probe audit -i fleet.toml --shard 2/4 --store postgres://probe@db/probe --jsonl
  probe audit -i fleet.toml --shard-index-env JOB_COMPLETION_INDEX --shards 8
  probe audit -i fleet.toml --outliers --group prod
  probe audit report                       the whole fleet's last audit, from the store

Sharding: --shard I/N audits the hosts whose name hashes (rendezvous hashing) to shard I; adding a
host moves no other host. Each shard writes its own --prometheus file and JSON Lines; the
audit-level metrics carry a shard label. The outcome of every host goes to the store, so
`probe audit report` shows every shard's hosts. Examples for Kubernetes and systemd in examples/.";

const EXPORT_AFTER: &str = "\
Moving a laptop's SQLite history into the team's PostgreSQL store and back (oldest first, so host
identities are rebuilt as they grew; a snapshot already there is replaced, so a copy can be rerun):
  probe --store postgres://probe@db.internal/probe snapshots import --from-store ~/.local/share/probe/snapshots.db
  probe --store postgres://probe@db.internal/probe snapshots export --to-store backup.db";

const RESOLVE_AFTER: &str = "\
Examples:
  probe resolve gpu7
  probe -F ./ssh_config resolve lab-a";

#[derive(Debug, Args)]
pub struct HostArgs {
    /// Hosts to collect: `local`, an ssh_config alias, `host`, `user@host:port`, `[v6]:port`.
    #[arg(value_name = "TARGET", required = true)]
    pub targets: Vec<String>,
    /// Do not store the snapshots (the report still compares with the stored ones).
    #[arg(long)]
    pub no_store: bool,
    /// How many hosts to collect at once.
    #[arg(short = 'j', long, default_value_t = 8, value_name = "N")]
    pub jobs: usize,
    /// Write the report to FILE instead of standard output (with --format html: the page).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The period that was good, compared with now: a date (2026-11-20, that UTC day), a range
    /// (2026-11-20..2026-11-25, the end date whole; times allowed, UTC unless an offset is
    /// given), a span ago (7d: the 24 hours that ended 7 days before the collection; 36h, 2w),
    /// run:N (the running server's run N back: run:1 is the one before the running run),
    /// run:TIME (the run up then) or a stored snapshot (id or HOST@...: the run up when it was
    /// collected, up to then). Now is the running run since its last change point, after the
    /// baseline.
    #[arg(long, value_name = "WHEN")]
    pub baseline: Option<String>,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// The "before" side (target, HOST@latest, HOST@~N, HOST@DATE, snapshot id or file).
    #[arg(value_name = "A")]
    pub before: String,
    /// The "after" side.
    #[arg(value_name = "B")]
    pub after: String,
    /// Also count volatile differences (PIDs, uptime, utilisation) as changes.
    #[arg(long)]
    pub include_volatile: bool,
    /// Print only the plan that rolls B back to A on the launcher that runs it (the files and
    /// lines to change, the reload, the restart, what to check after), as an ordered checklist;
    /// `--format sh` prints it as a script to review. probe runs none of it.
    #[arg(long)]
    pub rollback: bool,
    /// Write the diff to FILE instead of standard output (with --format html: the page).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// The period that was good (read from A's logs), compared by the verdict with B's now
    /// instead of the two running runs: WHEN as for `probe host --baseline` (a date, A..B, 7d,
    /// run:N, run:TIME, a snapshot; spans ago count back from B's collection).
    #[arg(long, value_name = "WHEN")]
    pub baseline: Option<String>,
}

#[derive(Debug, Args)]
pub struct TimelineArgs {
    /// A live target, a stored snapshot reference or a snapshot file.
    #[arg(value_name = "TARGET")]
    pub target: String,
    /// Write the timeline to FILE instead of standard output (with --format html: the page).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LaunchKind {
    Auto,
    Argv,
    Unit,
    Shell,
    Docker,
    Compose,
    K8s,
    SglangLog,
    VllmLog,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The launch text; `-` or absent: standard input.
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// The engine, when the text does not make it clear.
    #[arg(long, value_name = "ENGINE")]
    pub engine: Option<String>,
    /// Installed engine version, to read options with that version's catalog.
    #[arg(long = "version", value_name = "V")]
    pub engine_version: Option<String>,
    /// What the text is [default: guessed].
    #[arg(long, value_enum, default_value_t = LaunchKind::Auto)]
    pub kind: LaunchKind,
    /// Print JSON (same as --format json).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Drift,
    Error,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProgressChoice {
    Auto,
    Always,
    Never,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    /// Inventory: probe TOML, Ansible INI or YAML, or an ssh_config file.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Audit only shard I of N (0-based): hosts are partitioned by a stable hash of their name,
    /// so N runners (a Kubernetes Indexed Job, N timer instances) share a fleet.
    #[arg(long, value_name = "I/N", env = "PROBE_SHARD")]
    pub shard: Option<crate::shard::Shard>,
    /// Take the shard index from this environment variable (JOB_COMPLETION_INDEX of an Indexed
    /// Job) and the count from --shards.
    #[arg(
        long,
        value_name = "VAR",
        requires = "shards",
        conflicts_with = "shard"
    )]
    pub shard_index_env: Option<String>,
    /// Number of shards for --shard-index-env.
    #[arg(long, value_name = "N", requires = "shard_index_env")]
    pub shards: Option<u32>,
    /// Also report, per inventory group and tag, the hosts that differ from the group's modal
    /// configuration (from each host's latest stored snapshot, across all shards).
    #[arg(long)]
    pub outliers: bool,
    /// Only hosts of this group (repeatable).
    #[arg(long = "group", value_name = "GROUP")]
    pub groups: Vec<String>,
    /// Only hosts with this tag (repeatable).
    #[arg(long = "tag", value_name = "TAG")]
    pub tags: Vec<String>,
    /// Hosts collected at once.
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// Which outcome makes the exit status non-zero.
    #[arg(long, value_enum, default_value_t = FailOn::Drift)]
    pub fail_on: FailOn,
    /// Print one JSON record per host as it finishes (JSON Lines), then a summary record.
    #[arg(long)]
    pub jsonl: bool,
    /// Write node_exporter textfile metrics to FILE (atomically).
    #[arg(long, value_name = "FILE")]
    pub prometheus: Option<PathBuf>,
    /// Progress bar on stderr [default: auto, only on a terminal].
    #[arg(long, value_enum, default_value_t = ProgressChoice::Auto)]
    pub progress: ProgressChoice,
    /// Do not store the snapshots.
    #[arg(long)]
    pub no_store: bool,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// The fleet's last audit from the store, across every runner and shard: per host its
    /// status, when it was audited, the age of its newest snapshot and its drift; then the hosts
    /// that differ from their group.
    #[command(after_long_help = AUDIT_REPORT_AFTER)]
    Report(AuditReportArgs),
}

const AUDIT_REPORT_AFTER: &str = "\
Without --inventory every host with a stored audit record is listed; with it, exactly the
inventory's hosts (selected by --group/--tag), and a host no shard has audited yet shows as
`never audited`.

Examples:
  probe --store postgres://probe@db/probe audit report
  probe audit report --inventory fleet.toml --group prod --format json";

#[derive(Debug, Args)]
pub struct AuditReportArgs {
    /// List exactly this inventory's hosts.
    #[arg(long, short = 'i', value_name = "FILE")]
    pub inventory: Option<PathBuf>,
    /// Only hosts of this group (repeatable; needs --inventory).
    #[arg(long = "group", value_name = "GROUP", requires = "inventory")]
    pub groups: Vec<String>,
    /// Only hosts with this tag (repeatable; needs --inventory).
    #[arg(long = "tag", value_name = "TAG", requires = "inventory")]
    pub tags: Vec<String>,
    /// Leave out the outliers section.
    #[arg(long)]
    pub no_outliers: bool,
    /// Write the report to FILE instead of standard output (with --format html: the page).
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotsCommand {
    /// Stored snapshots, newest first (optionally of one host).
    List {
        /// Host name, target, address or machine-id.
        host: Option<String>,
    },
    /// Print one stored snapshot's report (or JSON with --format json).
    Show {
        /// HOST@latest, HOST@~N, HOST@DATE or a snapshot id.
        reference: String,
    },
    /// Write a stored snapshot as a JSON file (standard output without -o), or copy the whole
    /// history into another store (`--to-store`).
    #[command(after_long_help = EXPORT_AFTER)]
    Export {
        #[arg(required_unless_present = "to_store", conflicts_with = "to_store")]
        reference: Option<String>,
        #[arg(short, long, value_name = "FILE")]
        output: Option<PathBuf>,
        /// Copy every snapshot of this store into another store (SQLite file or PostgreSQL URL).
        #[arg(long, value_name = "PATH|URL")]
        to_store: Option<String>,
    },
    /// Store snapshot JSON files (from `export` or another machine), or copy the whole history
    /// of another store into this one (`--from-store`).
    #[command(after_long_help = EXPORT_AFTER)]
    Import {
        #[arg(required_unless_present = "from_store", value_name = "FILE")]
        files: Vec<PathBuf>,
        /// Copy every snapshot of this other store (SQLite file or PostgreSQL URL) into this one.
        #[arg(long, value_name = "PATH|URL")]
        from_store: Option<String>,
    },
    /// Delete old snapshots; the newest --keep of each host are always kept.
    Prune {
        /// Snapshots kept per host regardless of age.
        #[arg(long, default_value_t = 10, value_name = "N")]
        keep: usize,
        /// Delete only snapshots older than this many days.
        #[arg(long, value_name = "DAYS")]
        older_than: Option<u64>,
        /// Only this host.
        #[arg(long, value_name = "HOST")]
        host: Option<String>,
        /// Show what would be deleted.
        #[arg(long)]
        dry_run: bool,
    },
}

#[derive(Debug, Args)]
pub struct ResolveArgs {
    /// An ssh_config alias, `host`, `user@host:port`.
    #[arg(value_name = "TARGET")]
    pub target: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn clap_definition_is_valid() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_flags_anywhere() {
        let cli = Cli::try_parse_from([
            "probe",
            "host",
            "gpu7",
            "-F",
            "cfg",
            "--store",
            "s.db",
            "--format",
            "markdown",
            "--sudo",
            "--unit",
            "a.service",
            "--unit",
            "b.service",
            "-vv",
        ])
        .unwrap();
        assert_eq!(cli.global.ssh_config, Some(PathBuf::from("cfg")));
        assert_eq!(cli.global.format, Some(Format::Markdown));
        assert_eq!(cli.global.units, ["a.service", "b.service"]);
        assert_eq!(cli.global.verbose, 2);
        assert!(cli.global.sudo);
    }

    #[test]
    fn launch_version_flag_is_the_engine_version() {
        let cli = Cli::try_parse_from([
            "probe",
            "launch",
            "-",
            "--engine",
            "vllm",
            "--version",
            "0.11",
        ])
        .unwrap();
        let Command::Launch(args) = cli.command else {
            panic!("not launch")
        };
        assert_eq!(args.engine_version.as_deref(), Some("0.11"));
    }
}
