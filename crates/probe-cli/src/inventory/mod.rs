//! Fleet inventories: probe's TOML, Ansible INI and YAML inventories, and the `Host` entries of
//! an ssh_config. Every parser reports errors as `file:line: cause`.

mod ini;
mod ssh_config;
mod toml_inventory;
mod yaml;
mod yaml_bounds;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One host to audit.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InventoryHost {
    /// Name shown in reports (the inventory's name for the host).
    pub name: String,
    /// What to connect to: an address or an ssh_config alias.
    pub address: String,
    pub user: Option<String>,
    pub port: Option<u16>,
    /// ProxyJump (`bastion`, `user@jump:22,other`).
    pub jump: Option<String>,
    pub groups: Vec<String>,
    pub tags: Vec<String>,
}

impl InventoryHost {
    /// The target string for the transport (`user@address:port`), when no jump host is needed.
    pub fn target(&self) -> String {
        let mut target = String::new();
        if let Some(user) = &self.user {
            target.push_str(user);
            target.push('@');
        }
        match self.port {
            Some(port) if self.address.contains(':') => {
                target.push_str(&format!("[{}]:{port}", self.address));
            }
            Some(port) => target.push_str(&format!("{}:{port}", self.address)),
            None => target.push_str(&self.address),
        }
        target
    }
}

/// A parsed inventory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Inventory {
    pub path: PathBuf,
    pub hosts: Vec<InventoryHost>,
}

/// A malformed inventory: file, line (when known) and cause.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}: {message}", file.display(), line.map(|l| format!(":{l}")).unwrap_or_default())]
pub struct InventoryError {
    pub file: PathBuf,
    pub line: Option<usize>,
    pub message: String,
}

/// The inventory formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InventoryFormat {
    Toml,
    AnsibleIni,
    AnsibleYaml,
    SshConfig,
}

/// Reads and parses an inventory file, detecting its format.
pub fn load(path: &Path) -> Result<Inventory, InventoryError> {
    let text = probe_transport::local_file::read_bounded_text(
        path,
        probe_transport::local_file::CONFIG_CAP,
    )
    .map_err(|err| InventoryError {
        file: path.to_path_buf(),
        line: None,
        message: format!("cannot read inventory: {}", err.kind),
    })?;
    parse(&text, path)
}

/// Parses inventory text; `path` names it and picks the format.
pub fn parse(text: &str, path: &Path) -> Result<Inventory, InventoryError> {
    let hosts = match detect(text, path) {
        InventoryFormat::Toml => toml_inventory::parse(text, path)?,
        InventoryFormat::AnsibleIni => ini::parse(text, path)?,
        InventoryFormat::AnsibleYaml => yaml::parse(text, path)?,
        InventoryFormat::SshConfig => ssh_config::parse(text, path)?,
    };
    let hosts = merge_duplicates(hosts);
    if hosts.is_empty() {
        return Err(InventoryError {
            file: path.to_path_buf(),
            line: None,
            message: "no hosts in inventory".into(),
        });
    }
    Ok(Inventory {
        path: path.to_path_buf(),
        hosts,
    })
}

/// The format: by extension, else by the first meaningful line.
pub fn detect(text: &str, path: &Path) -> InventoryFormat {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("toml") => return InventoryFormat::Toml,
        Some("yml" | "yaml") => return InventoryFormat::AnsibleYaml,
        Some("ini") => return InventoryFormat::AnsibleIni,
        _ => {}
    }
    let file_name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    if file_name == "ssh_config" || file_name.ends_with(".ssh_config") {
        return InventoryFormat::SshConfig;
    }
    let first = text
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with('#') && !line.starts_with(';'))
        .unwrap_or("");
    let keyword = first
        .split(|c: char| c.is_whitespace() || c == '=')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    if first == "---" || (first.ends_with(':') && !first.contains(' ')) {
        return InventoryFormat::AnsibleYaml;
    }
    if matches!(
        keyword.as_str(),
        "host" | "match" | "include" | "hostname" | "user" | "port" | "identityfile"
    ) {
        return InventoryFormat::SshConfig;
    }
    if first.starts_with("[hosts") || first.starts_with("[groups") || first.starts_with("[defaults")
    {
        return InventoryFormat::Toml;
    }
    InventoryFormat::AnsibleIni
}

/// The same host listed several times (in several groups) becomes one entry.
fn merge_duplicates(hosts: Vec<InventoryHost>) -> Vec<InventoryHost> {
    let mut order: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, InventoryHost> = BTreeMap::new();
    for host in hosts {
        match by_name.get_mut(&host.name) {
            Some(existing) => {
                for group in host.groups {
                    if !existing.groups.contains(&group) {
                        existing.groups.push(group);
                    }
                }
                for tag in host.tags {
                    if !existing.tags.contains(&tag) {
                        existing.tags.push(tag);
                    }
                }
                existing.user = existing.user.take().or(host.user);
                existing.port = existing.port.or(host.port);
                existing.jump = existing.jump.take().or(host.jump);
            }
            None => {
                order.push(host.name.clone());
                by_name.insert(host.name.clone(), host);
            }
        }
    }
    order
        .into_iter()
        .filter_map(|name| by_name.remove(&name))
        .collect()
}

/// Keeps hosts in any of `groups` (when given) and with all of `tags` (when given).
pub fn select(hosts: &[InventoryHost], groups: &[String], tags: &[String]) -> Vec<InventoryHost> {
    hosts
        .iter()
        .filter(|host| groups.is_empty() || host.groups.iter().any(|g| groups.contains(g)))
        .filter(|host| tags.iter().all(|t| host.tags.contains(t)))
        .cloned()
        .collect()
}

/// 1-based line of the first occurrence of `needle` in `text` (for errors found after parsing).
pub(crate) fn line_of(text: &str, needle: &str) -> Option<usize> {
    text.lines()
        .position(|line| line.contains(needle))
        .map(|index| index + 1)
}

pub(crate) fn error(
    path: &Path,
    line: Option<usize>,
    message: impl Into<String>,
) -> InventoryError {
    InventoryError {
        file: path.to_path_buf(),
        line,
        message: message.into(),
    }
}

pub(crate) fn parse_port(value: &str) -> Option<u16> {
    value.trim().parse::<u16>().ok().filter(|port| *port > 0)
}

/// A host name or alias is one token without whitespace or control characters.
pub(crate) fn valid_host_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('-')
        && name
            .chars()
            .all(|c| !c.is_whitespace() && !c.is_control() && c != '\'' && c != '"')
}

#[cfg(test)]
mod tests;
