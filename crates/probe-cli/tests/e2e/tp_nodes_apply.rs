//! The rollback loop on the tp-node pair (issue 33 item 6): tp-node-b's plan, as the script
//! `probe diff --format sh` writes, run as root on a private instance of tp-node-b. It moves the
//! leftover drop-in aside, `systemctl daemon-reload` (the stand-in reads the unit files again)
//! and `systemctl restart vllm.service` (the stand-in stops the running server and starts the
//! unit's ExecStart with its environment, as systemd would): the server then runs node a's
//! launch and logs node a's numbers, and `probe diff` against tp-node-a exits 0.

use crate::apply_plan::{LOGIN_ENV, Loop, left};
use crate::util;

#[test]
fn tp_nodes_rollback_applied_on_the_host_leaves_no_difference() {
    let lp = Loop::start("tp-node-a", "tp-node-b");
    lp.collect();
    let (before, code) = lp.diff_json();
    assert_eq!(code, 1, "{:?}", left(&before));
    let journal = "/usr/local/share/fixture/journal/vllm.service.live";
    let out = lp.apply(LOGIN_ENV);
    let said = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    // The check the plan runs: what systemd runs the unit with now.
    assert!(
        said.contains("--port 8000 ; ignore_errors=no") && !said.contains("--disable-custom"),
        "{said}"
    );
    assert!(!said.contains("NCCL_P2P_DISABLE"), "{said}");
    lp.wait_for(journal, "GPU KV cache size: 1,154,496 tokens", 1);
    lp.wait_for(journal, "Avg prompt throughput", 20);
    lp.collect();
    let (after, code) = lp.diff_json();
    assert_eq!(
        code,
        0,
        "after the rollback: {:#?}\n{}",
        left(&after),
        util::text(&lp.diff(&[]).stdout)
    );
    assert!(after.rollback_plan.is_empty(), "{:#?}", after.rollback_plan);
}

/// The package-only node (tp-node-c: transformers upgraded by hand to 4.57.3): its plan pins
/// the earlier version in the venv that serves and restarts the unit. Run with the real pip
/// (Debian's, the fixture venv's interpreter) against a local wheel of 4.57.1, since nothing here
/// reaches a package index (`PIP_NO_INDEX`, `PIP_FIND_LINKS`: the plan's command is unchanged).
#[test]
fn tp_node_c_rollback_pins_the_package_and_leaves_no_difference() {
    let lp = Loop::start("tp-node-a", "tp-node-c");
    lp.collect();
    let (before, code) = lp.diff_json();
    assert_eq!(code, 1, "{:?}", left(&before));
    let wheelhouse = lp.file("/root/wheelhouse");
    std::fs::create_dir_all(&wheelhouse).unwrap();
    let built = std::process::Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(WHEEL_PY)
        .arg(&wheelhouse)
        .status();
    assert!(built.is_ok_and(|s| s.success()), "the wheel is built");
    let env = format!(
        "{LOGIN_ENV} PYTHONPATH=/usr/lib/python3/dist-packages PIP_NO_INDEX=1 \
         PIP_FIND_LINKS=/root/wheelhouse PIP_DISABLE_PIP_VERSION_CHECK=1 \
         PIP_ROOT_USER_ACTION=ignore PIP_NO_CACHE_DIR=1"
    );
    let out = lp.apply(&env);
    let said = format!("{}{}", util::text(&out.stdout), util::text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("Successfully installed transformers-4.57.1"),
        "{said}"
    );
    let site = "/opt/venvs/vllm/lib/python3.11/site-packages";
    assert!(
        lp.file(&format!("{site}/transformers-4.57.1.dist-info"))
            .is_dir()
    );
    assert!(
        !lp.file(&format!("{site}/transformers-4.57.3.dist-info"))
            .exists()
    );
    lp.wait_for(
        "/usr/local/share/fixture/journal/vllm.service.live",
        "Avg prompt throughput",
        20,
    );
    lp.collect();
    let (after, code) = lp.diff_json();
    assert_eq!(
        code,
        0,
        "after the rollback: {:#?}\n{}",
        left(&after),
        util::text(&lp.diff(&[]).stdout)
    );
}

/// Writes `transformers-4.57.1-py3-none-any.whl` (a wheel as `pip wheel` lays it out, with a
/// RECORD of sha256 hashes) into the directory given as its argument.
const WHEEL_PY: &str = r#"
import base64, hashlib, os, sys, zipfile
files = {
    "transformers/__init__.py": b'__version__ = "4.57.1"\n',
    "transformers-4.57.1.dist-info/METADATA": b"Metadata-Version: 2.1\nName: transformers\nVersion: 4.57.1\nRequires-Python: >=3.9\n",
    "transformers-4.57.1.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: probe-e2e\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
def digest(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
record = "".join(f"{name},{digest(data)},{len(data)}\n" for name, data in files.items())
record += "transformers-4.57.1.dist-info/RECORD,,\n"
files["transformers-4.57.1.dist-info/RECORD"] = record.encode()
with zipfile.ZipFile(os.path.join(sys.argv[1], "transformers-4.57.1-py3-none-any.whl"), "w") as z:
    for name, data in files.items():
        z.writestr(name, data)
"#;
