use probe_testkit::fixture::FixtureHost;
#[test]
fn bare_smoke() {
    let h = FixtureHost::start("bare");
    eprintln!("start {:?}", h.start_time);
    let out = h.ssh("hostname; echo $PATH; id; cat /etc/machine-id; ls -la /root /home /usr/local/bin; getent passwd alice; ps -ef");
    eprintln!("{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success());
}
