//! End-to-end: a sharded audit of the fixture hosts (real sshd in namespaces) by three `probe`
//! runners into one real PostgreSQL store, the fleet report read back from it, and the history
//! moved between PostgreSQL and SQLite with `snapshots import/export`.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Output;

use probe_model::AuditRecord;
use probe_testkit::fixture::SharedFleet;
use probe_testkit::postgres::Postgres;

use crate::util::{self, text};

/// The fixture hosts that collect in well under a second.
const FAST: &[&str] = &["sglang-hybrid", "vllm-systemd", "docker-vllm", "bare"];
const SHARDS: u32 = 3;

/// probe with the fleet's config, the PostgreSQL client environment and the store `store`.
fn prober(fleet: &SharedFleet, pg: &Postgres, home: &Path, store: &str) -> util::Probe {
    pg.client_env().into_iter().fold(
        util::probe_on(home, &fleet.ssh_config(), store),
        |probe, (key, value)| probe.env(&key, value),
    )
}

fn probe(fleet: &SharedFleet, pg: &Postgres, home: &Path, store: &str, args: &[&str]) -> Output {
    prober(fleet, pg, home, store).run(args)
}

#[test]
fn sharded_audit_into_one_postgres_store_and_the_fleet_report() {
    probe_testkit::postgres::require_postgres().unwrap_or_else(|e| panic!("{e}"));
    let pg = Postgres::start();
    let url = pg.create_database("fleet");
    let fleet = util::fleet(FAST);
    let home = tempfile::tempdir().unwrap();
    // Two inventory names per fixture host (8 hosts), so every shard has work.
    let mut inventory = String::from("[groups.prod]\nhosts = [");
    let names: Vec<String> = fleet
        .hosts
        .iter()
        .flat_map(|host| [format!("{}-a", host.name), format!("{}-b", host.name)])
        .collect();
    inventory.push_str(
        &names
            .iter()
            .map(|name| format!("\"{name}\""))
            .collect::<Vec<_>>()
            .join(", "),
    );
    inventory.push_str("]\n\n");
    for host in &fleet.hosts {
        for suffix in ["a", "b"] {
            inventory.push_str(&format!(
                "[hosts.{}-{suffix}]\naddress = \"{}\"\n\n",
                host.name, host.alias
            ));
        }
    }
    let inventory_path = home.path().join("fleet.toml");
    std::fs::write(&inventory_path, inventory).unwrap();
    let inventory_arg = inventory_path.to_str().unwrap();

    // Three runners at once, one shard each, one store.
    let mut runners = Vec::new();
    let busy = util::busy();
    for index in 0..SHARDS {
        let prometheus = home.path().join(format!("probe-{index}.prom"));
        let shard = format!("{index}/{SHARDS}");
        let prometheus_arg = prometheus.to_str().unwrap().to_string();
        let args = [
            "audit",
            "--inventory",
            inventory_arg,
            "--jsonl",
            "--shard",
            &shard,
            "--prometheus",
            &prometheus_arg,
            "--fail-on",
            "error",
        ]
        .map(String::from);
        let child =
            prober(&fleet, &pg, home.path(), &url).spawn(&args.each_ref().map(|a| a.as_str()));
        runners.push((index, prometheus, args, child));
    }
    let mut audited: Vec<String> = Vec::new();
    let mut all_records: Vec<AuditRecord> = Vec::new();
    for (index, prometheus, args, child) in runners {
        let out = child.wait_with_output().unwrap();
        util::assert_output_schema(&args.each_ref().map(|a| a.as_str()), &out);
        let stdout = text(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "shard {index}: {stdout}{}",
            text(&out.stderr)
        );
        let lines: Vec<&str> = stdout.lines().collect();
        let records: Vec<AuditRecord> = lines[..lines.len() - 1]
            .iter()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        for record in &records {
            // Two names of one machine share its history, so a twin may find the other's
            // snapshot as its previous one; minutes apart nothing drifted, whatever the servers'
            // lifetime averages did meanwhile.
            assert_eq!(record.status, probe_model::AuditStatus::Ok, "{record:?}");
            audited.push(record.host.clone());
        }
        all_records.extend(records.iter().cloned());
        let metrics = std::fs::read_to_string(&prometheus).unwrap();
        assert!(
            metrics.contains(&format!("shard=\"{index}/{SHARDS}\"")),
            "{metrics}"
        );
        for record in &records {
            assert!(metrics.contains(&format!("probe_host_up{{host=\"{}\"}} 1", record.host)));
        }
    }
    drop(busy);
    // What that design implies: a previous snapshot, where one was found, is the twin's.
    for record in &all_records {
        let Some(previous) = &record.previous_snapshot_id else {
            continue;
        };
        let twin = match record.host.strip_suffix("-a") {
            Some(base) => format!("{base}-b"),
            None => format!("{}-a", record.host.trim_end_matches("-b")),
        };
        let twin_snapshot = all_records
            .iter()
            .find(|r| r.host == twin)
            .and_then(|r| r.snapshot_id.as_ref());
        assert_eq!(Some(previous), twin_snapshot, "{record:?}");
    }
    // Every host audited by exactly one shard.
    let mut sorted = audited.clone();
    sorted.sort();
    let mut expected = names.clone();
    expected.sort();
    assert_eq!(sorted, expected);

    // The fleet report lists every host once, with the shard that audited it.
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["audit", "report", "--format", "json"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let hosts = report["hosts"].as_array().unwrap();
    let listed: Vec<&str> = hosts.iter().map(|h| h["host"].as_str().unwrap()).collect();
    let unique: BTreeSet<&str> = listed.iter().copied().collect();
    assert_eq!(listed.len(), names.len(), "{listed:?}");
    assert_eq!(unique.len(), names.len(), "{listed:?}");
    for host in hosts {
        assert_eq!(host["status"], "ok", "{host}");
        assert!(host["snapshot_age_s"].as_i64().unwrap() < 600, "{host}");
        assert!(host["shard"].as_str().unwrap().ends_with("/3"), "{host}");
    }
    assert_eq!(report["shards"].as_array().unwrap().len(), SHARDS as usize);
    // The prod group: 8 hosts, the outliers named by probe-diff.
    let prod = report["outliers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["group"] == "prod")
        .expect("prod group in outliers");
    assert_eq!(prod["hosts"], 8);
    assert!(!prod["outliers"].as_array().unwrap().is_empty(), "{prod}");

    // With the inventory, a host no shard audited shows as never audited.
    let mut with_new = std::fs::read_to_string(&inventory_path).unwrap();
    with_new.push_str("[hosts.newcomer]\naddress = \"fx-bare\"\n");
    std::fs::write(&inventory_path, with_new).unwrap();
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["audit", "report", "--inventory", inventory_arg],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        stdout.contains("newcomer") && stdout.contains("never audited"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Hosts that differ from their group"),
        "{stdout}"
    );

    // PostgreSQL -> SQLite -> a fresh PostgreSQL database: the same snapshots.
    let sqlite = home.path().join("copy.db");
    let sqlite_arg = sqlite.to_str().unwrap();
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &url,
        &["snapshots", "export", "--to-store", sqlite_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("copied 8 of 8"),
        "{}",
        text(&out.stderr)
    );
    let second = pg.create_database("fleet2");
    let out = probe(
        &fleet,
        &pg,
        home.path(),
        &second,
        &["snapshots", "import", "--from-store", sqlite_arg],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ids = |store: &str| {
        let out = probe(
            &fleet,
            &pg,
            home.path(),
            store,
            &["snapshots", "list", "--format", "json"],
        );
        let metas: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        metas
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_string())
            .collect::<BTreeSet<_>>()
    };
    assert_eq!(ids(&url).len(), 8);
    assert_eq!(ids(&url), ids(sqlite_arg));
    assert_eq!(ids(&url), ids(&second));

    // A wrong password: one line, no password printed.
    let wrong = url.replacen("probe@", "probe:hunter2@", 1);
    let out = probe(&fleet, &pg, home.path(), &wrong, &["snapshots", "list"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(!stderr.contains("hunter2"), "{stderr}");
    assert!(stderr.contains("probe:***@"), "{stderr}");
}

// The Kubernetes examples (`examples/kubernetes/`): how a sharded audit into PostgreSQL is
// deployed. Each document is checked against the official schema of its kind, strictly, and the
// probe arguments of the Job and the CronJob against probe's own command line, so the examples
// cannot rot. No cluster, no fixture: these run in milliseconds.

fn examples_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/kubernetes")
}

/// YAML (as yaml-rust2 reads it, the reader probe's inventories use) to JSON.
fn yaml_to_json(y: &yaml_rust2::Yaml) -> serde_json::Value {
    use serde_json::Value;
    use yaml_rust2::Yaml;
    match y {
        Yaml::Real(r) => r
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map_or_else(|| Value::String(r.clone()), Value::Number),
        Yaml::Integer(i) => Value::from(*i),
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Array(a) => Value::Array(a.iter().map(yaml_to_json).collect()),
        Yaml::Hash(h) => Value::Object(
            h.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Yaml::String(s) => s.clone(),
                        other => panic!("a mapping key that is not a string: {other:?}"),
                    };
                    (key, yaml_to_json(v))
                })
                .collect(),
        ),
        Yaml::Null => Value::Null,
        other => panic!("YAML the examples must not use: {other:?}"),
    }
}

/// Every document of every `examples/kubernetes/*.yaml`: (file name, document).
fn example_documents() -> Vec<(String, serde_json::Value)> {
    let mut files: Vec<_> = std::fs::read_dir(examples_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml" || x == "yml"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).unwrap();
        let docs =
            yaml_rust2::YamlLoader::load_from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        for doc in &docs {
            out.push((name.clone(), yaml_to_json(doc)));
        }
    }
    out
}

/// Validators of the vendored Kubernetes v1.30 strict schemas (tests/data/kubernetes/README.md),
/// by schema file name (`job-batch-v1`).
struct KubeSchemas {
    validators: std::collections::BTreeMap<String, jsonschema::Validator>,
}

impl KubeSchemas {
    fn load() -> KubeSchemas {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/kubernetes/v1.30.0-local-strict");
        let read = |name: &str| -> serde_json::Value {
            serde_json::from_str(&std::fs::read_to_string(dir.join(name)).unwrap()).unwrap()
        };
        let definitions = read("_definitions.json");
        let registry = jsonschema::Registry::new()
            .add("https://kubernetes.io/api/_definitions.json", definitions)
            .unwrap()
            .prepare()
            .unwrap();
        let mut validators = std::collections::BTreeMap::new();
        for kind in [
            "job-batch-v1",
            "cronjob-batch-v1",
            "secret-v1",
            "configmap-v1",
            "namespace-v1",
        ] {
            let schema = read(&format!("{kind}.json"));
            let validator = jsonschema::options()
                .with_registry(&registry)
                .build(&schema)
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            validators.insert(kind.to_string(), validator);
        }
        KubeSchemas { validators }
    }

    /// The schema file a document's apiVersion and kind name, as kubeconform spells it:
    /// `batch/v1` Job is `job-batch-v1`, `v1` Secret is `secret-v1`.
    fn schema_name(doc: &serde_json::Value) -> String {
        let kind = doc["kind"].as_str().expect("kind").to_ascii_lowercase();
        let api = doc["apiVersion"].as_str().expect("apiVersion");
        let api = match api.split_once('/') {
            Some((group, version)) => {
                format!("{}-{version}", group.split('.').next().unwrap_or(group))
            }
            None => api.to_string(),
        };
        format!("{kind}-{api}")
    }

    /// The schema's complaints about `doc` (empty: valid).
    fn errors(&self, doc: &serde_json::Value) -> Vec<String> {
        let name = Self::schema_name(doc);
        let Some(validator) = self.validators.get(&name) else {
            return vec![format!("no schema vendored for {name}")];
        };
        validator
            .iter_errors(doc)
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect()
    }
}

/// The Job specs of the examples: the Job's `spec`, the CronJob's `jobTemplate.spec`.
fn job_specs(docs: &[(String, serde_json::Value)]) -> Vec<(String, &serde_json::Value)> {
    docs.iter()
        .filter_map(|(file, doc)| match doc["kind"].as_str() {
            Some("Job") => Some((format!("{file} Job"), &doc["spec"])),
            Some("CronJob") => Some((
                format!("{file} CronJob"),
                &doc["spec"]["jobTemplate"]["spec"],
            )),
            _ => None,
        })
        .collect()
}

#[test]
fn kubernetes_examples_match_the_kubernetes_schemas_strictly() {
    let schemas = KubeSchemas::load();
    let docs = example_documents();
    let kinds: BTreeSet<&str> = docs
        .iter()
        .filter_map(|(_, d)| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        BTreeSet::from(["ConfigMap", "CronJob", "Job", "Namespace", "Secret"]),
        "the kinds the examples use (a new kind needs its schema vendored)"
    );
    for (file, doc) in &docs {
        let errors = schemas.errors(doc);
        assert!(
            errors.is_empty(),
            "{file}: {} {}: {errors:#?}",
            doc["kind"],
            doc["metadata"]["name"]
        );
    }
}

/// The check is strict: a field Kubernetes does not know, anywhere, fails it.
#[test]
fn kubernetes_schemas_refuse_a_planted_unknown_field() {
    let schemas = KubeSchemas::load();
    let docs = example_documents();
    let (_, job) = docs
        .iter()
        .find(|(_, d)| d["kind"] == "Job")
        .expect("a Job example");
    assert!(schemas.errors(job).is_empty());
    let plant = |pointer: &str, field: &str| {
        let mut planted = job.clone();
        planted
            .pointer_mut(pointer)
            .unwrap_or_else(|| panic!("{pointer}"))
            .as_object_mut()
            .unwrap()
            .insert(field.into(), serde_json::json!(1));
        schemas.errors(&planted)
    };
    for (pointer, field) in [
        ("", "spek"),
        ("/spec", "completion"),
        ("/spec/template/spec/containers/0", "readOnlyRootFilesystem"),
        ("/spec/template/spec/volumes/1/secret", "mode"),
        ("/metadata", "label"),
    ] {
        let errors = plant(pointer, field);
        assert!(
            errors.iter().any(|e| e.contains(field)),
            "{pointer}/{field} passed: {errors:?}"
        );
    }
    // A wrong type fails too.
    let mut planted = job.clone();
    planted["spec"]["completions"] = serde_json::json!("4");
    assert!(!schemas.errors(&planted).is_empty());
}

/// The Job and the CronJob run the audit the docs describe: Indexed, one pod per shard, the
/// shard from JOB_COMPLETION_INDEX, the store from a Secret, the key from a Secret read-only
/// and 0400, non-root with a read-only root filesystem; the CronJob never overlaps and runs the
/// same Job spec.
#[test]
fn kubernetes_examples_run_the_sharded_audit_probe_parses() {
    use clap::Parser as _;
    use probe_cli::testing::{Cli, Command as ProbeCommand};
    let docs = example_documents();
    let specs = job_specs(&docs);
    assert_eq!(specs.len(), 2, "one Job and one CronJob");
    assert_eq!(specs[0].1, specs[1].1, "the CronJob runs the Job's spec");
    let cron = docs
        .iter()
        .find(|(_, d)| d["kind"] == "CronJob")
        .map(|(_, d)| d)
        .unwrap();
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
    assert!(cron["spec"]["schedule"].is_string());
    let secrets: BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| d["kind"] == "Secret")
        .filter_map(|(_, d)| d["metadata"]["name"].as_str())
        .collect();
    let config_maps: BTreeSet<&str> = docs
        .iter()
        .filter(|(_, d)| d["kind"] == "ConfigMap")
        .filter_map(|(_, d)| d["metadata"]["name"].as_str())
        .collect();
    for (what, spec) in specs {
        assert_eq!(spec["completionMode"], "Indexed", "{what}");
        let shards = spec["completions"].as_u64().expect("completions");
        assert_eq!(spec["parallelism"].as_u64(), Some(shards), "{what}");
        let pod = &spec["template"]["spec"];
        assert_eq!(pod["securityContext"]["runAsNonRoot"], true, "{what}");
        assert!(
            pod["securityContext"]["runAsUser"].as_u64() > Some(0),
            "{what}"
        );
        let containers = pod["containers"].as_array().unwrap();
        assert_eq!(containers.len(), 1, "{what}");
        let c = &containers[0];
        assert_eq!(
            c["securityContext"]["readOnlyRootFilesystem"], true,
            "{what}"
        );
        assert_eq!(
            c["securityContext"]["allowPrivilegeEscalation"], false,
            "{what}"
        );
        for r in ["cpu", "memory"] {
            assert!(c["resources"]["requests"][r].is_string(), "{what}: {r}");
        }
        assert!(c["resources"]["limits"]["memory"].is_string(), "{what}");

        // The arguments are probe's: they parse with its clap definitions.
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().expect("args are strings"))
            .collect();
        let cli = Cli::try_parse_from(std::iter::once("probe").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{what}: probe {}: {e}", args.join(" ")));
        let ProbeCommand::Audit(audit) = cli.command else {
            panic!("{what}: not `probe audit`")
        };
        assert!(audit.command.is_none(), "{what}");
        assert_eq!(
            audit.shard_index_env.as_deref(),
            Some("JOB_COMPLETION_INDEX"),
            "{what}"
        );
        assert_eq!(
            audit.shards.map(u64::from),
            Some(shards),
            "{what}: --shards"
        );
        assert!(audit.jobs.is_some(), "{what}: -j sized in the docs");
        assert!(!audit.no_store, "{what}");

        // Every path probe is given is under a read-only mount.
        let mounts: Vec<(&str, &str, bool)> = c["volumeMounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["name"].as_str().unwrap(),
                    m["mountPath"].as_str().unwrap(),
                    m["readOnly"] == true,
                )
            })
            .collect();
        let mounted_ro = |path: &Path| mounts.iter().any(|(_, at, ro)| *ro && path.starts_with(at));
        let inventory = audit.inventory.as_deref().expect("--inventory");
        assert!(mounted_ro(inventory), "{what}: {}", inventory.display());
        let ssh_config = cli.global.ssh_config.as_deref().expect("-F");
        assert!(mounted_ro(ssh_config), "{what}: {}", ssh_config.display());

        // The store: PROBE_STORE (and PGPASSWORD) from the store Secret, a postgres URL there.
        let env = c["env"].as_array().unwrap();
        let from_secret = |var: &str| {
            env.iter()
                .find(|e| e["name"] == var)
                .and_then(|e| e["valueFrom"]["secretKeyRef"]["name"].as_str())
        };
        let store_secret = from_secret("PROBE_STORE").expect("PROBE_STORE from a Secret");
        assert!(secrets.contains(store_secret), "{what}: {store_secret}");
        assert_eq!(from_secret("PGPASSWORD"), Some(store_secret), "{what}");
        let url = docs
            .iter()
            .find(|(_, d)| d["kind"] == "Secret" && d["metadata"]["name"] == store_secret)
            .map(|(_, d)| &d["stringData"]["PROBE_STORE"])
            .and_then(|v| v.as_str())
            .unwrap();
        assert!(url.starts_with("postgres://"), "{url}");
        assert!(!url.contains(":change-me@"), "no password in the URL");

        // The key: a Secret volume, mounted read-only, 0400.
        let volumes = pod["volumes"].as_array().unwrap();
        let key_volume = volumes
            .iter()
            .find(|v| v["secret"].is_object())
            .expect("a Secret volume");
        assert!(
            secrets.contains(key_volume["secret"]["secretName"].as_str().unwrap()),
            "{what}"
        );
        assert_eq!(key_volume["secret"]["defaultMode"], 0o400, "{what}");
        let name = key_volume["name"].as_str().unwrap();
        assert!(
            mounts.iter().any(|(n, _, ro)| *n == name && *ro),
            "{what}: the key is mounted read-only"
        );
        // Everything else is a ConfigMap of the examples or scratch space.
        for v in volumes {
            if let Some(cm) = v["configMap"]["name"].as_str() {
                assert!(config_maps.contains(cm), "{what}: {cm}");
            }
        }
    }
}
