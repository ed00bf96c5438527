//! Collection over real SSH (OpenSSH sshd, russh client) against the fixture hosts of
//! probe-testkit, asserting the parsed values the fixtures README lists.

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, CollectStats, collect_with_stats};
use probe_model::*;
use probe_testkit::fixture::FixtureHost;
use probe_transport::{ConnectOptions, connect};

async fn collect_host(
    host: &FixtureHost,
    opts: CollectOptions,
) -> (Snapshot, CollectStats, Duration) {
    collect_host_as(host, "root", opts).await
}

async fn collect_host_as(
    host: &FixtureHost,
    user: &str,
    opts: CollectOptions,
) -> (Snapshot, CollectStats, Duration) {
    let copts = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    let conn = connect(&format!("{user}@{}", host.alias), &copts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let t = Instant::now();
    let (snap, stats) = collect_with_stats(&conn, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    conn.close().await;
    eprintln!(
        "{} as {user}: collection {:?} (round1 {} B in {} ms, round2 {} B in {} ms)",
        host.name, wall, stats.round1_bytes, stats.round1_ms, stats.round2_bytes, stats.round2_ms
    );
    for s in &snap.sections {
        eprintln!(
            "  {:12} {:?} {}B {:?}ms rc={:?} {:?}",
            s.name, s.status, s.bytes, s.duration_ms, s.exit_code, s.message
        );
    }
    if let Ok(dir) = std::env::var("PROBE_COLLECT_DUMP") {
        let _ = std::fs::write(
            format!("{dir}/{}.json", host.name),
            serde_json::to_string_pretty(&snap).unwrap(),
        );
    }
    (snap, stats, wall)
}

fn opts(target: &str) -> CollectOptions {
    CollectOptions {
        target: target.into(),
        ..Default::default()
    }
}

fn section<'a>(s: &'a Snapshot, name: &str) -> &'a SectionReport {
    s.sections
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no section {name}"))
}

fn metric<'a>(l: &'a LogSource, name: &str) -> &'a MetricSeries {
    l.metrics
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("{}: no metric {name}", l.location))
}

fn log<'a>(s: &'a Snapshot, location: &str) -> &'a LogSource {
    s.logs
        .iter()
        .find(|l| l.location == location)
        .unwrap_or_else(|| panic!("no log {location}"))
}

fn pkg<'a>(s: &'a Snapshot, prefix: &str, name: &str) -> &'a PythonPackage {
    let e = s
        .python_envs
        .iter()
        .find(|e| e.prefix.as_deref() == Some(prefix))
        .unwrap_or_else(|| panic!("no env {prefix}"));
    e.packages
        .iter()
        .find(|p| p.name == name)
        .unwrap_or_else(|| panic!("{prefix}: no package {name}"))
}

/// No secret value of the fixtures appears anywhere in the snapshot.
fn assert_no_secrets(s: &Snapshot, secrets: &[&str]) {
    let json = serde_json::to_string(s).unwrap();
    for x in secrets {
        assert!(!json.contains(x), "secret {x} leaked");
    }
    assert!(!json.contains('\u{1b}'), "escape character in snapshot");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_hybrid() {
    let host = FixtureHost::start("sglang-hybrid");
    let (s, _, wall) = collect_host(&host, opts("fx-sglang-hybrid")).await;
    assert!(wall < Duration::from_secs(20));
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-sglang-hybrid"));
    assert_eq!(
        s.host.machine_id.as_deref(),
        Some("1b2c3d4e5f60718293a4b5c6d7e8f901")
    );
    // The running launch: the parent holds the real argv, workers point at it.
    let l: Vec<&ProcessInfo> = s
        .processes
        .iter()
        .filter(|p| p.role == ProcessRole::Launcher)
        .collect();
    assert_eq!(
        l.len(),
        1,
        "{:?}",
        s.processes
            .iter()
            .map(|p| (&p.argv, p.role))
            .collect::<Vec<_>>()
    );
    let l = l[0];
    assert_eq!(l.engine, Some(probe_model::Engine::Sglang));
    assert_eq!(host.launcher_pids(), vec![l.pid]);
    assert_eq!(
        l.argv.join(" "),
        "/opt/venvs/sglang/bin/python3 -m sglang.launch_server --model-path Qwen/Qwen3-Next-80B-A3B-Instruct-FP8 --tp 2 --speculative-algo NEXTN --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4 --mem-fraction-static 0.85 --context-length 131072 --host 0.0.0.0 --port 30000 --trust-remote-code"
    );
    assert_eq!(l.cwd.as_deref(), Some("/root"));
    assert_eq!(l.user.as_deref(), Some("root"));
    assert!(
        l.start_time
            .is_some_and(|t| (t - s.remote_clock.unwrap()).abs() < 120)
    );
    assert!(
        l.env
            .get("HF_TOKEN")
            .is_some_and(|v| v.starts_with("<redacted:"))
    );
    assert_eq!(
        l.env.get("CUDA_VISIBLE_DEVICES").map(String::as_str),
        Some("0,1")
    );
    let workers: Vec<&ProcessInfo> = s
        .processes
        .iter()
        .filter(|p| p.role == ProcessRole::Worker)
        .collect();
    assert_eq!(workers.len(), 3);
    assert!(workers.iter().all(|w| w.launcher_pid == Some(l.pid)));
    // Histories with timestamps; zsh continuation.
    let root = s
        .histories
        .iter()
        .find(|h| h.path == "/root/.bash_history")
        .unwrap();
    assert_eq!(root.entries.len(), 18);
    assert_eq!(root.mtime, Some(1_795_857_292));
    assert!(root.entries.iter().all(|e| e.time.is_some()));
    assert!(
        root.entries.iter().any(|e| e.command.contains('\n')),
        "multi-line entry"
    );
    let mei = s
        .histories
        .iter()
        .find(|h| h.path == "/home/mei/.zsh_history")
        .unwrap();
    assert_eq!(mei.shell, ShellKind::Zsh);
    assert!(
        mei.entries
            .iter()
            .any(|e| e.command.contains("bench_serving.py") && e.command.contains('\n'))
    );
    // The unit holds the older configuration.
    let u = s
        .units
        .iter()
        .find(|u| u.name == "sglang-qwen.service")
        .unwrap();
    assert_eq!(u.exec_start.len(), 1);
    assert!(
        u.exec_start[0].contains("--mem-fraction-static 0.80")
            && !u.exec_start[0].contains("NEXTN")
    );
    assert_eq!(
        u.environment
            .get("SGLANG_DISABLE_REQUEST_LOGGING")
            .map(String::as_str),
        Some("1")
    );
    let st = u.state.as_ref().expect("systemctl show");
    assert_eq!(st.active_state.as_deref(), Some("inactive"));
    assert_eq!(st.exec_main_start, Some(1_795_074_339));
    // Packages with versions and install times.
    let sg = pkg(&s, "/opt/venvs/sglang", "sglang");
    assert_eq!(sg.version, "0.5.9");
    assert_eq!(sg.installed_at, Some(1_795_273_382));
    assert!(sg.direct_url.is_some());
    assert_eq!(pkg(&s, "/opt/venvs/sglang", "torch").version, "2.9.1+cu128");
    assert_eq!(pkg(&s, "/opt/venvs/sglang", "sgl-kernel").version, "0.3.21");
    assert_eq!(
        pkg(&s, "/opt/venvs/sglang", "nvidia-nccl-cu12").version,
        "2.27.5"
    );
    // GPUs.
    assert_eq!(s.gpu.status, GpuStatus::Present);
    assert_eq!(s.gpu.gpus.len(), 2);
    assert!(
        s.gpu.gpus.iter().all(
            |g| g.name.as_deref() == Some("NVIDIA H200") && g.memory_total_mib == Some(143_771)
        )
    );
    assert_eq!(s.gpu.cuda_version.as_deref(), Some("12.8"));
    assert_eq!(s.gpu.driver_version.as_deref(), Some("570.172.08"));
    assert_eq!(s.gpu.compute_apps.len(), 2);
    assert!(s.gpu.topology.as_deref().unwrap_or("").contains("GPU0"));
    // Model from the HF cache snapshot named by refs/main.
    let m = s
        .models
        .iter()
        .find(|m| m.model == "Qwen/Qwen3-Next-80B-A3B-Instruct-FP8")
        .unwrap();
    assert!(
        m.config_path
            .contains("/snapshots/9c7f2fbe84465e40164a94a6f4b1e8c26b16a1e0/")
    );
    assert_eq!(m.fields["model_type"], "qwen3_next");
    assert_eq!(m.fields["num_hidden_layers"], 48);
    assert_eq!(m.fields["full_attention_interval"], 4);
    assert_eq!(m.fields["mtp_num_hidden_layers"], 1);
    assert_eq!(m.fields["quantization_config"]["quant_method"], "fp8");
    // Logs: the live log (fd 1) and the unit's journal.
    let live = log(&s, "/root/sglang.log");
    assert_eq!(live.startups.last().unwrap().engine, Engine::Sglang);
    assert!(
        live.startups
            .last()
            .unwrap()
            .text
            .contains("speculative_algorithm='NEXTN'")
    );
    let g = &metric(live, "gen_throughput").summary;
    assert!(g.count >= 1 && g.min >= 380.0 && g.max <= 470.0, "{g:?}");
    let a = &metric(live, "accept_len").summary;
    assert!(a.min >= 2.9 && a.max <= 3.3);
    assert!(metric(live, "mamba_usage").summary.count >= 1);
    let j = s
        .logs
        .iter()
        .find(|l| l.origin == LogOrigin::Journal && l.location == "sglang-qwen.service")
        .unwrap();
    assert_eq!(j.startups.len(), 3);
    // The journal read whole (1,970 decode lines), its metric lines thinned on the host.
    let t = j
        .thinning
        .as_ref()
        .expect("read through the host's thinning");
    assert!(t.metric_lines_seen >= 1970, "{t:?}");
    let kept = metric(j, "gen_throughput").summary.count;
    assert!(kept > 100 && kept < 1970, "{kept}");
    assert!(j.metrics.iter().all(|m| m.name != "accept_len"));
    assert!(
        s.package_events
            .iter()
            .any(|e| e.package.starts_with("nvidia-driver-570-server-open"))
    );
    assert_no_secrets(&s, &["hf_"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_systemd() {
    let host = FixtureHost::start("vllm-systemd");
    let (s, _, _) = collect_host(&host, opts("fx-vllm-systemd")).await;
    let u = s.units.iter().find(|u| u.name == "vllm.service").unwrap();
    // The drop-in's empty ExecStart= reset the list; its ExecStart is the running command.
    assert_eq!(u.drop_ins.len(), 1);
    assert!(
        u.drop_ins[0]
            .path
            .ends_with("vllm.service.d/10-override.conf")
    );
    assert_eq!(u.exec_start.len(), 1);
    assert!(u.exec_start[0].contains("--speculative-config") && u.exec_start[0].contains("0.92"));
    assert_eq!(
        u.environment.get("VLLM_USE_DEEP_GEMM").map(String::as_str),
        Some("1")
    );
    assert_eq!(u.run_as.as_deref(), Some("vllm"));
    assert_eq!(u.working_directory.as_deref(), Some("/home/vllm"));
    let ef = &u.environment_files[0];
    assert_eq!(ef.path, "/etc/default/vllm");
    assert!(
        ef.vars
            .get("HF_TOKEN")
            .is_some_and(|v| v.starts_with("<redacted:"))
    );
    let st = u.state.as_ref().unwrap();
    assert_eq!(st.active_state.as_deref(), Some("active"));
    let l = s
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Launcher)
        .unwrap();
    assert_eq!(st.main_pid, Some(l.pid));
    assert_eq!(l.user.as_deref(), Some("vllm"));
    assert_eq!(l.engine, Some(probe_model::Engine::Vllm));
    assert_eq!(
        s.processes
            .iter()
            .filter(|p| p.role == ProcessRole::Worker && p.launcher_pid == Some(l.pid))
            .count(),
        5
    );
    let v = pkg(&s, "/opt/venvs/vllm", "vllm");
    assert_eq!(v.version, "0.1.dev16016+g3cfc8f8b7");
    assert!(
        v.direct_url
            .as_deref()
            .unwrap_or("")
            .contains("3cfc8f8b7d2a")
    );
    let m = s
        .models
        .iter()
        .find(|m| m.model == "/mnt/models/GLM-4.5-Air-FP8")
        .unwrap();
    assert_eq!(m.fields["num_nextn_predict_layers"], 1);
    assert_eq!(m.fields["num_hidden_layers"], 46);
    let j = s
        .logs
        .iter()
        .find(|l| l.origin == LogOrigin::Journal && l.location == "vllm.service")
        .unwrap();
    assert!(j.startups.len() >= 4, "{}", j.startups.len());
    assert!(
        j.startups
            .iter()
            .all(|x| x.version.as_deref() == Some("0.1.dev16016+g3cfc8f8b7"))
    );
    assert!(metric(j, "accept_len").summary.min >= 1.78);
    assert!(metric(j, "gen_throughput").summary.max <= 2500.0);
    assert_eq!(s.gpu.gpus.len(), 4);
    assert_no_secrets(&s, &["hf_"]);
    vllm_systemd_sudo(&host).await;
}

/// `--sudo` as non-root users of the vllm-systemd host: `ops` (NOPASSWD: ALL) reads what only
/// root can; `intern` (sudo with a password) gets what it can read and a `sudo` section that
/// says a password is required.
async fn vllm_systemd_sudo(host: &FixtureHost) {
    assert!(
        std::path::Path::new("/usr/bin/sudo").exists(),
        "sudo is not installed here (apt-get install sudo; .ci/run installs it)"
    );
    let sudo_opts = |target: &str| CollectOptions {
        sudo: true,
        ..opts(target)
    };
    let launcher = |s: &Snapshot| {
        s.processes
            .iter()
            .find(|p| p.role == ProcessRole::Launcher)
            .cloned()
            .expect("launcher")
    };
    let env_file = |s: &Snapshot| {
        s.units
            .iter()
            .find(|u| u.name == "vllm.service")
            .expect("vllm.service")
            .environment_files
            .first()
            .map(|e| e.vars.clone())
            .unwrap_or_default()
    };
    let root_history = |s: &Snapshot| {
        s.histories
            .iter()
            .find(|h| h.path == "/root/.bash_history")
            .map(|h| h.entries.len())
    };
    // ops with --sudo: root's history (/root is 0700), the environment of the vllm user's
    // process and the 0600 EnvironmentFile, all through `sudo -n`; the snapshot says so.
    let (su, _, _) = collect_host_as(host, "ops", sudo_opts("ops@fx-vllm-systemd")).await;
    assert_eq!(su.host.collected_as.as_deref(), Some("ops"));
    assert!(su.sudo, "sudo was used");
    assert!(
        su.sections.iter().all(|x| x.name != "sudo"),
        "{:?}",
        su.sections
    );
    assert!(
        root_history(&su).is_some_and(|n| n > 0),
        "{:?}",
        su.histories
    );
    let l = launcher(&su);
    assert!(
        l.env
            .get("HF_TOKEN")
            .is_some_and(|v| v.starts_with("<redacted:"))
            && l.env.contains_key("INVOCATION_ID"),
        "{:?}",
        l.env
    );
    assert!(
        env_file(&su)
            .get("HF_TOKEN")
            .is_some_and(|v| v.starts_with("<redacted:"))
    );
    assert!(su.histories.iter().any(|h| h.user == "ops"));
    // The unit's journal: the stand-ins live in /usr/local/sbin, which only root's PATH (and
    // sudo's secure_path) has (fixtures README); a plain user gets the real, empty journal.
    assert!(
        su.logs
            .iter()
            .any(|j| j.origin == LogOrigin::Journal && !j.metrics.is_empty())
    );
    // sudo's "unable to resolve host" warning (the fixture's name is in no /etc/hosts) is not
    // made every section's message.
    assert!(
        su.sections.iter().all(|x| !x
            .message
            .as_deref()
            .unwrap_or("")
            .contains("unable to resolve")),
        "{:?}",
        su.sections
    );
    assert_no_secrets(&su, &["hf_"]);
    // The same user without --sudo reads none of it.
    let (plain, _, _) = collect_host_as(host, "ops", opts("ops@fx-vllm-systemd")).await;
    assert!(!plain.sudo);
    assert_eq!(root_history(&plain), None);
    assert!(launcher(&plain).env.is_empty());
    assert!(env_file(&plain).is_empty());
    // intern: sudo wants a password. Said in a `sudo` section; the rest is collected as intern.
    let (pw, _, _) = collect_host_as(host, "intern", sudo_opts("intern@fx-vllm-systemd")).await;
    assert!(!pw.sudo, "sudo was asked for, not used");
    let sec = section(&pw, "sudo");
    assert_eq!(sec.status, SectionStatus::PermissionDenied);
    assert!(
        sec.message
            .as_deref()
            .unwrap_or("")
            .contains("a password is required"),
        "{sec:?}"
    );
    let l = launcher(&pw);
    assert!(l.argv.join(" ").contains("--speculative-config"));
    assert!(l.env.is_empty());
    assert_eq!(root_history(&pw), None);
    let u = pw.units.iter().find(|u| u.name == "vllm.service").unwrap();
    assert!(u.exec_start[0].contains("0.92"));
    assert!(
        pkg(&pw, "/opt/venvs/vllm", "vllm")
            .version
            .starts_with("0.1.dev")
    );
    assert!(
        pw.logs
            .iter()
            .all(|j| j.origin != LogOrigin::Journal || j.metrics.is_empty())
    );
}

/// The compose files a container's labels name are read as its launch's text: the override
/// edited after the container started says otherwise, and the container's launch says so; a
/// label that names `/etc/shadow`, or a compose file that links to it, reads nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compose_vllm() {
    let host = FixtureHost::start("compose-vllm");
    let (s, _, _) = collect_host(&host, opts("fx-compose-vllm")).await;
    assert_eq!(s.containers.len(), 2, "{:?}", s.containers);
    let c = s
        .containers
        .iter()
        .find(|c| c.name.as_deref() == Some("llm-vllm-1"))
        .unwrap();
    assert_eq!(
        c.repo_digests,
        [
            "vllm/vllm-openai@sha256:1d6b4c5e7f8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c"
        ]
    );
    let brief: Vec<(&str, &str, SectionStatus)> = s
        .launch_files
        .iter()
        .map(|f| (f.path.as_str(), f.named_by.as_str(), f.status))
        .collect();
    assert_eq!(
        brief,
        [
            (
                "/srv/llm/compose.yaml",
                "container:llm-vllm-1",
                SectionStatus::Ok
            ),
            (
                "/srv/llm/compose.override.yaml",
                "container:llm-vllm-1",
                SectionStatus::Ok
            ),
            (
                "/srv/evil/compose.yaml",
                "container:evil-vllm-1",
                SectionStatus::PermissionDenied
            ),
        ],
        "/etc/shadow is no compose file to read"
    );
    let main = &s.launch_files[0];
    assert_eq!(main.mtime, Some(1_795_168_920));
    assert!(main.text.contains("--max-model-len 16384"), "{}", main.text);
    assert!(
        !main.text.contains("hf_Q29tcG9zZUZpeHR1cmVUb2tlbjAwNA")
            && main.text.contains("HF_TOKEN: <redacted"),
        "the compose file's token is redacted: {}",
        main.text
    );
    assert!(s.launch_files[2].text.is_empty());
    let sec = s
        .sections
        .iter()
        .find(|x| x.name == "launch_files")
        .unwrap();
    assert!(
        sec.message
            .as_deref()
            .is_some_and(|m| m.contains("/srv/evil/compose.yaml: symbolic link: not followed")),
        "{sec:?}"
    );
    // The launch: what runs, and what the files say now.
    let launches = probe_launch::launches_of(&s);
    let l = launches
        .iter()
        .find(|l| l.source.location == "container:llm-vllm-1")
        .expect("the compose container's launch");
    let w = l
        .warnings
        .iter()
        .find(|w| w.starts_with("compose:"))
        .unwrap_or_else(|| panic!("{:?}", l.warnings));
    for part in [
        "/srv/llm/compose.yaml, /srv/llm/compose.override.yaml (service vllm) says otherwise",
        "--max-model-len 65536 (runs 32768)",
        "--gpu-memory-utilization 0.95 (runs 0.92)",
        "the file changed at 2026-11-28 15:30 UTC, after the container started at 2026-11-21 09:12 UTC: not applied",
        "in /root/.bash_history the last `docker compose up` for it is entry 3, and entry 6 (`vim compose.override.yaml`) names its files after it",
    ] {
        assert!(w.contains(part), "{part:?} in {w}");
    }
    assert!(!w.contains("tensor-parallel"), "{w}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_vllm() {
    let host = FixtureHost::start("docker-vllm");
    let (s, _, _) = collect_host(&host, opts("fx-docker-vllm")).await;
    assert_eq!(s.containers.len(), 2);
    let c = s
        .containers
        .iter()
        .find(|c| c.name.as_deref() == Some("vllm-llama"))
        .unwrap();
    assert_eq!(c.image, "vllm/vllm-openai:v0.11.0");
    assert_eq!(
        c.entrypoint,
        ["python3", "-m", "vllm.entrypoints.openai.api_server"]
    );
    assert_eq!(c.state.as_deref(), Some("running"));
    assert!(
        c.env
            .get("HF_TOKEN")
            .is_some_and(|v| v.starts_with("<redacted:"))
    );
    let old = s
        .containers
        .iter()
        .find(|c| c.name.as_deref() == Some("vllm-llama-v0102"))
        .unwrap();
    assert!(old.cmd.join(" ").contains("--max-model-len 16384"));
    // The container's process: its own mount namespace, found by its docker cgroup; its
    // packages and model exist only inside it and were read through /proc/PID/root.
    let l = s
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Launcher)
        .unwrap();
    assert_eq!(host.launcher_pids(), vec![l.pid]);
    assert_eq!(l.container_id.as_deref(), Some(c.id.as_str()));
    let root = format!("/proc/{}/root", l.pid);
    assert_eq!(l.mount_root.as_deref(), Some(root.as_str()));
    let shim = s
        .processes
        .iter()
        .find(|p| Some(p.pid) == l.ppid)
        .expect("shim");
    assert_eq!(shim.role, ProcessRole::Wrapper);
    assert_eq!(shim.argv[0], "containerd-shim-runc-v2");
    assert_eq!(shim.mount_root, None);
    assert_eq!(pkg(&s, "/usr", "vllm").version, "0.11.0");
    assert_eq!(pkg(&s, "/usr", "xformers").version, "0.0.32.post1");
    assert_eq!(pkg(&s, "/usr", "torch").version, "2.8.0+cu128");
    assert_eq!(pkg(&s, "/usr", "vllm").installed_at, Some(1_795_611_732));
    let env = s
        .python_envs
        .iter()
        .find(|e| e.prefix.as_deref() == Some("/usr"))
        .unwrap();
    assert_eq!(env.mount_root.as_deref(), Some(root.as_str()));
    assert_eq!(env.used_by, [format!("pid:{}", l.pid)]);
    assert_eq!(env.interpreter, "/usr/bin/python3.11");
    assert!(
        env.site_packages
            .contains(&"/usr/local/lib/python3.11/dist-packages".to_string()),
        "{:?}",
        env.site_packages
    );
    assert_eq!(s.models.len(), 1, "{:?}", s.models);
    let m = &s.models[0];
    assert_eq!(m.model, "/mnt/models/Llama-3.3-70B-Instruct");
    assert_eq!(
        m.config_path,
        "/mnt/models/Llama-3.3-70B-Instruct/config.json"
    );
    assert_eq!(m.mount_root.as_deref(), Some(root.as_str()));
    assert_eq!(m.mtime, Some(1_793_354_400));
    assert!(s.package_events.iter().any(
        |e| e.package == "cuda-drivers-570" && e.to_version.as_deref() == Some("570.133.20-1")
    ));
    assert!(s.package_events.iter().any(|e| e.manager == "dpkg"));
    // Last month's driver upgrade, only in the gzip-rotated logs.
    let up = |m: &str, src: &str| {
        s.package_events.iter().any(|e| {
            e.manager == m
                && e.source == src
                && e.action == "upgrade"
                && e.package == "nvidia-driver-550-server"
                && e.from_version.as_deref() == Some("550.144.03-0ubuntu1")
                && e.to_version.as_deref() == Some("550.163.01-0ubuntu1")
        })
    };
    assert!(
        up("apt", "/var/log/apt/history.log.1.gz"),
        "{:?}",
        s.package_events
    );
    assert!(up("dpkg", "/var/log/dpkg.log.2.gz"));
    assert!(
        s.package_events.iter().all(|e| e.package != "tzdata"),
        "only GPU/CUDA packages"
    );
    assert_eq!(s.models[0].fields["model_type"], "llama");
    // The containers' stdout/stderr, read from docker's json-file logs (LogPath), not through
    // the daemon: the running container's start-up args and live throughput, and the exited
    // container's earlier launch, with docker's own per-line times.
    let log_path = |id: &str| format!("/var/lib/docker/containers/{id}/{id}-json.log");
    assert_eq!(c.log_path.as_deref(), Some(log_path(&c.id).as_str()));
    assert_eq!(c.log_driver.as_deref(), Some("json-file"));
    assert_eq!(section(&s, "container_logs").status, SectionStatus::Ok);
    let live = log(&s, &log_path(&c.id));
    assert_eq!(live.origin, LogOrigin::Container);
    assert_eq!(live.status, SectionStatus::Ok, "{live:?}");
    let st = live
        .startups
        .last()
        .expect("start-up line in the container log");
    assert_eq!(st.engine, Engine::Vllm);
    assert_eq!(st.version.as_deref(), Some("0.11.0"));
    assert!(
        st.text.contains("'max_model_len': 32768") && st.text.contains("'tensor_parallel_size': 4"),
        "{st:?}"
    );
    let started = l.start_time.unwrap();
    assert!(
        st.time.is_some_and(|t| (t - started).abs() <= 5),
        "{st:?} vs {started}"
    );
    let g = &metric(live, "gen_throughput").summary;
    assert!(g.count >= 1 && g.min >= 2100.0 && g.max <= 2500.0, "{g:?}");
    let clock = s.remote_clock.unwrap();
    assert!(
        g.last_time.is_some_and(|t| t >= started && t <= clock + 5),
        "{g:?}"
    );
    assert!(metric(live, "kv_cache_usage").summary.count >= 1);
    let old_log = log(&s, &log_path(&old.id));
    assert_eq!(old_log.origin, LogOrigin::Container);
    assert_eq!(old_log.mtime, Some(1_795_611_880));
    assert_eq!(old_log.startups.len(), 1);
    let st = &old_log.startups[0];
    assert_eq!(st.version.as_deref(), Some("0.10.2"));
    assert_eq!(st.time, Some(1_793_612_516));
    assert!(st.text.contains("'max_model_len': 16384") && st.text.contains("'max_num_seqs': 256"));
    let g = &metric(old_log, "gen_throughput").summary;
    assert_eq!(g.count, 240);
    assert!(g.min >= 1900.0 && g.max <= 2300.0, "{g:?}");
    assert_eq!(g.first_time, Some(1_795_611_880 - 2400));
    assert_eq!(g.last_time, Some(1_795_611_880 - 10));
    assert_no_secrets(&s, &["hf_"]);

    // Not root: the container's root cannot be entered; said per section, the rest collected.
    let (s, _, _) = collect_host_as(&host, "monitor", opts("monitor@fx-docker-vllm")).await;
    assert_eq!(s.host.collected_as.as_deref(), Some("monitor"));
    let l = s
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Launcher)
        .unwrap();
    assert_eq!(l.container_id.as_deref(), Some(c.id.as_str()));
    assert!(l.env.is_empty() && l.exe.is_none(), "{l:?}");
    assert_eq!(
        l.mount_root.as_deref(),
        Some(format!("/proc/{}/root", l.pid).as_str())
    );
    assert_eq!(
        section(&s, "python_envs").status,
        SectionStatus::PermissionDenied,
        "{:?}",
        section(&s, "python_envs")
    );
    assert!(s.python_envs.is_empty());
    assert_eq!(
        section(&s, "models").status,
        SectionStatus::PermissionDenied
    );
    assert_eq!(s.models[0].status, SectionStatus::PermissionDenied);
    assert_eq!(
        s.models[0].config_path,
        "/mnt/models/Llama-3.3-70B-Instruct/config.json"
    );
    assert!(!s.histories.is_empty() || section(&s, "history").status == SectionStatus::Ok);
    // docker's log files are root-only: said, not read.
    let cl = section(&s, "container_logs");
    assert_eq!(cl.status, SectionStatus::PermissionDenied, "{cl:?}");
    assert!(
        cl.message.as_deref().unwrap_or("").contains("--sudo"),
        "{cl:?}"
    );
    let clogs: Vec<&LogSource> = s
        .logs
        .iter()
        .filter(|l| l.origin == LogOrigin::Container)
        .collect();
    assert_eq!(clogs.len(), 2);
    assert!(
        clogs
            .iter()
            .all(|l| l.status == SectionStatus::PermissionDenied && l.metrics.is_empty())
    );
    assert!(
        s.package_events
            .iter()
            .any(|e| e.package == "cuda-drivers-570")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare() {
    let host = FixtureHost::start("bare");
    let (s, stats, _) = collect_host(&host, opts("fx-bare")).await;
    assert_eq!(
        s.host.machine_id.as_deref(),
        Some("6a1f0c9e2b7d4e8f9a0b1c2d3e4f5a60")
    );
    assert_eq!(s.gpu.status, GpuStatus::NoNvidiaSmi);
    assert_eq!(section(&s, "gpu_query").status, SectionStatus::NotPresent);
    assert!(s.processes.is_empty() && s.units.is_empty() && s.containers.is_empty());
    assert_eq!(
        stats.round2_bytes, 0,
        "nothing depends on round 1 here: no second round"
    );
    let root = s.histories.iter().find(|h| h.user == "root").unwrap();
    assert_eq!(root.entries.len(), 8);
    assert_eq!(root.mtime, Some(1_795_797_730));
    let fish = s.histories.iter().find(|h| h.user == "dana").unwrap();
    assert_eq!(fish.shell, ShellKind::Fish);
    assert_eq!(fish.entries.len(), 4);
    assert!(fish.entries.iter().all(|e| e.time.is_some()));
    assert!(s.package_events.is_empty());
    assert!(
        s.sections.iter().all(|x| x.status != SectionStatus::Failed),
        "{:?}",
        s.sections
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile() {
    let host = FixtureHost::start("hostile");
    let (s, stats, wall) = collect_host(&host, opts("fx-hostile")).await;
    // The hanging nvidia-smi is reported; everything else still succeeded.
    assert_eq!(section(&s, "gpu_query").status, SectionStatus::TimedOut);
    assert_eq!(s.gpu.status, GpuStatus::DriverError);
    assert!(wall < Duration::from_secs(30), "{wall:?}");
    for n in [
        "host",
        "history",
        "units",
        "processes",
        "python_envs",
        "logs",
    ] {
        assert_eq!(section(&s, n).status, SectionStatus::Ok, "{n}");
    }
    // Symlinked history not read, and said so.
    assert!(s.histories.iter().all(|h| h.path != "/root/.bash_history"));
    assert!(
        section(&s, "history")
            .message
            .as_deref()
            .unwrap_or("")
            .contains("/root/.bash_history not read")
    );
    // Junk history parsed, escapes gone, secrets redacted.
    let m = s.histories.iter().find(|h| h.user == "mallory").unwrap();
    assert!(!m.entries.is_empty());
    assert!(m.entries.iter().all(|e| e.command.len() <= 16 * 1024));
    // 200 MB log read whole through the host's thinning: what crosses the wire is bounded.
    let l = log(&s, "/var/log/sglang/server.log");
    let t = l
        .thinning
        .as_ref()
        .expect("read through the host's thinning");
    eprintln!("hostile 200 MB log: {t:?}, {} bytes sent", l.bytes_read);
    assert!(t.lines_seen > 500_000 || t.stopped_early, "{t:?}");
    assert!(l.bytes_read <= 16 << 20, "{}", l.bytes_read);
    assert!(metric(l, "gen_throughput").summary.count > 1000);
    assert!(stats.round2_bytes < 6 << 20);
    // 10,000-line unit: bounded, its ExecStart still found.
    let u = s
        .units
        .iter()
        .find(|u| u.name == "llm-bloat.service")
        .unwrap();
    assert!(u.exec_start[0].contains("--port 30001"));
    assert!(u.environment.len() <= 1000);
    // Broken model config recorded, not fatal.
    let mc = s
        .models
        .iter()
        .find(|m| m.model == "/srv/models/broken")
        .unwrap();
    assert_eq!(mc.status, SectionStatus::Failed);
    assert!(
        s.host
            .os_pretty
            .as_deref()
            .unwrap()
            .starts_with("Debian GNU/Linux 12")
    );
    assert_no_secrets(&s, &["sk-proj-", "hunter2", "root:$y$"]);
}
