//! Shell lines that change the host rather than launch a server: package installs (pip, uv,
//! conda, apt, dnf), service starts and stops (systemctl), image pulls and compose ups (docker).
//! The timeline shows them next to the launches.

use super::shell::split_words;

/// (program, sub-commands that change the host). A `*` sub-command list matches any.
const CHANGERS: &[(&str, &[&str])] = &[
    ("pip", &["install", "uninstall", "download"]),
    ("pip3", &["install", "uninstall"]),
    (
        "conda",
        &["install", "update", "remove", "create", "upgrade"],
    ),
    ("mamba", &["install", "update", "remove", "create"]),
    ("micromamba", &["install", "update", "remove", "create"]),
    (
        "apt",
        &[
            "install",
            "upgrade",
            "full-upgrade",
            "dist-upgrade",
            "remove",
            "purge",
        ],
    ),
    (
        "apt-get",
        &["install", "upgrade", "dist-upgrade", "remove", "purge"],
    ),
    (
        "dnf",
        &["install", "upgrade", "update", "remove", "downgrade"],
    ),
    ("yum", &["install", "update", "remove", "downgrade"]),
    ("dpkg", &["-i", "--install", "-r", "--remove"]),
    (
        "systemctl",
        &[
            "start",
            "stop",
            "restart",
            "reload",
            "daemon-reload",
            "enable",
            "disable",
            "kill",
            "edit",
            "mask",
            "unmask",
        ],
    ),
    ("service", &["*"]),
    ("docker", &["pull", "rm", "stop", "restart", "kill"]),
    ("podman", &["pull", "rm", "stop", "restart", "kill"]),
    ("docker-compose", &["up", "down", "pull", "restart"]),
];

/// Wrappers skipped before the program (`sudo`, `env A=B`, `nohup`, `time`).
fn skip_wrappers(words: &[String]) -> &[String] {
    let mut rest = words;
    while let Some(first) = rest.first() {
        let base = first.rsplit('/').next().unwrap_or(first);
        let is_assignment = first.contains('=') && !first.starts_with('-');
        if matches!(base, "sudo" | "env" | "nohup" | "time" | "command" | "exec") || is_assignment {
            rest = rest.get(1..).unwrap_or_default();
            // `sudo -u user`, `sudo -E`
            while let Some(flag) = rest.first().filter(|w| w.starts_with('-')) {
                let takes_value = matches!(flag.as_str(), "-u" | "-g" | "-C");
                rest = rest
                    .get(if takes_value { 2 } else { 1 }..)
                    .unwrap_or_default();
            }
            continue;
        }
        break;
    }
    rest
}

/// The first non-option word after index 0, with the words after it.
fn subcommand(words: &[String]) -> Option<(&str, &[String])> {
    let position = words.iter().skip(1).position(|w| {
        !w.starts_with('-') || matches!(w.as_str(), "-i" | "--install" | "-r" | "--remove")
    })?;
    let index = position + 1;
    Some((
        words.get(index)?.as_str(),
        words.get(index + 1..).unwrap_or_default(),
    ))
}

/// One simple command (`&&`/`;`/`|` already split) as a host change, when it is one.
fn classify(command: &str) -> Option<String> {
    let words = split_words(command);
    let words = skip_wrappers(&words);
    let first = words.first()?;
    let mut program = first.rsplit('/').next().unwrap_or(first).to_string();
    let mut words: Vec<String> = words.to_vec();
    // `python -m pip install`, `uv pip install`, `uv add`, `docker compose up`.
    if program.starts_with("python") && words.get(1).map(String::as_str) == Some("-m") {
        program = words.get(2)?.clone();
        words = words.get(2..).unwrap_or_default().to_vec();
    } else if program == "uv" {
        match words.get(1).map(String::as_str) {
            Some("pip") => {
                program = String::from("pip");
                words = words.get(1..).unwrap_or_default().to_vec();
            }
            Some("add" | "remove" | "sync") => {}
            _ => return None,
        }
        if program == "uv" {
            return Some(summary(&words));
        }
    } else if let Some((compose, sub)) = compose_command(&words) {
        let (_, subs) = CHANGERS.iter().find(|(p, _)| *p == "docker-compose")?;
        let words: Vec<String> = std::iter::once(String::from("docker-compose"))
            .chain(compose.iter().skip(1).cloned())
            .collect();
        return subs.contains(&sub.as_str()).then(|| summary(&words));
    }
    let (_, subs) = CHANGERS.iter().find(|(p, _)| *p == program)?;
    let (sub, _) = subcommand(&words)?;
    (subs.contains(&"*") || subs.contains(&sub)).then(|| summary(&words))
}

/// A Compose invocation (`docker compose`, `podman compose`, `docker-compose`,
/// `podman-compose`): its words from `compose` on, and its sub-command, found after Compose's
/// valued global options (`docker compose -f x -p llm up -d` is `up`).
fn compose_command(words: &[String]) -> Option<(&[String], String)> {
    let base = |w: &String| w.rsplit('/').next().unwrap_or(w).to_string();
    let compose = match (
        words.first().map(base).as_deref(),
        words.get(1).map(String::as_str),
    ) {
        (Some("docker" | "podman"), Some("compose")) => words.get(1..)?,
        (Some("docker-compose" | "podman-compose"), _) => words,
        _ => return None,
    };
    let lookup = without_compose_globals(compose);
    let (sub, _) = subcommand(&lookup)?;
    Some((compose, sub.to_string()))
}

/// Compose's global options that take a value (`-f FILE`, `-p NAME`, `--project-directory
/// DIR`, ...), left out before the sub-command is looked for: `docker compose -p llm up -d`.
fn without_compose_globals(words: &[String]) -> Vec<String> {
    const VALUED: &[&str] = &[
        "-f",
        "--file",
        "-p",
        "--project-name",
        "--project-directory",
        "--env-file",
        "--profile",
        "--ansi",
        "--parallel",
    ];
    let mut out = Vec::with_capacity(words.len());
    let mut it = words.iter();
    if let Some(program) = it.next() {
        out.push(program.clone());
    }
    while let Some(w) = it.next() {
        if VALUED.contains(&w.as_str()) {
            it.next();
        } else if w.starts_with('-') {
            continue;
        } else {
            out.push(w.clone());
            out.extend(it.cloned());
            break;
        }
    }
    out
}

/// The words, cut to a readable length.
fn summary(words: &[String]) -> String {
    probe_model::text::clip(&words.join(" "), 160)
}

/// The simple commands of a line (`&&`, `||`, `|`, `;` and newlines split it).
fn simple_commands(line: &str) -> impl Iterator<Item = &str> {
    line.split(['\n', ';'])
        .flat_map(|part| part.split("&&"))
        .flat_map(|part| part.split("||"))
        .flat_map(|part| part.split('|'))
        .map(str::trim)
}

/// Whether a line runs `docker compose up` (`docker-compose`, `podman compose`, with global
/// options before `up`).
pub(crate) fn runs_compose_up(line: &str) -> bool {
    simple_commands(line).any(|part| {
        let words = split_words(part);
        compose_command(skip_wrappers(&words)).is_some_and(|(_, sub)| sub == "up")
    })
}

/// What a history line changed on the host (`pip install sglang==0.5.9`,
/// `systemctl restart vllm`), or `None` when it changed nothing the timeline tracks.
pub fn host_change(line: &str) -> Option<String> {
    let found: Vec<String> = simple_commands(line).filter_map(classify).collect();
    if found.is_empty() {
        None
    } else {
        Some(found.join("; "))
    }
}

/// What a history line installs of one Python distribution.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageInstall {
    /// The version the line pins it to (`name==V`, conda's `name=V`), when it does.
    pub pinned: Option<String>,
}

/// Whether a history line installs the Python distribution `name` (PEP 503-normalised): `pip`,
/// `pip3`, `python -m pip`, `uv pip`, `uv add`, `conda`/`mamba install` with `name` among its
/// requirements (`name`, `name==1.2`, `'name[extra]>=1'`), and the version it pins.
pub fn package_install(line: &str, name: &str) -> Option<PackageInstall> {
    simple_commands(line).find_map(|part| {
        let words = split_words(part);
        let words = skip_wrappers(&words);
        let first = words.first()?;
        let program = first.rsplit('/').next().unwrap_or(first);
        let python_m_pip =
            program.starts_with("python") && words.get(2).map(String::as_str) == Some("pip");
        let rest: &[String] = match (program, words.get(1).map(String::as_str)) {
            (_, Some("-m")) if python_m_pip => words.get(3..).unwrap_or_default(),
            ("uv", Some("pip")) => words.get(2..).unwrap_or_default(),
            ("uv", Some("add")) => words.get(1..).unwrap_or_default(),
            ("pip" | "pip3" | "conda" | "mamba" | "micromamba", _) => {
                words.get(1..).unwrap_or_default()
            }
            _ => return None,
        };
        let installs = rest
            .first()
            .is_some_and(|w| matches!(w.as_str(), "install" | "add" | "update" | "upgrade"));
        let word = rest
            .iter()
            .skip(1)
            .find(|w| installs && requirement_name(w) == name)?;
        Some(PackageInstall {
            pinned: pinned_version(word),
        })
    })
}

/// The version a requirement word pins (`name==1.2` -> `1.2`, conda's `name=1.2`).
fn pinned_version(word: &str) -> Option<String> {
    let w = word.trim_matches(['"', '\'']);
    // `>=`, `<=`, `~=`, `!=` bound a version; only `==` (and conda's lone `=`) pin one.
    let (name, v) = w.split_once("==").or_else(|| w.split_once('='))?;
    let bound = name.ends_with(['<', '>', '~', '!']);
    (!bound && !v.is_empty()).then(|| v.to_string())
}

/// The PEP 503 name a requirement word names (`Flash_Attn[x]==2.7` -> `flash-attn`).
fn requirement_name(word: &str) -> String {
    let w = word.trim_matches(['"', '\'']);
    let end = w
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(w.len());
    let base = w.get(..end).unwrap_or("");
    let mut out = String::new();
    let mut dash = false;
    for c in base.chars() {
        if matches!(c, '-' | '_' | '.') {
            dash = true;
        } else {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::host_change;

    /// (line, package, whether the line installs it, the version it pins)
    #[test]
    fn lines_that_install_a_package() {
        let cases = [
            (
                "pip install transformers==4.57.1",
                "transformers",
                true,
                Some("4.57.1"),
            ),
            (
                "sudo -u svc /opt/v/bin/pip install -U 'flash_attn[x]>=2.7'",
                "flash-attn",
                true,
                None,
            ),
            (
                "python3 -m pip install --upgrade vllm==0.11.0 torch",
                "torch",
                true,
                None,
            ),
            ("uv pip install -r req.txt sglang", "sglang", true, None),
            ("uv add xgrammar", "xgrammar", true, None),
            ("conda install -y numpy=2.2", "numpy", true, Some("2.2")),
            ("pip uninstall transformers", "transformers", false, None),
            (
                "pip install transformers-stream-generator",
                "transformers",
                false,
                None,
            ),
            (
                "python3 -m vllm.entrypoints.openai.api_server",
                "vllm",
                false,
                None,
            ),
            ("echo pip install torch", "torch", false, None),
            ("cd /x && pip install -e .", "x", false, None),
        ];
        for (line, name, want, pinned) in cases {
            let got = super::package_install(line, name);
            assert_eq!(got.is_some(), want, "{line}");
            assert_eq!(got.and_then(|g| g.pinned).as_deref(), pinned, "{line}");
        }
    }

    #[test]
    fn compose_ups() {
        for (line, want) in [
            ("docker compose up -d", true),
            (
                "cd /srv/llm && sudo docker compose -f a.yaml -p llm up -d vllm",
                true,
            ),
            ("docker-compose --project-directory /srv/llm up", true),
            ("podman compose up", true),
            ("docker compose -p up logs", false),
            ("docker compose pull", false),
            ("docker run up", false),
            ("echo docker compose up", false),
        ] {
            assert_eq!(super::runs_compose_up(line), want, "{line}");
        }
    }

    #[test]
    fn host_changing_lines() {
        let cases: &[(&str, Option<&str>)] = &[
            (
                "pip install -U sglang==0.5.9",
                Some("pip install -U sglang==0.5.9"),
            ),
            (
                "sudo systemctl restart vllm",
                Some("systemctl restart vllm"),
            ),
            (
                "systemctl daemon-reload && systemctl start sglang-qwen",
                Some("systemctl daemon-reload; systemctl start sglang-qwen"),
            ),
            (
                "uv pip install vllm==0.11.0",
                Some("pip install vllm==0.11.0"),
            ),
            (
                "/opt/venv/bin/python -m pip install torch==2.9.1",
                Some("pip install torch==2.9.1"),
            ),
            (
                "apt-get install -y nvidia-driver-570-server",
                Some("apt-get install -y nvidia-driver-570-server"),
            ),
            (
                "docker pull vllm/vllm-openai:v0.11.0",
                Some("docker pull vllm/vllm-openai:v0.11.0"),
            ),
            ("docker compose up -d", Some("docker-compose up -d")),
            (
                "docker compose -f /srv/llm/compose.yaml -p llm up -d vllm",
                Some("docker-compose -f /srv/llm/compose.yaml -p llm up -d vllm"),
            ),
            ("docker compose -p llm logs -f", None),
            ("dnf upgrade cuda-toolkit", Some("dnf upgrade cuda-toolkit")),
            (
                "conda install -c nvidia cuda",
                Some("conda install -c nvidia cuda"),
            ),
            ("systemctl status vllm", None),
            ("pip list", None),
            ("docker ps", None),
            ("ls -la", None),
            ("", None),
            ("vllm serve /m --tp 4", None),
        ];
        for (line, expected) in cases {
            assert_eq!(host_change(line).as_deref(), *expected, "{line}");
        }
    }
}
