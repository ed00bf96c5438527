//! Builds the remote POSIX `sh` scripts from `configs/probes.toml`.
//!
//! Round 1 is one `sh -s` run (the script on stdin) with every round-1 probe as a framed
//! section; round 2 is a second, small run for what depends on round 1 (model configs, log
//! files, journals, Python packages of the serving interpreters), with its inputs passed as
//! single-quoted shell variables (`R2_*`), never spliced into commands.
//!
//! Each section runs as `timeout T [sudo -n] sh -c "$PRELUDE$COMMAND" </dev/null`, its stdout
//! through `head -c CAP+1` (one byte more than the cap tells "truncated"), its stderr through
//! `head -c 2048`, and reports its exit code and start/end time (centiseconds of
//! /proc/uptime). A global budget stops starting sections when the deadline is near, so the
//! run always ends, with every section accounted for, before the transport's own deadline.
//!
//! Works under dash, busybox ash and bash: no arrays, no `local`, no `$'..'`, no process
//! substitution. Writes nothing (only to fd 1-5 and /dev/null), signals nothing (other than
//! `timeout` stopping its own child).

use std::time::Duration;

use crate::CollectOptions;
use crate::config::{self, Probe};

/// Shell single quoting: safe for any bytes except NUL.
pub fn sq(s: &str) -> String {
    let clean: String = s.chars().filter(|&c| c != '\0').collect();
    format!("'{}'", clean.replace('\'', "'\\''"))
}

/// Inputs of the round-2 script (one entry per line in the shell variable).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Round2Inputs {
    /// Python prefixes (venv / conda / system) whose site-packages are read.
    pub python_prefixes: Vec<String>,
    /// (`dir`|`hf`, model as named by the launch, directory to look in).
    pub models: Vec<(String, String, String)>,
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
    }
}

const RUNNER: &str = r#"
sec() {
  _n=$1; _l=$2; _c=$3; _s=$4; _d=$5; _b=$6
  printf '\n%s BEGIN %s\n' "$B" "$_n"
  _t0=$(now); _r=; _dr=
  [ -n "$_d" ] && eval "_dr=\${rc_$_d:-}"
  if [ "$_dr" = 124 ] || [ "$_dr" = 137 ]; then
    _r="$B rc 200"
  else
    _left=$(( (DL - _t0) / 100 ))
    if [ "$_left" -lt 1 ]; then
      _r="$B rc 201"
    else
      [ "$_l" -gt "$_left" ] && _l=$_left
      _pre=; [ "$_s" = 1 ] && _pre=$SU
      _r=$( { { { to "$_l" $_pre sh -c "$P$_b" </dev/null 2>&3 3>&- 4>&-; printf '\n%s rc %s\n' "$B" "$?" >&5; } | head -c "$_c" >&4; } 3>&1 | head -c 2048; } 5>&1 )
    fi
  fi
  _t1=$(now)
  _x=${_r##*"$B rc "}; _x=${_x%%[!0-9]*}
  eval "rc_$_n=\$_x"
  printf '\n%s ERR %s\n%s\n%s END %s %s %s\n' "$B" "$_n" "$_r" "$B" "$_n" "$_t0" "$_t1"
}
"#;

const SETUP: &str = r#"
exec 4>&1
eval "$P"
TO=
if command -v timeout >/dev/null 2>&1; then
  if timeout -k 2 5 true </dev/null >/dev/null 2>&1; then TO='timeout -k 2'
  elif timeout 5 true </dev/null >/dev/null 2>&1; then TO='timeout'
  elif timeout -t 5 true </dev/null >/dev/null 2>&1; then TO='timeout -t'
  fi
fi
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
SUDO_MODE='$SUDO_MODE'
SUDO_MSG='$SUDO_MSG'
"
T0=$(now)
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

fn section_calls(round: u8) -> String {
    let mut out = String::new();
    for pr in config::probes().probes.iter().filter(|p| p.round == round) {
        out.push_str(&section_call(pr));
    }
    out.push_str("printf '\\n%s DONE\\n' \"$B\"\n");
    out
}

fn section_call(pr: &Probe) -> String {
    format!(
        "sec {} {} {} {} {} {}\n",
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

pub fn build_with_budget(opts: &CollectOptions, boundary: &str, budget: Duration) -> String {
    let mut s = header(opts, boundary, budget, &[]);
    s.push_str(&section_calls(1));
    s
}

/// The round-2 script.
pub fn build_round2(
    opts: &CollectOptions,
    boundary: &str,
    budget: Duration,
    inputs: &Round2Inputs,
) -> String {
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
        .filter(|(k, m, d)| {
            !(k.contains(['\t', '\n']) || m.contains(['\t', '\n']) || d.contains(['\t', '\n']))
        })
        .map(|(k, m, d)| format!("{k}\t{m}\t{d}"))
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
    let vars = [
        ("R2_PY", line(&inputs.python_prefixes)),
        ("R2_MODELS", models.join("\n")),
        ("R2_LOGS", line(&inputs.logs)),
        ("R2_UNITS", units.join("\n")),
        ("R2_CLOGS", clogs.join("\n")),
        ("R2_GPUPIDS", pids(&inputs.gpu_pids)),
        ("R2_MAPS", pids(&inputs.maps_pids)),
    ];
    let mut s = header(opts, boundary, budget, &vars);
    s.push_str(&section_calls(2));
    s
}

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
    }

    #[test]
    fn boundary_is_random_hex() {
        let a = new_boundary();
        let b = new_boundary();
        assert_eq!(a.len(), 32);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
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
