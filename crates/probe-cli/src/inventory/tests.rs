use super::*;

fn parse_as(text: &str, name: &str) -> Result<Inventory, InventoryError> {
    parse(text, Path::new(name))
}

fn host<'a>(inventory: &'a Inventory, name: &str) -> &'a InventoryHost {
    inventory
        .hosts
        .iter()
        .find(|h| h.name == name)
        .unwrap_or_else(|| panic!("no host {name} in {:?}", inventory.hosts))
}

#[test]
fn example_toml_inventory() {
    let text = include_str!("../../../../configs/inventory.example.toml");
    let inventory = parse_as(text, "inventory.example.toml").unwrap();
    let names: Vec<_> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gpu7", "gpu8", "lab-a100", "edge-1"]);
    let gpu7 = host(&inventory, "gpu7");
    assert_eq!(gpu7.address, "10.20.0.7");
    assert_eq!(gpu7.user.as_deref(), Some("root"));
    assert_eq!(gpu7.groups, ["prod"]);
    assert_eq!(gpu7.tags, ["h100", "sglang", "prod"]);
    let gpu8 = host(&inventory, "gpu8");
    assert_eq!(gpu8.user.as_deref(), Some("ubuntu"));
    assert_eq!(gpu8.target(), "ubuntu@10.20.0.8:2222");
    let lab = host(&inventory, "lab-a100");
    assert_eq!(lab.address, "lab-a100");
    assert_eq!(lab.user.as_deref(), Some("lab"));
    assert_eq!(lab.jump, None);
    let edge = host(&inventory, "edge-1");
    assert_eq!(
        edge.jump.as_deref(),
        Some("ops@bastion.example.internal:22")
    );
    assert_eq!(select(&inventory.hosts, &["lab".into()], &[]).len(), 2);
    assert_eq!(
        select(&inventory.hosts, &[], &["h100".into(), "prod".into()]).len(),
        2
    );
}

#[test]
fn toml_errors_name_file_and_line() {
    let err = parse_as("[hosts.a]\naddress = \"x\"\nprot = 22\n", "inv.toml").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
    assert!(err.to_string().starts_with("inv.toml:3: "), "{err}");
    let err = parse_as(
        "[hosts.a]\n\n[groups.g]\nhosts = [\"a\",\n  \"missing\"]\n",
        "inv.toml",
    )
    .unwrap_err();
    assert_eq!(err.line, Some(5), "{err}");
    assert!(err.message.contains("missing"));
    let err = parse_as("[hosts.a]\nport = 99999\n", "inv.toml").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_as("[hosts.a\n", "inv.toml").unwrap_err();
    assert_eq!(err.line, Some(1), "{err}");
}

#[test]
fn ansible_ini() {
    let text = "\
# fleet
standalone ansible_host=10.0.0.1

[gpus]
gpu[01:03].lab ansible_user=root
gpu-x ansible_host=10.0.0.9 ansible_port=2222 ansible_ssh_common_args='-o ProxyJump=ops@bastion'

[gpus:vars]
ansible_user=ubuntu
probe_tags=h100,prod

[dc1:children]
gpus

[dc1:vars]
ansible_port=22
";
    let inventory = parse_as(text, "hosts").unwrap();
    let names: Vec<_> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(
        names,
        ["standalone", "gpu01.lab", "gpu02.lab", "gpu03.lab", "gpu-x"]
    );
    assert_eq!(host(&inventory, "standalone").address, "10.0.0.1");
    let gpu01 = host(&inventory, "gpu01.lab");
    assert_eq!(gpu01.user.as_deref(), Some("root"));
    assert_eq!(gpu01.port, Some(22));
    assert_eq!(gpu01.groups, ["gpus", "dc1"]);
    assert_eq!(gpu01.tags, ["h100", "prod"]);
    let gpu_x = host(&inventory, "gpu-x");
    assert_eq!(gpu_x.port, Some(2222));
    assert_eq!(gpu_x.user.as_deref(), Some("ubuntu"));
    assert_eq!(gpu_x.jump.as_deref(), Some("ops@bastion"));
    assert_eq!(gpu_x.target(), "ubuntu@10.0.0.9:2222");
}

#[test]
fn ansible_ini_errors() {
    let err = parse_as("[gpus\nhost1\n", "hosts.ini").unwrap_err();
    assert_eq!(
        (err.line, err.file.clone()),
        (Some(1), PathBuf::from("hosts.ini"))
    );
    let err = parse_as("[gpus]\nh1\nh2 ansible_port=abc\n", "hosts.ini").unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
    let err = parse_as("[gpus]\nh1 junk\n", "hosts.ini").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_as("[a:vars]\nnot a var\n", "hosts.ini").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_as("[a:children]\nnope\n", "hosts.ini").unwrap_err();
    assert_eq!(err.line, Some(1), "{err}");
    let err = parse_as("[a]\nh[05:01]\n", "hosts.ini").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
}

#[test]
fn ranges() {
    assert_eq!(ini::expand_range("n[a:c]").unwrap(), ["na", "nb", "nc"]);
    assert_eq!(
        ini::expand_range("n[1:5:2]x").unwrap(),
        ["n1x", "n3x", "n5x"]
    );
    assert_eq!(
        ini::expand_range("r[1:2]-[a:b]").unwrap(),
        ["r1-a", "r1-b", "r2-a", "r2-b"]
    );
    assert!(ini::expand_range("n[1:").is_err());
}

#[test]
fn ansible_yaml() {
    let text = "\
all:
  vars:
    ansible_user: ubuntu
  hosts:
    bastion:
      ansible_host: 10.0.0.2
  children:
    gpus:
      vars:
        probe_tags: h100
      hosts:
        gpu7:
          ansible_host: 10.0.0.7
          ansible_port: 2222
        gpu8:
    lab:
      hosts:
        gpu8:
          ansible_user: root
";
    let inventory = parse_as(text, "inventory.yml").unwrap();
    let names: Vec<_> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["bastion", "gpu7", "gpu8"]);
    let gpu7 = host(&inventory, "gpu7");
    assert_eq!(gpu7.target(), "ubuntu@10.0.0.7:2222");
    assert_eq!(gpu7.tags, ["h100"]);
    let gpu8 = host(&inventory, "gpu8");
    assert_eq!(gpu8.groups, ["gpus", "lab"]);
    assert_eq!(gpu8.user.as_deref(), Some("ubuntu"));
}

#[test]
fn ansible_yaml_errors() {
    let err = parse_as("all:\n  hosts:\n    a: [1\n", "inv.yaml").unwrap_err();
    assert!(err.line.is_some(), "{err}");
    assert!(err.to_string().starts_with("inv.yaml:"), "{err}");
    let err = parse_as("all:\n  hostz:\n    a:\n", "inv.yaml").unwrap_err();
    assert_eq!(err.line, Some(2), "{err}");
    let err = parse_as(
        "all:\n  hosts:\n    gpu1:\n      ansible_port: nope\n",
        "inv.yaml",
    )
    .unwrap_err();
    assert_eq!(err.line, Some(3), "{err}");
}

#[test]
fn ssh_config_hosts() {
    let text = "\
Host *
  User ops
Host gpu7 gpu8 !bad gpu-*
  HostName 10.0.0.7
Match host foo
  User x
host=lab-a
Host \"quoted\"
";
    let inventory = parse_as(text, "config").unwrap();
    let names: Vec<_> = inventory.hosts.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(names, ["gpu7", "gpu8", "lab-a", "quoted"]);
    assert_eq!(
        detect(text, Path::new("config")),
        InventoryFormat::SshConfig
    );
    let err = parse_as("Host a\nHost\n", "ssh_config").unwrap_err();
    assert_eq!(err.line, Some(2));
}

#[test]
fn empty_inventory_is_an_error() {
    let err = parse_as("# nothing\n", "hosts.ini").unwrap_err();
    assert!(err.message.contains("no hosts"));
}

#[test]
fn detection() {
    assert_eq!(detect("", Path::new("a.toml")), InventoryFormat::Toml);
    assert_eq!(
        detect("[hosts.x]\n", Path::new("inv")),
        InventoryFormat::Toml
    );
    assert_eq!(
        detect("all:\n  hosts:\n", Path::new("inv")),
        InventoryFormat::AnsibleYaml
    );
    assert_eq!(
        detect("[gpus]\nh1\n", Path::new("inv")),
        InventoryFormat::AnsibleIni
    );
    assert_eq!(
        detect("h1\nh2\n", Path::new("inv")),
        InventoryFormat::AnsibleIni
    );
}

#[test]
fn target_forms() {
    let host = InventoryHost {
        name: "x".into(),
        address: "::1".into(),
        port: Some(22),
        ..InventoryHost::default()
    };
    assert_eq!(host.target(), "[::1]:22");
}

/// A fleet-sized inventory in each format, with hosts in two groups and a parent group: every
/// host in file order, with its groups and variables. (Reading it was quadratic in the hosts
/// once; its time is `cargo bench -p probe-cli --bench sim`'s first line, not asserted here.)
#[test]
fn large_inventories_keep_order_groups_and_vars() {
    let n = 3_000;
    let mut toml = String::from("[defaults]\nuser = \"ops\"\n\n");
    for i in (0..n).rev() {
        toml.push_str(&format!(
            "[hosts.h{i}]\naddress = \"10.0.{}.{}\"\n",
            i / 250,
            i % 250
        ));
    }
    let members: Vec<String> = (0..n).step_by(2).map(|i| format!("\"h{i}\"")).collect();
    toml.push_str(&format!(
        "[groups.even]\nport = 2222\nhosts = [{}]\n",
        members.join(", ")
    ));
    let mut ini = String::from("[gpus]\n");
    for i in (0..n).rev() {
        ini.push_str(&format!("h{i} ansible_host=10.0.{}.{}\n", i / 250, i % 250));
    }
    ini.push_str("[even]\n");
    for i in (0..n).step_by(2) {
        ini.push_str(&format!("h{i}\n"));
    }
    ini.push_str("[even:vars]\nansible_port=2222\n[dc:children]\ngpus\neven\n");
    for (name, text, parent) in [("inv.toml", &toml, None), ("inv.ini", &ini, Some("dc"))] {
        let inventory = parse_as(text, name).unwrap();
        let names: Vec<String> = inventory.hosts.iter().map(|h| h.name.clone()).collect();
        let expected: Vec<String> = (0..n).rev().map(|i| format!("h{i}")).collect();
        assert_eq!(names, expected, "{name}: file order");
        for (i, host) in (0..n).rev().zip(&inventory.hosts) {
            assert_eq!(
                host.address,
                format!("10.0.{}.{}", i / 250, i % 250),
                "{name}"
            );
            let even = i % 2 == 0;
            assert_eq!(host.port, even.then_some(2222), "{name}: {}", host.name);
            assert_eq!(host.groups.contains(&"even".to_string()), even, "{name}");
            if let Some(parent) = parent {
                assert!(
                    host.groups.contains(&parent.to_string()),
                    "{name}: {:?}",
                    host.groups
                );
            }
        }
    }
}
