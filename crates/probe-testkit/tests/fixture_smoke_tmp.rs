use probe_testkit::fixture::FixtureHost;
#[test]
fn smoke() {
    let name = std::env::var("FX").unwrap();
    let h = FixtureHost::start(&name);
    eprintln!("start {:?} pids {:?}", h.start_time, h.pids());
    let cmd = std::env::var("FXCMD").unwrap();
    let out = h.ssh(&cmd);
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}
