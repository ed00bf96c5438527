//! Fixture hosts over real OpenSSH: every host of `fixture::ALL` starts (in parallel), answers
//! over `ssh -F`, shows its own hostname, processes, stand-ins and files, and leaves nothing
//! behind: no process after drop, no change on the real host.

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use std::collections::BTreeMap;
use std::time::Instant;

use probe_testkit::fixture::{ALL, FixtureHost, Fleet, alive, definitions_dir};

/// Runs `checks` (name, shell command) in one ssh session; returns name → stdout of that command.
fn probe(host: &FixtureHost, checks: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut script = String::new();
    for (name, cmd) in checks {
        script.push_str(&format!("echo '@@{name}'; {{ {cmd} ; }} 2>&1; echo; "));
    }
    let out = host.ssh(&script);
    assert!(
        out.status.success(),
        "{}: ssh failed ({}): {}",
        host.name,
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let mut map = BTreeMap::new();
    for part in text.split("@@").skip(1) {
        let (name, body) = part.split_once('\n').unwrap_or((part, ""));
        map.insert(name.to_string(), body.trim_end_matches('\n').to_string());
    }
    for (name, _) in checks {
        assert!(
            map.contains_key(*name),
            "{}: no output section {name}:\n{text}",
            host.name
        );
    }
    map
}

type Check = (&'static str, fn(&FixtureHost));

fn get<'a>(m: &'a BTreeMap<String, String>, k: &str) -> &'a str {
    m.get(k).map(String::as_str).unwrap_or("")
}

/// What the real host looks like in the places fixtures cover with bind mounts.
fn host_view() -> String {
    let mut s = String::new();
    for path in [
        "/etc/hostname",
        "/etc/machine-id",
        "/etc/passwd",
        "/etc/group",
        "/etc/os-release",
        "/proc/sys/kernel/hostname",
    ] {
        s.push_str(&format!("{path}: {:?}\n", std::fs::read(path).ok()));
    }
    for dir in [
        "/root",
        "/home",
        "/opt",
        "/mnt",
        "/srv",
        "/etc/systemd/system",
        "/etc/default",
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/local/share",
        "/usr/local/lib/python3.11/dist-packages",
        "/var/log",
    ] {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        s.push_str(&format!("{dir}: {names:?}\n"));
    }
    for path in [
        "/root/.bash_history",
        "/root/.bashrc",
        "/etc/shadow",
        "/usr/local/bin/docker",
    ] {
        let meta = std::fs::symlink_metadata(path)
            .ok()
            .map(|m| (m.len(), m.modified().ok()));
        s.push_str(&format!("{path}: {meta:?}\n"));
    }
    s
}

const SGLANG_LAUNCH: &str = "/opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path \
    Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --tp 2 --speculative-algo NEXTN --speculative-num-steps 3 \
    --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --mem-fraction-static 0.85 \
    --context-length 131072 --host 0.0.0.0 --port 30000 --trust-remote-code";

fn check_sglang_hybrid(h: &FixtureHost) {
    let m = probe(
        h,
        &[
            ("hostname", "hostname"),
            (
                "cmdline",
                "tr '\\0' ' ' < /proc/$(cat /usr/local/share/fixture/run/sglang.pid)/cmdline",
            ),
            ("workers", "ps -eo args | grep '^sglang::' | sort"),
            (
                "worker_raw",
                "for p in $(pgrep -f '^sglang::scheduler_TP0'); do tr '\\0' '|' < /proc/$p/cmdline; done",
            ),
            (
                "gpus",
                "nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader",
            ),
            (
                "gpus_nounits",
                "nvidia-smi --query-gpu=uuid,driver_version,power.limit,mig.mode.current --format=csv,nounits",
            ),
            (
                "apps",
                "nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader",
            ),
            ("banner", "nvidia-smi | grep -o 'CUDA Version: [0-9.]*'"),
            (
                "badfield",
                "nvidia-smi --query-gpu=bogus.field --format=csv; echo rc=$?",
            ),
            (
                "unit_state",
                "systemctl show sglang-qwen.service -p ActiveState,UnitFileState",
            ),
            (
                "unit_exec",
                "grep -c speculative /etc/systemd/system/sglang-qwen.service",
            ),
            (
                "journal",
                "journalctl -u sglang-qwen --no-pager -o cat | grep -c 'gen throughput'",
            ),
            (
                "journal_n",
                "journalctl -u sglang-qwen -n 2 -o short-unix --no-pager",
            ),
            (
                "log_args",
                "grep -c \"speculative_algorithm='NEXTN'\" /root/sglang.log",
            ),
            (
                "log_decode",
                "grep 'Decode batch' /root/sglang.log | tail -1",
            ),
            (
                "past_log",
                "grep -c 'gen throughput' /root/sglang-nov04.log",
            ),
            (
                "history_last",
                "grep -v '^#' /root/.bash_history | grep 'nohup' | tail -1",
            ),
            ("history_mtime", "stat -c %Y /root/.bash_history"),
            ("bashrc_size", "stat -c %s /root/.bashrc"),
            (
                "zsh",
                "head -1 /home/mei/.zsh_history; stat -c %U /home/mei/.zsh_history",
            ),
            (
                "config",
                "grep -c full_attention_interval /root/.cache/huggingface/hub/models--Qwen--Qwen3-Next-80B-A3B-Instruct-FP8/snapshots/*/config.json",
            ),
            (
                "dist",
                "ls /opt/venvs/sglang/lib/python3.11/site-packages | grep dist-info | tr '\\n' ' '",
            ),
            (
                "dist_mtime",
                "stat -c %Y /opt/venvs/sglang/lib/python3.11/site-packages/torch-2.9.1+cu128.dist-info",
            ),
            ("venv_python", "readlink /opt/venvs/sglang/bin/python3"),
        ],
    );
    assert_eq!(get(&m, "hostname"), "fixture-sglang-hybrid");
    assert_eq!(
        get(&m, "cmdline").trim_end(),
        SGLANG_LAUNCH
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    );
    assert_eq!(
        get(&m, "workers"),
        "sglang::detokenizer\nsglang::scheduler_TP0\nsglang::scheduler_TP1"
    );
    assert_eq!(get(&m, "worker_raw"), "sglang::scheduler_TP0|");
    assert_eq!(
        get(&m, "gpus"),
        "0, NVIDIA H200, 143771 MiB\n1, NVIDIA H200, 143771 MiB"
    );
    let nounits: Vec<&str> = get(&m, "gpus_nounits").lines().collect();
    assert_eq!(
        nounits.first().copied(),
        Some("uuid, driver_version, power.limit [W], mig.mode.current")
    );
    assert!(nounits.get(1).is_some_and(|l| l.starts_with("GPU-") && l.ends_with(", 570.172.08, 700.00, Disabled")), "{nounits:?}");
    assert!(get(&m, "apps").contains(", sglang::scheduler_TP1"), "{m:?}");
    assert_eq!(get(&m, "banner"), "CUDA Version: 12.8");
    assert!(
        get(&m, "badfield").contains("is not a valid field to query")
            && get(&m, "badfield").ends_with("rc=2")
    );
    assert_eq!(
        get(&m, "unit_state"),
        "ActiveState=inactive\nUnitFileState=disabled"
    );
    assert_eq!(get(&m, "unit_exec"), "0");
    assert!(
        get(&m, "journal").parse::<u32>().unwrap_or(0) > 100,
        "{m:?}"
    );
    assert_eq!(get(&m, "journal_n").lines().count(), 2);
    assert_eq!(get(&m, "log_args"), "1");
    let decode = get(&m, "log_decode");
    assert!(
        decode.contains("mamba usage: ") && decode.contains("accept len: "),
        "{decode}"
    );
    assert!(get(&m, "past_log").parse::<u32>().unwrap_or(0) > 100);
    assert!(
        get(&m, "history_last").contains("--speculative-num-steps 3"),
        "{m:?}"
    );
    assert!(get(&m, "history_last").ends_with("> /root/sglang.log 2>&1 &"));
    assert_eq!(get(&m, "history_mtime"), "1795857292"); // 2026-11-28T09:14:52Z
    assert_eq!(get(&m, "bashrc_size"), "0");
    assert_eq!(get(&m, "zsh"), ": 1795441210:0;cd ~/bench\nmei");
    assert_eq!(get(&m, "config"), "1");
    for d in [
        "sglang-0.5.9.dist-info",
        "torch-2.9.1+cu128.dist-info",
        "sgl_kernel-0.3.21.dist-info",
    ] {
        assert!(get(&m, "dist").contains(d), "{d} missing: {m:?}");
    }
    assert_ne!(get(&m, "dist_mtime"), "1793491200"); // not the default 2026-11-01 mtime
    assert_eq!(get(&m, "venv_python"), "/usr/bin/python3");
}

fn check_vllm_systemd(h: &FixtureHost) {
    let m = probe(
        h,
        &[
            ("hostname", "hostname"),
            ("mainpid", "systemctl show vllm -p MainPID --value"),
            ("runpid", "cat /usr/local/share/fixture/run/vllm.pid"),
            (
                "cmdline",
                "tr '\\0' ' ' < /proc/$(systemctl show vllm -p MainPID --value)/cmdline",
            ),
            (
                "user",
                "stat -c %U /proc/$(systemctl show vllm -p MainPID --value)",
            ),
            (
                "envkeys",
                "tr '\\0' '\\n' < /proc/$(systemctl show vllm -p MainPID --value)/environ | cut -d= -f1 | sort | tr '\\n' ' '",
            ),
            ("workers", "ps -eo args | grep -c '^VLLM::Worker_TP'"),
            ("cat", "systemctl cat vllm | grep '^# '"),
            (
                "dropin",
                "systemctl show vllm -p DropInPaths,ActiveState,SubState",
            ),
            (
                "gpus",
                "nvidia-smi --query-gpu=index,name --format=csv,noheader | wc -l",
            ),
            (
                "journal",
                "journalctl -u vllm.service -o cat --no-pager | grep -c 'SpecDecoding metrics'",
            ),
            (
                "journal_old",
                "journalctl -u vllm --until '2026-11-21' -o cat | grep -c 'SpecDecoding'",
            ),
            (
                "envfile",
                "grep -c '^HF_TOKEN=hf_' /etc/default/vllm; stat -c %a /etc/default/vllm",
            ),
            ("id", "id -u vllm"),
            (
                "iso",
                "journalctl -u vllm -n 1 -o short-iso --no-pager | cut -c1-26",
            ),
            ("badopt", "journalctl --frobnicate; echo rc=$?"),
            ("badverb", "systemctl frobnicate; echo rc=$?"),
            (
                "dist",
                "cat /opt/venvs/vllm/lib/python3.11/site-packages/vllm-*.dist-info/direct_url.json",
            ),
        ],
    );
    assert_eq!(get(&m, "hostname"), "fixture-vllm-systemd");
    assert_eq!(get(&m, "mainpid"), get(&m, "runpid"));
    assert!(
        get(&m, "cmdline").starts_with("/opt/venvs/vllm/bin/python3 /opt/venvs/vllm/bin/vllm serve /mnt/models/GLM-4.5-Air-FP8 "),
        "{m:?}"
    );
    assert!(
        get(&m, "cmdline")
            .contains("--speculative-config {\"method\":\"mtp\",\"num_speculative_tokens\":1}")
    );
    assert_eq!(get(&m, "user"), "vllm");
    assert!(
        get(&m, "envkeys").contains("HF_TOKEN ") && get(&m, "envkeys").contains("INVOCATION_ID ")
    );
    assert_eq!(get(&m, "workers"), "4");
    assert_eq!(
        get(&m, "cat"),
        "# /etc/systemd/system/vllm.service\n# /etc/systemd/system/vllm.service.d/10-override.conf"
    );
    assert_eq!(
        get(&m, "dropin"),
        "DropInPaths=/etc/systemd/system/vllm.service.d/10-override.conf\nActiveState=active\nSubState=running"
    );
    assert_eq!(get(&m, "gpus"), "4");
    assert!(
        get(&m, "journal").parse::<u32>().unwrap_or(0) >= 200,
        "{m:?}"
    );
    assert_eq!(get(&m, "journal_old"), "0");
    assert_eq!(get(&m, "envfile"), "1\n600");
    assert_eq!(get(&m, "id"), "4242");
    let iso = get(&m, "iso");
    assert!(
        iso.len() == 26 && iso.starts_with("20") && iso.ends_with("+00:00 "),
        "{iso:?}"
    );
    assert_eq!(
        get(&m, "badopt"),
        "journalctl: unrecognized option '--frobnicate'\nrc=1"
    );
    assert_eq!(
        get(&m, "badverb"),
        "Unknown command verb 'frobnicate'.\nrc=1"
    );
    // A non-root login sees what that user can read, and not the 0600 EnvironmentFile.
    let out = h.ssh_as("vllm", "id -un; cat /etc/default/vllm; echo rc=$?");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.lines().next(), Some("vllm"), "{text}");
    assert!(text.trim_end().ends_with("rc=1"), "{text}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
    assert!(get(&m, "dist").contains("3cfc8f8b7"));
}

fn check_docker_vllm(h: &FixtureHost) {
    let m = probe(
        h,
        &[
            ("hostname", "hostname"),
            ("ps", "docker ps --format '{{.Names}} {{.Image}}'"),
            ("psa", "docker ps -a -q | wc -l"),
            ("pid", "docker inspect --format '{{.State.Pid}}' vllm-llama"),
            ("runpid", "cat /usr/local/share/fixture/run/vllm.pid"),
            (
                "cmdline",
                "tr '\\0' ' ' < /proc/$(docker inspect -f '{{.State.Pid}}' vllm-llama)/cmdline",
            ),
            ("env", "docker inspect vllm-llama | grep -c HF_TOKEN=hf_"),
            ("missing", "docker inspect nosuch; echo rc=$?"),
            (
                "metadata",
                "grep '^Version' /proc/$(cat /usr/local/share/fixture/run/vllm.pid)/root/usr/local/lib/python3.11/dist-packages/vllm-0.11.0.dist-info/METADATA",
            ),
            // The container's files are only in its own mount namespace.
            (
                "host_paths",
                "find /usr/local/lib/python3.11/dist-packages /mnt -mindepth 1 | wc -l; test -e /mnt/models/Llama-3.3-70B-Instruct/config.json; echo rc=$?",
            ),
            (
                "model_in_ctr",
                "grep -c '\"model_type\": \"llama\"' /proc/$(cat /usr/local/share/fixture/run/vllm.pid)/root/mnt/models/Llama-3.3-70B-Instruct/config.json",
            ),
            (
                "mntns",
                "p=$(cat /usr/local/share/fixture/run/vllm.pid); [ \"$(readlink /proc/$p/ns/mnt)\" != \"$(readlink /proc/self/ns/mnt)\" ] && echo differs",
            ),
            (
                "cgroup",
                "cat /proc/$(cat /usr/local/share/fixture/run/vllm.pid)/cgroup",
            ),
            (
                "fd1",
                "readlink /proc/$(cat /usr/local/share/fixture/run/vllm.pid)/fd/1 | cut -d: -f1",
            ),
            (
                "nonroot",
                "su -s /bin/sh monitor -c 'ls /proc/'$(cat /usr/local/share/fixture/run/vllm.pid)'/root/ 2>&1; id -un'",
            ),
            (
                "rotated",
                "zcat /var/log/apt/history.log.1.gz | grep -c '^Upgrade: nvidia-driver-550-server'; zcat /var/log/dpkg.log.2.gz | grep -c ' upgrade nvidia-driver-550-server'",
            ),
            (
                "apt",
                "grep -c 'nvidia-driver-570' /var/log/apt/history.log /var/log/dpkg.log",
            ),
            ("systemd", "systemctl is-system-running; echo rc=$?"),
            (
                "logs",
                "docker logs --tail 50 vllm-llama | grep -c 'Avg generation throughput'",
            ),
            (
                "badcmd",
                "docker frobnicate 2>&1 | head -1; docker frobnicate >/dev/null 2>&1; echo rc=$?",
            ),
        ],
    );
    assert_eq!(get(&m, "hostname"), "fixture-docker-vllm");
    assert_eq!(get(&m, "ps"), "vllm-llama vllm/vllm-openai:v0.11.0");
    assert_eq!(get(&m, "psa"), "2");
    assert_eq!(get(&m, "pid"), get(&m, "runpid"));
    assert!(
        get(&m, "cmdline").starts_with("python3 -m vllm.entrypoints.openai.api_server --model /mnt/models/Llama-3.3-70B-Instruct "),
        "{m:?}"
    );
    assert_eq!(get(&m, "env"), "1");
    assert!(
        get(&m, "missing").contains("Error: No such object: nosuch")
            && get(&m, "missing").ends_with("rc=1")
    );
    assert_eq!(get(&m, "metadata"), "Version: 0.11.0");
    assert_eq!(get(&m, "host_paths"), "0\nrc=1", "{m:?}");
    assert_eq!(get(&m, "model_in_ctr"), "1", "{m:?}");
    assert_eq!(get(&m, "mntns"), "differs", "{m:?}");
    assert_eq!(
        get(&m, "cgroup"),
        "0::/system.slice/docker-3f2a9c1d8e7b5a4f6c0d2e1b9a8f7c6d5e4b3a2f1c0d9e8b7a6f5c4d3e2b1a0f.scope"
    );
    assert_eq!(get(&m, "fd1"), "pipe", "{m:?}");
    let nonroot = get(&m, "nonroot");
    assert!(
        nonroot.contains("Permission denied") && nonroot.ends_with("monitor"),
        "{m:?}"
    );
    assert_eq!(get(&m, "rotated"), "1\n1", "{m:?}");
    assert_eq!(
        get(&m, "apt"),
        "/var/log/apt/history.log:1\n/var/log/dpkg.log:4"
    );
    assert!(!get(&m, "systemd").starts_with("running"), "{m:?}");
    assert!(get(&m, "logs").parse::<u32>().unwrap_or(0) >= 1);
    assert_eq!(
        get(&m, "badcmd"),
        "docker: unknown command: docker frobnicate\nrc=1"
    );
}

fn check_bare(h: &FixtureHost) {
    let m = probe(
        h,
        &[
            ("hostname", "hostname"),
            ("which", "command -v nvidia-smi docker; echo rc=$?"),
            (
                "procs",
                "ps -eo comm= | grep -cv -e '^sshd$' -e '^bash$' -e '^ps$' -e '^grep$'",
            ),
            (
                "fish",
                "grep -c '^- cmd:' /home/dana/.local/share/fish/fish_history",
            ),
            ("history_mtime", "stat -c %Y /root/.bash_history"),
            ("machine", "cat /etc/machine-id"),
        ],
    );
    assert_eq!(get(&m, "hostname"), "fixture-bare");
    assert_eq!(get(&m, "which"), "rc=1");
    assert_eq!(
        get(&m, "procs"),
        "0",
        "a process other than sshd and the session's own"
    );
    assert_eq!(get(&m, "fish"), "4");
    assert_eq!(get(&m, "history_mtime"), "1795797730"); // 2026-11-27T16:42:10Z
    assert_eq!(get(&m, "machine"), "6a1f0c9e2b7d4e8f9a0b1c2d3e4f5a60");
}

fn check_hostile(h: &FixtureHost) {
    let m = probe(
        h,
        &[
            ("hostname", "hostname"),
            (
                "link",
                "test -L /root/.bash_history && readlink /root/.bash_history",
            ),
            ("shadow", "head -c 32 /etc/shadow"),
            (
                "hang",
                "timeout 1 nvidia-smi --query-gpu=name --format=csv; echo rc=$?",
            ),
            ("log_size", "stat -c %s /var/log/sglang/server.log"),
            (
                "log_tail",
                "tail -1 /var/log/sglang/server.log | grep -c 'Decode batch'",
            ),
            (
                "unit_lines",
                "wc -l < /etc/systemd/system/llm-bloat.service",
            ),
            (
                "nul",
                "tr -dc '\\000' < /home/mallory/.bash_history | wc -c",
            ),
            (
                "esc",
                "grep -c \"$(printf '\\033')\" /home/mallory/.bash_history",
            ),
            (
                "argv",
                "tr '\\0' ' ' < /proc/$(cat /usr/local/share/fixture/run/sglang.pid)/cmdline | grep -o -- '--api-key sk-[a-z]*'",
            ),
            (
                "env",
                "tr '\\0' '\\n' < /proc/$(cat /usr/local/share/fixture/run/sglang.pid)/environ | grep -c '^OPENAI_API_KEY=sk-'",
            ),
            ("newline", "ls -b /root | grep -c 'notes\\\\nrm'"),
            (
                "notjson",
                "python3 -c 'import json,sys; json.load(open(sys.argv[1]))' /srv/models/broken/config.json 2>/dev/null; echo rc=$?",
            ),
            ("osrel", "grep -c \"$(printf '\\033')\" /etc/os-release"),
        ],
    );
    assert_eq!(get(&m, "hostname"), "fixture-hostile");
    assert_eq!(get(&m, "link"), "/etc/shadow");
    assert_eq!(get(&m, "shadow"), "root:$y$j9T$FIXTUREfixtureFIXTU$");
    assert_eq!(get(&m, "hang"), "rc=124");
    assert!(
        get(&m, "log_size").parse::<u64>().unwrap_or(0) >= 200 * 1024 * 1024,
        "{m:?}"
    );
    assert_eq!(get(&m, "log_tail"), "1");
    assert_eq!(get(&m, "unit_lines"), "10000");
    assert!(get(&m, "nul").parse::<u32>().unwrap_or(0) >= 2, "{m:?}");
    assert!(get(&m, "esc").parse::<u32>().unwrap_or(0) >= 2, "{m:?}");
    assert_eq!(get(&m, "argv"), "--api-key sk-proj");
    assert_eq!(get(&m, "env"), "1");
    assert_eq!(get(&m, "newline"), "1");
    assert_eq!(get(&m, "notjson"), "rc=1");
    assert_eq!(get(&m, "osrel"), "2");
}

#[test]
fn definitions_have_distinct_addresses() {
    let mut addrs = Vec::new();
    for name in ALL {
        let conf = std::fs::read_to_string(definitions_dir().join(name).join("host.conf")).unwrap();
        let addr = conf
            .lines()
            .find_map(|l| l.strip_prefix("addr "))
            .unwrap()
            .trim()
            .to_string();
        assert!(addr.starts_with("127.0.0."), "{name}: {addr}");
        addrs.push(addr);
    }
    let mut unique = addrs.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ALL.len(), "{addrs:?}");
}

#[test]
fn fleet_of_all_hosts_over_openssh() {
    probe_testkit::require_openssh().unwrap();
    let before = host_view();
    let t0 = Instant::now();
    let fleet = Fleet::start(ALL);
    let fleet_start = t0.elapsed();
    for h in &fleet.hosts {
        eprintln!(
            "fixture {:<14} {}:{} started in {:?}",
            h.name, h.addr, h.port, h.start_time
        );
    }
    eprintln!("fleet of {} started in {fleet_start:?}", fleet.hosts.len());
    // One config for all aliases.
    let cfg = std::fs::read_to_string(fleet.ssh_config()).unwrap();
    for name in ALL {
        assert!(cfg.contains(&format!("Host fx-{name}\n")), "{cfg}");
    }
    let mut host_pids = Vec::new();
    std::thread::scope(|s| {
        let checks: [Check; 5] = [
            ("sglang-hybrid", check_sglang_hybrid),
            ("vllm-systemd", check_vllm_systemd),
            ("docker-vllm", check_docker_vllm),
            ("bare", check_bare),
            ("hostile", check_hostile),
        ];
        let fleet = &fleet;
        let handles: Vec<_> = checks
            .into_iter()
            .map(|(name, check)| s.spawn(move || check(fleet.host(name))))
            .collect();
        for h in handles {
            h.join().expect("host check failed");
        }
    });
    for h in &fleet.hosts {
        let pids = h.host_pids();
        // unshare + sshd at least; the engine hosts have their launch process and workers too.
        let min = if h.launcher_pids().is_empty() { 2 } else { 5 };
        assert!(pids.len() >= min, "{}: {pids:?}", h.name);
        host_pids.extend(pids);
    }
    // The fleet's shared ssh_config also works, by alias.
    let out = probe_testkit::fixture::ssh_with(&fleet.ssh_config(), "fx-bare", "hostname");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fixture-bare");
    // While the fleet runs the real host still looks the same.
    assert_eq!(host_view(), before);
    drop(fleet);
    let left: Vec<u32> = host_pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes left after drop: {left:?}");
    assert_eq!(host_view(), before);
}

#[test]
fn single_host_has_own_key_config_and_strict_known_hosts() {
    let h = FixtureHost::start("bare");
    assert_eq!(h.alias, "fx-bare");
    assert_eq!(h.addr.to_string(), "127.0.0.14");
    let cfg = std::fs::read_to_string(h.ssh_config()).unwrap();
    for line in [
        "User root",
        "IdentitiesOnly yes",
        "StrictHostKeyChecking yes",
        &format!("Port {}", h.port),
    ] {
        assert!(cfg.contains(line), "{line} missing in {cfg}");
    }
    let out = h.ssh("hostname");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "fixture-bare");
    // A known_hosts without this server's keys must be refused.
    std::fs::write(h.known_hosts(), "").unwrap();
    let out = h.ssh("hostname");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("Host key verification failed"));
}

/// Two copies of one definition (`start_copy`, as the `peers` bench's serving fleet starts
/// them) run at once on the addresses given, each its own host: its own machine-id, its own
/// sshd answering on its own address; and nothing of either is left after drop.
#[test]
fn copies_of_one_definition_run_at_once_as_distinct_hosts() {
    use probe_testkit::KeyPair;
    use probe_testkit::fixture::CopyAt;
    probe_testkit::require_openssh().unwrap();
    let client = tempfile::tempdir().unwrap();
    let key = KeyPair::generate(client.path(), "id_ed25519", "ed25519", "", None);
    let copies: Vec<(CopyAt, FixtureHost, tempfile::TempDir)> = [201u8, 202]
        .iter()
        .enumerate()
        .map(|(index, last)| {
            let at = CopyAt::new(std::net::Ipv4Addr::new(127, 0, 2, *last), index);
            let dir = tempfile::tempdir().unwrap();
            let host = FixtureHost::start_copy("bare", key.clone(), dir.path(), &at, "");
            std::fs::write(host.known_hosts(), host.known_hosts_lines()).unwrap();
            std::fs::write(
                host.ssh_config(),
                host.ssh_config_block(&key.private, &host.known_hosts()),
            )
            .unwrap();
            (at, host, dir)
        })
        .collect();
    let mut pids = Vec::new();
    for (at, host, _) in &copies {
        assert_eq!(host.addr, at.addr);
        let seen = probe(
            host,
            &[
                ("machine-id", "cat /etc/machine-id"),
                ("address", "echo \"$SSH_CONNECTION\" | cut -d' ' -f3"),
            ],
        );
        assert_eq!(seen["machine-id"], at.machine_id, "{}", host.addr);
        assert_eq!(seen["address"], at.addr.to_string());
        pids.extend(host.host_pids());
    }
    assert_ne!(copies[0].0.machine_id, copies[1].0.machine_id);
    drop(copies);
    let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "processes left after drop: {left:?}");
}
