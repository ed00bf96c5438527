//! Ansible YAML inventories: nested `hosts:`, `vars:` and `children:` under `all:` or top-level
//! groups.

use std::collections::BTreeMap;
use std::path::Path;

use yaml_rust2::{Yaml, YamlLoader};

use super::ini::apply_vars;
use super::{InventoryError, InventoryHost, error, line_of, valid_host_name};

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<InventoryHost>, InventoryError> {
    super::yaml_bounds::check(text, path)?;
    let documents = YamlLoader::load_from_str(text).map_err(|err| {
        error(
            path,
            Some(err.marker().line().max(1)),
            format!("YAML: {}", err.info()),
        )
    })?;
    let Some(root) = documents.first() else {
        return Ok(Vec::new());
    };
    let Some(top) = root.as_hash() else {
        return Err(error(
            path,
            Some(1),
            "expected a mapping of groups (e.g. `all:`)",
        ));
    };
    let mut walker = Walker {
        text,
        path,
        hosts: Vec::new(),
    };
    for (name, group) in top {
        let Some(name) = scalar(name) else {
            return Err(error(path, None, "group names must be strings"));
        };
        walker.group(&name, group, &[], &BTreeMap::new())?;
    }
    walker.finish()
}

struct Walker<'a> {
    text: &'a str,
    path: &'a Path,
    /// (name, groups nearest first, host vars, inherited vars nearest first)
    hosts: Vec<(String, Vec<String>, BTreeMap<String, String>)>,
}

impl Walker<'_> {
    fn group(
        &mut self,
        name: &str,
        node: &Yaml,
        parents: &[String],
        inherited: &BTreeMap<String, String>,
    ) -> Result<(), InventoryError> {
        if node.is_null() {
            return Ok(());
        }
        let Some(map) = node.as_hash() else {
            return Err(error(
                self.path,
                line_of(self.text, &format!("{name}:")),
                format!("group {name:?} must be a mapping with hosts/vars/children"),
            ));
        };
        // Group vars over the parents'.
        let mut vars = inherited.clone();
        if let Some(group_vars) = map.get(&Yaml::String("vars".into())) {
            for (k, v) in self.string_map(name, group_vars)? {
                vars.insert(k, v);
            }
        }
        let mut groups = vec![name.to_string()];
        groups.extend(parents.iter().cloned());
        for (key, value) in map {
            match scalar(key).as_deref() {
                Some("hosts") => self.group_hosts(name, value, &groups, &vars)?,
                Some("children") => self.group_children(name, value, &groups, &vars)?,
                Some("vars") => {}
                Some(other) => {
                    return Err(error(
                        self.path,
                        line_of(self.text, &format!("{other}:")),
                        format!(
                            "unexpected key {other:?} in group {name:?} (expected hosts, vars, children)"
                        ),
                    ));
                }
                None => {}
            }
        }
        Ok(())
    }

    /// A group's `hosts:` mapping: each host (or range) with its vars over the group's.
    fn group_hosts(
        &mut self,
        name: &str,
        value: &Yaml,
        groups: &[String],
        vars: &BTreeMap<String, String>,
    ) -> Result<(), InventoryError> {
        let hosts = self.entries(value, "hosts", name, "host names")?;
        for (host, host_vars) in hosts {
            let mut merged = vars.clone();
            if !host_vars.is_null() {
                for (k, v) in self.string_map(&host, host_vars)? {
                    merged.insert(k, v);
                }
            }
            for expanded in super::ini::expand_range(&host)
                .map_err(|cause| error(self.path, line_of(self.text, &host), cause.to_string()))?
            {
                if !valid_host_name(&expanded) {
                    return Err(error(
                        self.path,
                        line_of(self.text, &host),
                        format!("invalid host name {expanded:?}"),
                    ));
                }
                self.hosts.push((expanded, groups.to_vec(), merged.clone()));
            }
        }
        Ok(())
    }

    /// A group's `children:` mapping: each child group read with this group as a parent.
    fn group_children(
        &mut self,
        name: &str,
        value: &Yaml,
        groups: &[String],
        vars: &BTreeMap<String, String>,
    ) -> Result<(), InventoryError> {
        for (child, child_node) in self.entries(value, "children", name, "groups")? {
            self.group(&child, child_node, groups, vars)?;
        }
        Ok(())
    }

    /// The entries with a scalar name of a group's `key:` mapping (none when it is empty).
    fn entries<'y>(
        &self,
        value: &'y Yaml,
        key: &str,
        group: &str,
        of: &str,
    ) -> Result<Vec<(String, &'y Yaml)>, InventoryError> {
        if value.is_null() {
            return Ok(Vec::new());
        }
        let Some(map) = value.as_hash() else {
            return Err(error(
                self.path,
                line_of(self.text, &format!("{key}:")),
                format!("`{key}` of group {group:?} must be a mapping of {of}"),
            ));
        };
        Ok(map
            .iter()
            .filter_map(|(k, v)| Some((scalar(k)?, v)))
            .collect())
    }

    fn string_map(
        &self,
        owner: &str,
        node: &Yaml,
    ) -> Result<BTreeMap<String, String>, InventoryError> {
        let Some(map) = node.as_hash() else {
            return Err(error(
                self.path,
                line_of(self.text, &format!("{owner}:")),
                format!("variables of {owner:?} must be a mapping"),
            ));
        };
        Ok(map
            .iter()
            .filter_map(|(k, v)| Some((scalar(k)?, scalar(v).unwrap_or_default())))
            .collect())
    }

    fn finish(self) -> Result<Vec<InventoryHost>, InventoryError> {
        let mut out = Vec::new();
        for (name, groups, vars) in self.hosts {
            let mut host = InventoryHost {
                name: name.clone(),
                address: name.clone(),
                groups: groups
                    .into_iter()
                    .filter(|g| g != "all" && g != "ungrouped")
                    .collect(),
                ..InventoryHost::default()
            };
            apply_vars(&mut host, &vars).map_err(|cause| {
                error(
                    self.path,
                    line_of(self.text, &format!("{name}:")),
                    cause.to_string(),
                )
            })?;
            out.push(host);
        }
        Ok(out)
    }
}

fn scalar(node: &Yaml) -> Option<String> {
    match node {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        Yaml::Boolean(b) => Some(b.to_string()),
        _ => None,
    }
}
