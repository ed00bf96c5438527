//! The `self_installed` section and the `git` records of `python_envs` (issue 32, item 4) under
//! dash+mawk, busybox and bash+gawk: a binary's mtime and the checkout it was built in, read as
//! files (git is never run: `.git/HEAD`, the loose ref or `packed-refs`, FETCH_HEAD/ORIG_HEAD);
//! an editable install's checkout; a model store's manifests to names. Links are not followed:
//! a `.git` that is a link, a ref that is a link, a manifest that is a link give nothing.

use crate::util::{run_round2, shells};
use std::os::unix::fs::symlink;
use std::path::Path;

const C1: &str = "3f4ae8ad0b9a8f7f1e2d3c4b5a69788796a5b4c3";
const C2: &str = "9c1e5b2e7d6f4a3b2c1d0e9f8a7b6c5d4e3f2a1b";
const DIGEST: &str = "7b91f419b61e9f5680873fe674dc58b0374f469fe3e01edada6bb5639dfcfbd4";

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

fn touch(p: &Path, at: i64) {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(at as u64);
    std::fs::File::options()
        .write(true)
        .open(p)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn binaries_checkouts_and_model_names_under_every_shell() {
    let dir = tempfile::tempdir().unwrap();
    // Canonical: the script compares a store's and a checkout's path with `pwd -P`.
    let d = std::fs::canonicalize(dir.path()).unwrap();
    // A build in a home directory: a loose ref, FETCH_HEAD and ORIG_HEAD.
    let lc = d.join("llama.cpp");
    let bin = lc.join("build/bin/llama-server");
    write(&bin, "#!/bin/false\n");
    touch(&bin, 1_796_300_000);
    write(&lc.join(".git/HEAD"), "ref: refs/heads/master\n");
    write(&lc.join(".git/refs/heads/master"), &format!("{C1}\n"));
    touch(&lc.join(".git/refs/heads/master"), 1_796_290_000);
    write(
        &lc.join(".git/FETCH_HEAD"),
        &format!("{C1}\t\tbranch 'master'\n"),
    );
    touch(&lc.join(".git/FETCH_HEAD"), 1_796_289_000);
    // A checkout whose branch is only in packed-refs.
    let src = d.join("src/engine");
    let bin2 = src.join("bin/server");
    write(&bin2, "x");
    write(&src.join(".git/HEAD"), "ref: refs/heads/main\n");
    write(
        &src.join(".git/packed-refs"),
        &format!("# pack-refs with: peeled fully-peeled sorted\n{C2} refs/heads/main\n"),
    );
    // A checkout whose .git is a link, and one whose ref is a link: not followed.
    let linked = d.join("linked");
    write(&linked.join("bin/server"), "x");
    symlink(lc.join(".git"), linked.join(".git")).unwrap();
    let reflink = d.join("reflink");
    write(&reflink.join("bin/server"), "x");
    write(&reflink.join(".git/HEAD"), "ref: refs/heads/master\n");
    std::fs::create_dir_all(reflink.join(".git/refs/heads")).unwrap();
    symlink(
        lc.join(".git/refs/heads/master"),
        reflink.join(".git/refs/heads/master"),
    )
    .unwrap();
    // A model store: one manifest, one link to it (not followed), one FIFO-free junk file.
    let store = d.join("models");
    let manifest = format!(
        r#"{{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:{}","size":562}},"layers":[{{"mediaType":"application/vnd.ollama.image.model","digest":"sha256:{DIGEST}","size":42520413916}},{{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:{}","size":1426}}]}}"#,
        "0".repeat(64),
        "1".repeat(64)
    );
    let lib = store.join("manifests/registry.ollama.ai/library");
    write(&lib.join("llama3.3/70b"), &manifest);
    write(&lib.join("junk/latest"), "not json at all");
    std::fs::create_dir_all(lib.join("alias")).unwrap();
    symlink(lib.join("llama3.3/70b"), lib.join("alias/latest")).unwrap();
    let path = |p: &Path| p.to_str().unwrap().to_string();
    let inputs = probe_collect::script::Round2Inputs {
        self_installed: vec![
            ("bin".into(), path(&bin)),
            ("bin".into(), path(&bin2)),
            ("bin".into(), path(&linked.join("bin/server"))),
            ("bin".into(), path(&reflink.join("bin/server"))),
            ("bin".into(), path(&d.join("absent"))),
            ("models".into(), path(&store)),
        ],
        ..Default::default()
    };
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        let s = &snap.self_installed;
        let name = shell.name;
        let bins: Vec<(&str, Option<i64>, Option<&str>)> = s
            .binaries
            .iter()
            .map(|b| (b.path.as_str(), b.mtime, b.checkout.as_deref()))
            .collect();
        let (lcs, srcs) = (path(&lc), path(&src));
        assert_eq!(
            bins,
            vec![
                (path(&bin).as_str(), Some(1_796_300_000), Some(lcs.as_str())),
                (path(&bin2).as_str(), bins[1].1, Some(srcs.as_str())),
                (path(&linked.join("bin/server")).as_str(), bins[2].1, None),
                (
                    path(&reflink.join("bin/server")).as_str(),
                    bins[3].1,
                    Some(path(&reflink).as_str())
                ),
            ],
            "{name}"
        );
        let c = &s.checkouts[0];
        assert_eq!(c.dir, lcs, "{name}");
        assert_eq!(c.branch.as_deref(), Some("refs/heads/master"), "{name}");
        assert_eq!(c.commit.as_deref(), Some(C1), "{name}");
        assert_eq!(c.ref_mtime, Some(1_796_290_000), "{name}");
        assert_eq!(c.fetched_at, Some(1_796_289_000), "{name}");
        assert_eq!(c.moved_at, None, "{name}");
        assert_eq!(s.checkouts[1].commit.as_deref(), Some(C2), "{name}");
        assert_eq!(s.checkouts[1].ref_mtime, None, "{name}");
        // The ref that is a link is not read: the branch is known, its commit is not.
        assert_eq!(s.checkouts.len(), 3, "{name}: {:#?}", s.checkouts);
        assert_eq!(s.checkouts[2].commit, None, "{name}");
        let names: Vec<(&str, &str)> = s
            .model_names
            .iter()
            .map(|m| (m.name.as_str(), m.blob.as_str()))
            .collect();
        assert_eq!(
            names,
            vec![("llama3.3:70b", format!("sha256-{DIGEST}").as_str())],
            "{name}"
        );
    }
}

#[test]
fn an_editable_install_names_its_checkout() {
    let dir = tempfile::tempdir().unwrap();
    let d = std::fs::canonicalize(dir.path()).unwrap();
    let src = d.join("src/vllm");
    write(&src.join(".git/HEAD"), "ref: refs/heads/main\n");
    write(&src.join(".git/refs/heads/main"), &format!("{C2}\n"));
    touch(&src.join(".git/refs/heads/main"), 1_796_200_000);
    write(&src.join(".git/ORIG_HEAD"), &format!("{C1}\n"));
    touch(&src.join(".git/ORIG_HEAD"), 1_796_200_000);
    let venv = d.join("venv");
    write(&venv.join("pyvenv.cfg"), "version = 3.12.3\n");
    let di = venv.join("lib/python3.12/site-packages/vllm-0.11.1.dev123+g3f4ae8a.dist-info");
    write(
        &di.join("METADATA"),
        "Metadata-Version: 2.4\nName: vllm\nVersion: 0.11.1.dev123+g3f4ae8a\n",
    );
    write(
        &di.join("direct_url.json"),
        &format!(
            "{{\"dir_info\": {{\"editable\": true}}, \"url\": \"file://{}\"}}",
            src.display()
        ),
    );
    let inputs = probe_collect::script::Round2Inputs {
        python_prefixes: vec![venv.to_str().unwrap().to_string()],
        ..Default::default()
    };
    for shell in shells() {
        let snap = run_round2(&shell, &inputs);
        let p = snap.python_envs[0]
            .packages
            .iter()
            .find(|p| p.name == "vllm")
            .expect("vllm");
        assert!(
            p.direct_url
                .as_deref()
                .is_some_and(|u| u.ends_with("(editable)")),
            "{}: {p:?}",
            shell.name
        );
        let c = &snap.self_installed.checkouts;
        assert_eq!(c.len(), 1, "{}: {c:#?}", shell.name);
        assert_eq!(c[0].dir, src.to_str().unwrap(), "{}", shell.name);
        assert_eq!(c[0].commit.as_deref(), Some(C2), "{}", shell.name);
        assert_eq!(c[0].moved_at, Some(1_796_200_000), "{}", shell.name);
        assert_eq!(c[0].moved_from.as_deref(), Some(C1), "{}", shell.name);
    }
}
