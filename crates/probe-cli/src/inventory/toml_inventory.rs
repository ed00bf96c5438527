//! probe's own inventory format (see `configs/inventory.example.toml`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{InventoryError, InventoryHost, error, valid_host_name};

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct File {
    defaults: Settings,
    hosts: BTreeMap<Spanned<String>, HostEntry>,
    groups: BTreeMap<Spanned<String>, GroupEntry>,
}

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Settings {
    user: Option<String>,
    port: Option<u16>,
    jump: Option<String>,
    tags: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct HostEntry {
    address: Option<String>,
    user: Option<String>,
    port: Option<u16>,
    jump: Option<String>,
    tags: Vec<String>,
    groups: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct GroupEntry {
    hosts: Vec<Spanned<String>>,
    user: Option<String>,
    port: Option<u16>,
    jump: Option<String>,
    tags: Vec<String>,
}

fn line_at(text: &str, offset: usize) -> usize {
    text.get(..offset).unwrap_or("").matches('\n').count() + 1
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<InventoryHost>, InventoryError> {
    let file: File = toml::from_str(text).map_err(|err| {
        let line = err.span().map(|span| line_at(text, span.start));
        error(path, line, err.message().trim().to_string())
    })?;
    // Host-level settings win over the group's, which win over the defaults.
    let mut hosts: Vec<(usize, InventoryHost)> = Vec::new();
    for (name, entry) in &file.hosts {
        let host_name = name.get_ref();
        if !valid_host_name(host_name) {
            return Err(error(
                path,
                Some(line_at(text, name.span().start)),
                format!("invalid host name {host_name:?}"),
            ));
        }
        let mut tags = file.defaults.tags.clone();
        tags.extend(entry.tags.iter().cloned());
        hosts.push((
            name.span().start,
            InventoryHost {
                name: host_name.clone(),
                address: entry.address.clone().unwrap_or_else(|| host_name.clone()),
                user: entry.user.clone(),
                port: entry.port,
                jump: entry.jump.clone(),
                groups: entry.groups.clone(),
                tags,
            },
        ));
    }
    // The file's order of hosts rather than the map's: where each name is written.
    hosts.sort_by_key(|(at, _)| *at);
    let mut hosts: Vec<InventoryHost> = hosts.into_iter().map(|(_, host)| host).collect();
    let index: HashMap<String, usize> = hosts
        .iter()
        .enumerate()
        .map(|(i, host)| (host.name.clone(), i))
        .collect();
    for (group_name, group) in &file.groups {
        for member in &group.hosts {
            let Some(host) = index.get(member.get_ref()).and_then(|&i| hosts.get_mut(i)) else {
                return Err(error(
                    path,
                    Some(line_at(text, member.span().start)),
                    format!(
                        "group {:?} lists host {:?}, which has no [hosts.{}] entry",
                        group_name.get_ref(),
                        member.get_ref(),
                        member.get_ref()
                    ),
                ));
            };
            if !host.groups.contains(group_name.get_ref()) {
                host.groups.push(group_name.get_ref().clone());
            }
            host.user = host.user.take().or_else(|| group.user.clone());
            host.port = host.port.or(group.port);
            host.jump = host.jump.take().or_else(|| group.jump.clone());
            for tag in &group.tags {
                if !host.tags.contains(tag) {
                    host.tags.push(tag.clone());
                }
            }
        }
    }
    for host in &mut hosts {
        host.user = host.user.take().or_else(|| file.defaults.user.clone());
        host.port = host.port.or(file.defaults.port);
        host.jump = host.jump.take().or_else(|| file.defaults.jump.clone());
        if host.jump.as_deref() == Some("none") {
            host.jump = None;
        }
    }
    Ok(hosts)
}
