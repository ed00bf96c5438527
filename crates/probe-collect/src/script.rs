//! Builds the remote POSIX `sh` scripts from `configs/probes.toml`.
//!
//! A round is several `sh -s` runs, one per *group* of probes (see [`groups`]), each on its own
//! SSH exec channel so that groups run concurrently and a slow program holds only its own
//! group. Inside a group, the sections of one *lane* run one after another and the lanes run
//! at once ([`Group::lanes`]): each `sec` line queues a section and `go` starts the lanes as
//! one pipeline, lane 0 writing to the channel and every other lane into a `tail -c` that holds
//! all it may print (no section waits on a full pipe) and is copied after the lanes before it,
//! so sections never interleave. A lane costs a fork, a `tail` and a `cat`; a channel costs
//! an sshd session, a login shell, this script's setup and the prelude parsed again. The script arrives on stdin; round-2 inputs are single-quoted shell variables
//! (`R2_*`), never spliced into commands. [`build`] still gives the whole round as one script
//! (used by the busybox and local tests, and by the benchmark's one-ssh baseline).
//!
//! The per-run boundary `$B` lives only in shell variables: no process started by the scripts
//! receives it as an argument (other users read every `/proc/PID/cmdline`). Each section runs
//! as `printf '%s' "$P{ COMMAND } </dev/null" | timeout T [sudo -n] sh -s`: its prelude
//! and command reach the section's shell on a pipe. Its stdout goes through `head -c CAP+1`
//! (one byte more than the cap tells "truncated") and its stderr through `head -c 2048`, both
//! readers themselves under `timeout`, so an orphan that keeps the pipe open (`setsid sleep
//! &`) cannot hold the section past its limit. The section reports its exit code and start/end
//! time (centiseconds of /proc/uptime). A budget stops starting sections when the deadline is
//! near, so a run always ends, with every section accounted for, before the transport's own
//! deadline.
//!
//! Works under dash, busybox ash and bash: no arrays, no `local`, no `$'..'`, no process
//! substitution. Writes nothing (only to fd 1-5 and /dev/null), signals nothing (other than
//! `timeout` stopping its own child).

use std::time::Duration;

mod round2_vars;

use round2_vars::round2_vars;

use crate::CollectOptions;
use crate::config::{self, Probe};

/// Shell single quoting: safe for any bytes except NUL.
pub fn sq(s: &str) -> String {
    // Copied in runs between quotes, not char by char: the prelude (about 10 KB) is quoted into
    // every group's script of every host.
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for (i, part) in s.split('\'').enumerate() {
        if i > 0 {
            out.push_str("'\\''");
        }
        if part.contains('\0') {
            out.extend(part.chars().filter(|&c| c != '\0'));
        } else {
            out.push_str(part);
        }
    }
    out.push('\'');
    out
}

/// Inputs of the round-2 script (one entry per line in the shell variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round2Inputs {
    /// Python prefixes (venv / conda / system) whose site-packages are read.
    pub python_prefixes: Vec<String>,
    /// Where to look for each model a launch names.
    pub models: Vec<ModelLookup>,
    /// Log files to tail.
    pub logs: Vec<String>,
    /// (`system`|`user`, unit name) for journalctl.
    pub units: Vec<(String, String)>,
    /// (log driver, `LogPath`) of containers whose runtime keeps a text log file
    /// (`json-file`, `k8s-file`): tailed as files, decoded by the parser.
    pub container_logs: Vec<(String, String)>,
    /// PIDs whose owner (uid) is read: nvidia-smi's compute processes.
    pub gpu_pids: Vec<u32>,
    /// PIDs of serving processes whose `/proc/PID/maps` is reduced to CUDA-stack libraries.
    pub maps_pids: Vec<u32>,
    /// Directories searched for benchmark result files.
    pub bench_dirs: Vec<BenchDir>,
    /// Files read as a launch's text: (kind word, the evidence naming it, absolute path).
    pub launch_files: Vec<(String, String, String)>,
    /// Places where the server's output was found named (a cron line, a timer, logrotate's
    /// `olddir`, kubelet's pod directory): one directory and a name pattern each.
    pub found: Vec<crate::found::FoundPlace>,
    /// Engines installed outside package managers: (`bin`|`models`, absolute path), see
    /// `plan/self_installed.rs`.
    pub self_installed: Vec<(String, String)>,
    /// The host's CPUs (round 1's `host` section): a round-2 group runs at most that many
    /// lanes at once (not an input of the script itself).
    pub cpus: Option<u32>,
}

/// A directory searched for benchmark result files, with the rights of its owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BenchDir {
    /// The user the files are read as (`-`: the collector).
    pub owner: String,
    pub uid: Option<u32>,
    /// The owner's home: the directory must stay inside it (`None`: a directory outside
    /// any home, read only at its canonical path).
    pub home: Option<String>,
    pub dir: String,
}

/// One place to look for a model's `config.json`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelLookup {
    pub kind: ModelLookupKind,
    /// The model as the launch names it.
    pub named: String,
    /// The directory to look in.
    pub dir: String,
}

/// How the round-2 script reads a [`ModelLookup`]'s directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelLookupKind {
    /// A model directory: `config.json` in it.
    Dir,
    /// A Hugging Face hub cache repository (`models--org--name`): the snapshot `refs/main`
    /// names, else any snapshot.
    HfCache,
}

impl ModelLookupKind {
    /// The word the script's `R2_MODELS` lines carry.
    pub fn as_str(self) -> &'static str {
        match self {
            ModelLookupKind::Dir => "dir",
            ModelLookupKind::HfCache => "hf",
        }
    }
}

impl Round2Inputs {
    pub fn is_empty(&self) -> bool {
        self.python_prefixes.is_empty()
            && self.models.is_empty()
            && self.logs.is_empty()
            && self.units.is_empty()
            && self.container_logs.is_empty()
            && self.gpu_pids.is_empty()
            && self.maps_pids.is_empty()
            && self.bench_dirs.is_empty()
            && self.launch_files.is_empty()
            && self.found.is_empty()
            && self.self_installed.is_empty()
    }

    /// Adds what `other` holds and `self` does not (the plans of round 2's waves, joined for
    /// the parsers).
    pub fn absorb(&mut self, other: Round2Inputs) {
        fn union<T: PartialEq>(into: &mut Vec<T>, from: Vec<T>) {
            for x in from {
                if !into.contains(&x) {
                    into.push(x);
                }
            }
        }
        union(&mut self.python_prefixes, other.python_prefixes);
        union(&mut self.models, other.models);
        union(&mut self.logs, other.logs);
        union(&mut self.units, other.units);
        union(&mut self.container_logs, other.container_logs);
        union(&mut self.gpu_pids, other.gpu_pids);
        union(&mut self.maps_pids, other.maps_pids);
        union(&mut self.bench_dirs, other.bench_dirs);
        union(&mut self.launch_files, other.launch_files);
        union(&mut self.found, other.found);
        union(&mut self.self_installed, other.self_installed);
        self.cpus = self.cpus.or(other.cpus);
    }
}

const RUNNER: &str = r#"
# sec NAME LIMIT CAP SUDO DEPENDS_ON LANE COMMAND queues a section; `go` runs the queue.
_qn=0
sec() { _qn=$((_qn + 1)); eval "_qa$_qn=\$1 _qb$_qn=\$2 _qc$_qn=\$3 _qd$_qn=\$4 _qe$_qn=\$5 _qf$_qn=\$6 _qg$_qn=\$7"; }
# lane N: the queued sections of lane N, one after another (fd 4: where their output goes).
lane() {
  exec 4>&1
  _li=0
  while [ "$_li" -lt "$_qn" ]; do
    _li=$((_li + 1))
    eval "_lx=\$_qf$_li"
    [ "$_lx" = "$1" ] && eval "run1 \"\$_qa$_li\" \"\$_qb$_li\" \"\$_qc$_li\" \"\$_qd$_li\" \"\$_qe$_li\" \"\$_qg$_li\""
  done
}
# go LANES HOLD...: lanes 0 .. LANES-1 at once. Lane 0 writes to the channel; each other lane
# writes into a `tail -c HOLD` (at least what its sections may print, so none of them ever
# waits on a full pipe) that is copied to the channel once the lanes before it are done: one
# writer at a time, so sections never interleave.
go() {
  _gn=$1; shift
  _gc='lane 0 </dev/null'; _gk=1
  while [ "$_gk" -lt "$_gn" ] && [ "$#" -gt 0 ]; do
    _gc="lane $_gk </dev/null | tail -c $1 | { $_gc; cat; }"
    shift; _gk=$((_gk + 1))
  done
  eval "$_gc"
}
run1() {
  _n=$1; _l=$2; _c=$3; _s=$4; _d=$5; _b=$6
  printf '\n%s BEGIN %s\n' "$B" "$_n"
  now; _t0=$_now; _r=; _dr=
  [ -n "$_d" ] && eval "_dr=\${rc_$_d:-}"
  if [ "$_dr" = 124 ] || [ "$_dr" = 137 ]; then
    _r="$B rc 200"
  else
    # The shell of a stopped section is killed 2 s after its limit and its readers 1 s after that:
    # keep that margin inside the budget (less of it when little time is left).
    _left=$(( (DL - _t0) / 100 )); _m=3; [ "$_left" -lt 9 ] && _m=$((_left / 3))
    _left=$((_left - _m))
    if [ "$_left" -lt 1 ]; then
      _r="$B rc 201"
    else
      [ "$_l" -gt "$_left" ] && _l=$_left
      _pre=; _me=$ME; [ "$_s" = 1 ] && [ -n "$SU" ] && { _pre=$SU; _me=0; }
      _rl=$((_l + 3))
      _r=$( { { { printf '%s\nME=%s\nSDL=%s\n{\n%s\n} </dev/null\n' "$P" "$_me" "$((_t0 + _l * 100))" "$_b" | to "$_l" $_pre sh -s 2>&3 3>&- 4>&- 5>&-; printf '\n%s rc %s\n' "$B" "$?" >&5; } | rd "$_rl" "$_c" >&4 5>&-; } 3>&1 | rd "$_rl" 2048 5>&-; } 5>&1 )
    fi
  fi
  now; _t1=$_now
  _x=${_r##*"$B rc "}; _x=${_x%%[!0-9]*}
  eval "rc_$_n=\$_x"
  printf '\n%s ERR %s\n%s\n%s END %s %s %s\n' "$B" "$_n" "$_r" "$B" "$_n" "$_t0" "$_t1"
}
"#;

const SETUP: &str = r#"
exec 4>&1
eval "$P"
TO=; GREPD=
if command -v timeout >/dev/null 2>&1; then
  # One program start answers both on GNU systems: `timeout -k` works and grep knows -D.
  if [ "$(timeout -k 2 5 grep -D skip -q x /dev/null 2>&1 </dev/null; echo "rc=$?")" = rc=1 ]; then TO='timeout -k 2'; GREPD='-D skip -d skip'
  elif timeout -k 2 5 true </dev/null >/dev/null 2>&1; then TO='timeout -k 2'
  elif timeout 5 true </dev/null >/dev/null 2>&1; then TO='timeout'
  elif timeout -t 5 true </dev/null >/dev/null 2>&1; then TO='timeout -t'
  fi
fi
SETPRIV=; command -v setpriv >/dev/null 2>&1 && SETPRIV=1
ME=; while read -r _k _ru _eu _uz; do [ "$_k" = Uid: ] && { ME=$_eu; break; }; done </proc/self/status 2>/dev/null
case $ME in ''|*[!0-9]*) ME=$(id -u 2>/dev/null);; esac
if [ -z "$GREPD" ]; then grep -D skip -q x /dev/null 2>/dev/null; [ "$?" = 1 ] && GREPD='-D skip -d skip'; fi
SU=; SUDO_MODE=off; SUDO_MSG=
if [ "$WANT_SUDO" = 1 ]; then
  if ! command -v sudo >/dev/null 2>&1; then SUDO_MODE=missing
  elif SUDO_MSG=$(to 10 sudo -n true 2>&1 </dev/null); then SU='sudo -n'; SUDO_MODE=on
  else
    SUDO_MODE=failed
    case $SUDO_MSG in *assword*) SUDO_MODE=password;; esac
  fi
  SUDO_MSG=$(printf '%s\n' "$SUDO_MSG" | head -n 2 | tr -c 'A-Za-z0-9 .,:;_/()+=@-' ' ' | head -c 300)
fi
P="$P
TO='$TO'
SETPRIV='$SETPRIV'
GREPD='$GREPD'
SUDO_MODE='$SUDO_MODE'
SUDO_MSG='$SUDO_MSG'
"
now; T0=$_now
DL=$((T0 + BUDGET_CS))
"#;

fn globs_word(globs: &[String]) -> String {
    // Globs go into one space-separated variable; a glob containing a space or quote is dropped.
    globs
        .iter()
        .filter(|g| {
            !g.is_empty()
                && g.chars()
                    .all(|c| c.is_ascii_graphic() && c != '\'' && c != '"')
        })
        .cloned()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Unit names given with `--unit` that are safe to pass (others are ignored).
pub fn valid_unit_name(n: &str) -> bool {
    !n.is_empty()
        && n.len() <= 256
        && n.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@._:-\\".contains(c))
}

fn header(
    opts: &CollectOptions,
    boundary: &str,
    budget: Duration,
    vars: &[(&str, String)],
) -> String {
    let s = config::servers();
    let mut extra: Vec<String> = opts
        .extra_units
        .iter()
        .filter(|u| valid_unit_name(u))
        .map(|u| {
            if u.contains('.') {
                u.clone()
            } else {
                format!("{u}.service")
            }
        })
        .collect();
    extra.dedup();
    let mut p = config::probes().prelude.clone();
    p.push('\n');
    let mut assign = |k: &str, v: &str| {
        p.push_str(&format!("{k}={}\n", sq(v)));
    };
    assign("B", boundary);
    assign("PMATCH", &s.process_match);
    assign("UMATCH", &s.unit_exec_match);
    assign("UGLOBS", &globs_word(&s.unit_name_globs));
    assign("XUNITS", &extra.join(" "));
    assign("SYSMATCH", &config::packages().system_match);
    let lp = config::log_places();
    let places: Vec<String> = lp
        .place
        .iter()
        .flat_map(|p| {
            p.globs
                .iter()
                .map(move |g| format!("{} {g}", p.kind.as_str()))
        })
        .collect();
    assign("LPLACES", &places.join("\n"));
    assign("LPMAX", &lp.max_per_glob.to_string());
    assign("LPBYTES", &lp.max_file_bytes.to_string());
    assign("LPPODS", &lp.pod_logs);
    assign("LPPODMAX", &lp.max_pod_containers.to_string());
    assign("LPDATED", &lp.max_dated_files.to_string());
    assign("LPSCRIPTS", &lp.max_scripts.to_string());
    for (k, v) in vars {
        assign(k, v);
    }
    let budget_cs = budget.as_millis().min(86_400_000) / 10;
    format!(
        "B={}\nWANT_SUDO={}\nBUDGET_CS={}\nP={}\n{SETUP}{RUNNER}",
        sq(boundary),
        u8::from(opts.sudo),
        budget_cs.max(100),
        sq(&p)
    )
}

/// The `sec` calls of `probes` with their lanes (`lanes[i]` for `probes[i]`), then the `go`
/// that runs them and the end mark.
fn section_calls(probes: &[&Probe], lanes: &[usize]) -> String {
    let mut out = String::new();
    let n = lanes.iter().max().map_or(1, |m| m + 1);
    let mut hold = vec![0u64; n];
    for (pr, &lane) in probes.iter().zip(lanes) {
        out.push_str(&section_call(pr, lane));
        if let Some(h) = hold.get_mut(lane) {
            *h = h.saturating_add(section_bytes(pr));
        }
    }
    out.push_str(&format!("go {n}"));
    for h in hold.iter().skip(1) {
        out.push_str(&format!(" {h}"));
    }
    out.push_str("\nprintf '\\n%s DONE\\n' \"$B\"\n");
    out
}

/// The most a section's framed output can be: its stdout cap, its stderr, the framing.
fn section_bytes(pr: &Probe) -> u64 {
    pr.max_bytes.saturating_add(1 + 2048 + 4096)
}

fn section_call(pr: &Probe, lane: usize) -> String {
    format!(
        "sec {} {} {} {} {} {lane} {}\n",
        pr.name,
        pr.timeout_s.max(1),
        pr.max_bytes.saturating_add(1),
        u8::from(pr.sudo),
        sq(pr.depends_on.as_deref().unwrap_or("")),
        sq(&pr.command)
    )
}

/// The round-1 script (fed to `sh -s`), with the whole-run budget of `opts.deadline` scaled for
/// round 1.
pub fn build(opts: &CollectOptions, boundary: &str) -> String {
    build_with_budget(opts, boundary, round1_budget(opts.deadline))
}

/// Round 1 may use 70 % of the deadline; round 2 gets the rest.
pub fn round1_budget(deadline: Duration) -> Duration {
    deadline
        .mul_f64(0.7)
        .saturating_sub(Duration::from_secs(2))
        .max(Duration::from_secs(5))
}

/// [`build`] with its budget given: every round-1 section, one after another.
pub fn build_with_budget(opts: &CollectOptions, boundary: &str, budget: Duration) -> String {
    let mut s = header(opts, boundary, budget, &[]);
    let all: Vec<&Probe> = probes(1).collect();
    s.push_str(&section_calls(&all, &vec![0; all.len()]));
    s
}

/// One group of probes: the sections that run one after another on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    pub probes: Vec<&'static Probe>,
    /// Sections of other groups this group waits for (their `depends_on`).
    pub after: Vec<String>,
}

impl Group {
    /// Bytes of stdout the transport may return for it: the caps of its sections plus framing.
    pub fn stdout_cap(&self) -> usize {
        let caps: u64 = self.probes.iter().map(|p| section_bytes(p)).sum();
        usize::try_from(caps + (64 << 10)).unwrap_or(usize::MAX)
    }

    /// The lane each section runs in, `0 .. width`: the lanes `configs/probes.toml` gives, in
    /// the order they first appear (the unnamed lane first), folded onto at most `width`
    /// (a lane `i` beyond it joins lane `i % width`, after that lane's own sections).
    pub fn lanes(&self, width: usize) -> Vec<usize> {
        let mut names: Vec<Option<&str>> = Vec::new();
        if self.probes.iter().any(|p| p.lane.is_none()) {
            names.push(None);
        }
        let idx: Vec<usize> = self
            .probes
            .iter()
            .map(|p| {
                let l = p.lane.as_deref();
                names.iter().position(|n| *n == l).unwrap_or_else(|| {
                    names.push(l);
                    names.len() - 1
                })
            })
            .collect();
        let w = width.max(1);
        idx.into_iter().map(|i| i % w).collect()
    }
}

/// The groups of a round, in definition order (a probe without `group` is its own group).
pub fn groups(round: u8) -> Vec<Group> {
    let mut out: Vec<Group> = Vec::new();
    for p in probes(round) {
        let name = p.group.clone().unwrap_or_else(|| p.name.clone());
        match out.iter_mut().find(|g| g.name == name) {
            Some(g) => g.probes.push(p),
            None => out.push(Group {
                name,
                probes: vec![p],
                after: Vec::new(),
            }),
        }
    }
    for g in &mut out {
        let own: Vec<&str> = g.probes.iter().map(|p| p.name.as_str()).collect();
        g.after = g
            .probes
            .iter()
            .filter_map(|p| p.depends_on.clone())
            .filter(|d| !own.contains(&d.as_str()))
            .collect();
        g.after.dedup();
    }
    out
}

/// The round-2 script.
pub fn build_round2(
    opts: &CollectOptions,
    boundary: &str,
    budget: Duration,
    inputs: &Round2Inputs,
) -> String {
    let mut s = header(opts, boundary, budget, &round2_vars(inputs));
    let all: Vec<&Probe> = probes(2).collect();
    s.push_str(&section_calls(&all, &vec![0; all.len()]));
    s
}

/// The script of one group (round 1: `inputs` empty), its lanes folded onto at most `width`.
pub fn build_group(
    opts: &CollectOptions,
    boundary: &str,
    budget: Duration,
    g: &Group,
    inputs: &Round2Inputs,
    width: usize,
) -> String {
    let mut s = header(opts, boundary, budget, &round2_vars(inputs));
    s.push_str(&section_calls(&g.probes, &g.lanes(width)));
    s
}

/// The script of the one probe `name` of either round with `vars` set after the configured
/// values (a fixture's own places in place of `/etc/cron.d`): how a section is run alone.
pub fn build_probe(
    opts: &CollectOptions,
    boundary: &str,
    budget: Duration,
    name: &str,
    vars: &[(&str, String)],
) -> Option<String> {
    let pr = probe(name)?;
    let mut s = header(opts, boundary, budget, vars);
    s.push_str(&section_calls(&[pr], &[0]));
    Some(s)
}

/// What stands for one U+FFFD in a name pattern the host matches (the prelude's `lone`, in the
/// C locale): one byte that is not printable ASCII, as a byte that was not UTF-8 always is.
pub const NOT_UTF8_BYTE: &str = "[! -~]";

/// Every command text the scripts can run: the setup and runner, the prelude and each probe's
/// command (both rounds). The read-only test checks all of them.
pub fn commands() -> Vec<String> {
    let p = config::probes();
    let mut v = vec![SETUP.to_string(), RUNNER.to_string(), p.prelude.clone()];
    v.extend(p.probes.iter().map(|pr| pr.command.clone()));
    v
}

/// Probes of one round.
pub fn probes(round: u8) -> impl Iterator<Item = &'static Probe> {
    config::probes()
        .probes
        .iter()
        .filter(move |p| p.round == round)
}

/// The probe named `name`.
pub fn probe(name: &str) -> Option<&'static Probe> {
    config::probes().probes.iter().find(|p| p.name == name)
}

/// A fresh boundary: 32 hex digits from the OS RNG.
pub fn new_boundary() -> String {
    let bytes: [u8; 16] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(sq("a'b"), "'a'\\''b'");
        assert_eq!(sq("x\0y"), "'xy'");
        for (input, quoted) in [
            ("", "''"),
            ("'", r"''\'''"),
            ("a\0'\0b", r"'a'\''b'"),
            ("plain text", "'plain text'"),
        ] {
            assert_eq!(sq(input), quoted, "{input:?}");
        }
    }

    #[test]
    fn boundary_is_random_hex() {
        let a = new_boundary();
        let b = new_boundary();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    fn probe(name: &str, lane: Option<&str>, command: &str) -> &'static Probe {
        Box::leak(Box::new(Probe {
            name: name.into(),
            round: 1,
            group: Some("g".into()),
            lane: lane.map(str::to_string),
            parser: crate::config::ParserKind::Round1(crate::config::Round1Parser::Host),
            timeout_s: 20,
            max_bytes: 1 << 20,
            sudo: false,
            depends_on: None,
            command: command.into(),
        }))
    }

    fn group(probes: Vec<&'static Probe>) -> Group {
        Group {
            name: "g".into(),
            probes,
            after: Vec::new(),
        }
    }

    #[test]
    fn lanes_in_order_of_appearance_folded_onto_the_width() {
        let (a, b, c) = (Some("a"), Some("b"), Some("c"));
        /// (lanes of the probes, width, lane indices)
        type Case<'a> = (&'a [Option<&'a str>], usize, &'a [usize]);
        let cases: &[Case] = &[
            (&[None, None], 8, &[0, 0]),
            (&[a, None, b, a], 8, &[1, 0, 2, 1]),
            (&[a, b, c], 8, &[0, 1, 2]),
            (&[None, a, b, c], 2, &[0, 1, 0, 1]),
            (&[None, a, b, c], 1, &[0, 0, 0, 0]),
            (&[None, a, b], 0, &[0, 0, 0]),
        ];
        for (lanes, width, want) in cases {
            let g = group(
                lanes
                    .iter()
                    .enumerate()
                    .map(|(i, l)| probe(&format!("p{i}"), *l, "true"))
                    .collect(),
            );
            assert_eq!(g.lanes(*width), *want, "{lanes:?} onto {width}");
        }
    }

    /// A section's `depends_on` is read from the shell variables of its own lane (each lane is
    /// a subshell of its own): within a group, it must name a section of the same lane.
    #[test]
    fn a_dependency_within_a_group_is_in_the_same_lane() {
        for round in [1, 2] {
            for g in groups(round) {
                for p in &g.probes {
                    let Some(d) = &p.depends_on else { continue };
                    if let Some(q) = g.probes.iter().find(|q| &q.name == d) {
                        assert_eq!(p.lane, q.lane, "{} depends on {d}", p.name);
                    }
                }
            }
        }
    }

    /// Lanes run at once under dash, busybox ash and bash: a lane that waits does not hold the
    /// others, a lane that prints more than a pipe holds is not stopped by the lane before it,
    /// and every section comes whole, in its own frame, with its NUL bytes.
    #[test]
    fn lanes_run_at_once_and_never_interleave() {
        let g = group(vec![
            probe("slow", None, "sleep 1; echo slow done"),
            probe(
                "big",
                Some("b"),
                "i=0; while [ $i -lt 3000 ]; do printf '%099d\\n' $i; i=$((i + 1)); done; printf 'a\\0b\\n'",
            ),
            probe("after", Some("b"), "echo after big"),
            probe("quick", Some("q"), "echo quick"),
        ]);
        let b = new_boundary();
        let text = build_group(
            &CollectOptions::default(),
            &b,
            Duration::from_secs(30),
            &g,
            &Round2Inputs::default(),
            8,
        );
        for shell in [["dash", ""], ["busybox", "sh"], ["bash", "--posix"]] {
            let mut cmd = std::process::Command::new(shell[0]);
            if !shell[1].is_empty() {
                cmd.arg(shell[1]);
            }
            let Ok(mut child) = cmd
                .arg("-s")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
            else {
                panic!("{} is needed for this test", shell[0]);
            };
            use std::io::Write as _;
            child
                .stdin
                .take()
                .unwrap()
                .write_all(text.as_bytes())
                .unwrap();
            let out = child.wait_with_output().unwrap();
            let f = crate::frame::parse(&out.stdout, &b);
            assert!(f.done, "{shell:?}");
            let sec = |n: &str| {
                f.sections
                    .iter()
                    .find(|s| s.name == n)
                    .unwrap_or_else(|| panic!("{shell:?}: no {n}"))
            };
            for n in ["slow", "big", "after", "quick"] {
                assert!(sec(n).complete && sec(n).rc == Some(0), "{shell:?} {n}");
                assert!(sec(n).tampered.is_none(), "{shell:?} {n}");
            }
            assert_eq!(sec("big").body.len(), 3000 * 100 + 4, "{shell:?}");
            assert!(sec("big").body.ends_with(b"a\0b\n"), "{shell:?}");
            assert_eq!(sec("after").body, b"after big\n");
            // The other lanes ended while `slow` still slept.
            let slow_end = sec("slow").t1.unwrap();
            for n in ["big", "after", "quick"] {
                assert!(sec(n).t1.unwrap() < slow_end, "{shell:?} {n}");
            }
            // Lane 0 first, then the others in order.
            let order: Vec<&str> = f.sections.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(order, ["slow", "big", "after", "quick"], "{shell:?}");
        }
    }

    #[test]
    fn script_contains_every_round1_section() {
        let s = build(&CollectOptions::default(), &new_boundary());
        for p in probes(1) {
            assert!(s.contains(&format!("sec {} ", p.name)), "{}", p.name);
        }
        assert!(!s.contains("sec models "));
    }
}
