//! The `attacks` fixture host: an unprivileged local user attacking root's collection, and
//! programs that misbehave. Real sshd, real processes; one collection as root, unredacted (so
//! a leaked secret would show), and every attack checked against what it must not achieve.

#![expect(
    clippy::print_stderr,
    reason = "progress lines on stderr while fixture hosts start and stop"
)]

use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, collect};
use probe_model::{ProcessRole, SectionStatus, Snapshot};
use probe_testkit::fixture::FixtureHost;
use probe_transport::{ConnectOptions, connect};

fn status(s: &Snapshot, name: &str) -> (SectionStatus, String) {
    let x = s
        .sections
        .iter()
        .find(|x| x.name == name)
        .unwrap_or_else(|| panic!("no section {name}: {:?}", s.sections));
    (x.status, x.message.clone().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_user_cannot_forge_leak_or_hide_and_bad_programs_cost_only_their_part() {
    let host = FixtureHost::start("attacks");
    // The 2,000 decoys are forked in the background (seconds on a loaded machine).
    let done = host.dir.join("root/home/mallory/decoys.done");
    let t0 = Instant::now();
    while std::fs::read_to_string(&done).unwrap_or_default().trim() != "2000" {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "decoys never started"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let copts = ConnectOptions {
        config_file: Some(host.ssh_config()),
        batch_mode: true,
        ..Default::default()
    };
    let conn = connect(&host.alias, &copts)
        .await
        .unwrap_or_else(|e| panic!("connect: {e}"));
    let opts = CollectOptions {
        target: "fx-attacks".into(),
        redact: false,
        deadline: Duration::from_secs(60),
        ..Default::default()
    };
    let t = Instant::now();
    let s = collect(&conn, &opts)
        .await
        .unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    conn.close().await;
    eprintln!("attacks: {wall:?}, {} processes", s.processes.len());
    for x in &s.sections {
        eprintln!(
            "  {:14} {:?} {}B {:?}ms {:?}",
            x.name, x.status, x.bytes, x.duration_ms, x.message
        );
    }
    let json = serde_json::to_string(&s).unwrap();

    // Forgery: the boundary never reached any command line, so nothing was forged.
    let seen =
        std::fs::read_to_string(host.dir.join("root/home/mallory/seen.log")).unwrap_or_default();
    assert!(seen.is_empty(), "the forger saw boundaries: {seen}");
    assert!(
        !json.contains("FORGEDBY"),
        "a forged process record was taken"
    );
    assert!(s.processes.iter().all(|p| p.pid != 31337));

    // Hiding: 2,000 decoys with vLLM-like command lines; the real server is found and the
    // section is complete.
    let (st, msg) = status(&s, "processes");
    assert_eq!(st, SectionStatus::Ok, "{msg}");
    let real = s
        .processes
        .iter()
        .find(|p| p.role == ProcessRole::Launcher && p.engine == Some(probe_model::Engine::Sglang))
        .expect("the real server is found among the decoys");
    assert_eq!(real.uid, Some(0));
    assert!(real.argv.iter().any(|a| a == "/srv/models/broken"));
    let decoys = s
        .processes
        .iter()
        .filter(|p| p.argv.iter().any(|a| a == "decoy"))
        .count();
    eprintln!("decoys kept: {decoys}");
    assert!(decoys >= 2000, "every decoy was read ({decoys})");

    // Root-only files a user links to or names: never copied.
    for secret in [
        "SHADOWHASH-attacks",
        "ROOTONLY-netrc-secret",
        "ROOTONLY-app-env-secret",
    ] {
        assert!(!json.contains(secret), "{secret} leaked into the snapshot");
    }
    // ... while the user's own unit is read, and its EnvironmentFile outside the home is not.
    let b = s
        .units
        .iter()
        .find(|u| u.name == "vllm-b.service")
        .expect("mallory's own unit");
    assert!(b.fragment.content.contains("vllm.entrypoints"));
    assert!(b.environment_files.iter().all(|e| e.vars.is_empty()));
    // The newline in a unit file name adds no unit.
    assert!(s.units.iter().all(|u| u.name != "inj.service"));
    assert!(s.units.iter().all(|u| !u.name.contains('\n')));
    // A root-owned drop-in linked to /dev/zero costs nothing: the unit and the section are fine.
    assert!(s.units.iter().any(|u| u.name == "sglang-attacks.service"));
    let (st, msg) = status(&s, "units");
    assert_eq!(st, SectionStatus::Ok, "{msg}");
    // History swapped with a link to /etc/shadow while we read: only mallory's own content.
    let (st, msg) = status(&s, "history");
    assert_ne!(st, SectionStatus::TimedOut, "{msg}");

    // A hung `docker ps` (with an orphan holding its output) is timed out, not ok.
    let (st, msg) = status(&s, "containers");
    assert_eq!(st, SectionStatus::TimedOut, "{msg}");
    // A flooding nvidia-smi is capped (1 MiB, never the remote shell's memory): the GPU state
    // says so, the rest is unaffected.
    let (_, msg) = status(&s, "gpu_query");
    assert!(msg.contains("output over 1 MiB"), "{msg}");
    assert_ne!(s.gpu.status, probe_model::GpuStatus::Present);
    assert!(s.gpu.gpus.is_empty());
    // METADATA that is a FIFO, a link to /dev/zero or 300 MB costs that package only.
    let (st, msg) = status(&s, "python_envs");
    assert_eq!(st, SectionStatus::Ok, "{msg}");
    let env = s
        .python_envs
        .iter()
        .find(|e| e.prefix.as_deref() == Some("/opt/venvs/sglang"))
        .expect("the server's venv");
    assert!(
        env.packages
            .iter()
            .any(|p| p.name == "sglang" && p.version == "0.5.9"),
        "{:?}",
        env.packages
    );
    assert!(wall < opts.deadline, "{wall:?}");
}
