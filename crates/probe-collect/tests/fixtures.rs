//! Collection over real SSH (OpenSSH sshd, russh client) against the fixture hosts of
//! probe-testkit, asserting the parsed values the fixtures README lists.

#![allow(clippy::print_stderr)]

use std::time::{Duration, Instant};

use probe_collect::{CollectOptions, CollectStats, collect_with_stats};
use probe_model::*;
use probe_testkit::fixture::FixtureHost;
use probe_transport::{ConnectOptions, connect};

async fn collect_host(host: &FixtureHost, opts: CollectOptions) -> (Snapshot, CollectStats, Duration) {
    let copts = ConnectOptions { config_file: Some(host.ssh_config()), batch_mode: true, ..Default::default() };
    let conn = connect(&host.alias, &copts).await.unwrap_or_else(|e| panic!("connect: {e}"));
    let t = Instant::now();
    let (snap, stats) = collect_with_stats(&conn, &opts).await.unwrap_or_else(|e| panic!("collect: {e}"));
    let wall = t.elapsed();
    conn.close().await;
    eprintln!(
        "{}: collection {:?} (round1 {} B in {} ms, round2 {} B in {} ms)",
        host.name, wall, stats.round1_bytes, stats.round1_ms, stats.round2_bytes, stats.round2_ms
    );
    for s in &snap.sections {
        eprintln!("  {:12} {:?} {}B {:?}ms rc={:?} {:?}", s.name, s.status, s.bytes, s.duration_ms, s.exit_code, s.message);
    }
    if let Ok(dir) = std::env::var("PROBE_COLLECT_DUMP") {
        let _ = std::fs::write(format!("{dir}/{}.json", host.name), serde_json::to_string_pretty(&snap).unwrap());
    }
    (snap, stats, wall)
}

fn opts(target: &str) -> CollectOptions {
    CollectOptions { target: target.into(), ..Default::default() }
}

fn section<'a>(s: &'a Snapshot, name: &str) -> &'a SectionReport {
    s.sections.iter().find(|x| x.name == name).unwrap_or_else(|| panic!("no section {name}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sglang_hybrid() {
    let host = FixtureHost::start("sglang-hybrid");
    let (s, _, _) = collect_host(&host, opts("fx-sglang-hybrid")).await;
    assert_eq!(s.host.hostname.as_deref(), Some("fixture-sglang-hybrid"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn vllm_systemd() {
    let host = FixtureHost::start("vllm-systemd");
    let (s, _, _) = collect_host(&host, opts("fx-vllm-systemd")).await;
    assert!(s.host.hostname.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn docker_vllm() {
    let host = FixtureHost::start("docker-vllm");
    let (s, _, _) = collect_host(&host, opts("fx-docker-vllm")).await;
    assert!(s.host.hostname.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bare() {
    let host = FixtureHost::start("bare");
    let (s, _, _) = collect_host(&host, opts("fx-bare")).await;
    assert!(s.host.hostname.is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile() {
    let host = FixtureHost::start("hostile");
    let (s, _, _) = collect_host(&host, opts("fx-hostile")).await;
    assert!(s.host.hostname.is_some());
    let _ = section(&s, "gpu_query");
}

