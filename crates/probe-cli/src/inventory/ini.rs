//! Ansible INI inventories: `[group]`, `[group:vars]`, `[group:children]`, host lines with
//! `key=value` variables, and host ranges (`gpu[01:04]`, `node-[a:c]`).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use super::{InventoryError, InventoryHost, error, parse_port, valid_host_name};

#[derive(Debug, Default)]
struct Group {
    hosts: Vec<(String, BTreeMap<String, String>, usize)>,
    vars: BTreeMap<String, String>,
    children: Vec<String>,
}

/// A host's or a group's `key=value` variables.
type Vars = BTreeMap<String, String>;

#[derive(Clone, Copy, PartialEq)]
enum Section {
    Hosts,
    Vars,
    Children,
}

pub(super) fn parse(text: &str, path: &Path) -> Result<Vec<InventoryHost>, InventoryError> {
    let (groups, order) = read_groups(text, path)?;
    check_children(text, path, &groups)?;
    let lines = host_lines(&groups);
    let parents = parents(&groups);
    let mut hosts = Vec::new();
    for name in order {
        let entries = lines.get(name.as_str()).map_or(&[][..], Vec::as_slice);
        let host_groups = groups_of(entries, &parents);
        let (vars, host_line) = vars_of(entries, &host_groups, &groups);
        let mut host = InventoryHost {
            name: name.clone(),
            address: name.clone(),
            groups: host_groups
                .into_iter()
                .filter(|g| g != "ungrouped" && g != "all")
                .collect(),
            ..InventoryHost::default()
        };
        apply_vars(&mut host, &vars).map_err(|cause| error(path, host_line, cause.to_string()))?;
        hosts.push(host);
    }
    Ok(hosts)
}

/// One line naming a host: the group it is under, its variables there, its line number.
type HostLine<'g> = (&'g str, &'g Vars, usize);

/// Every host's lines, in the groups' order: found once, so a host's groups and variables
/// never need a scan of every group (an inventory of 10,000 hosts would be quadratic).
fn host_lines(groups: &BTreeMap<String, Group>) -> HashMap<&str, Vec<HostLine<'_>>> {
    let mut lines: HashMap<&str, Vec<HostLine<'_>>> = HashMap::new();
    for (group_name, group) in groups {
        for (host, vars, line) in &group.hosts {
            lines
                .entry(host.as_str())
                .or_default()
                .push((group_name.as_str(), vars, *line));
        }
    }
    lines
}

/// Each group's parents (the groups that list it under `:children`), in the groups' order.
fn parents(groups: &BTreeMap<String, Group>) -> HashMap<&str, Vec<&str>> {
    let mut parents: HashMap<&str, Vec<&str>> = HashMap::new();
    for (parent, group) in groups {
        for child in &group.children {
            let of_child = parents.entry(child.as_str()).or_default();
            if !of_child.contains(&parent.as_str()) {
                of_child.push(parent.as_str());
            }
        }
    }
    parents
}

/// Reads every section of the file into groups, and the host names in first-seen order.
fn read_groups(
    text: &str,
    path: &Path,
) -> Result<(BTreeMap<String, Group>, Vec<String>), InventoryError> {
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    let mut current = (String::from("ungrouped"), Section::Hosts);
    for (index, raw_line) in text.lines().enumerate() {
        let line_number = index + 1;
        let line = raw_line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            current = section_header(line, rest, path, line_number)?;
            groups.entry(current.0.clone()).or_default();
            continue;
        }
        let group = groups.entry(current.0.clone()).or_default();
        match current.1 {
            Section::Vars => {
                let Some((key, value)) = line.split_once('=') else {
                    return Err(error(
                        path,
                        Some(line_number),
                        format!("expected `key=value` in [{}:vars], got {line:?}", current.0),
                    ));
                };
                group
                    .vars
                    .insert(key.trim().to_string(), unquote(value.trim()));
            }
            Section::Children => group.children.push(line.to_string()),
            Section::Hosts => {
                for (name, host_vars) in host_line(line, path, line_number)? {
                    if seen.insert(name.clone()) {
                        order.push(name.clone());
                    }
                    group.hosts.push((name, host_vars, line_number));
                }
            }
        }
    }
    Ok((groups, order))
}

/// Reads a `[name]`, `[name:vars]` or `[name:children]` header; `rest` follows the `[`.
fn section_header(
    line: &str,
    rest: &str,
    path: &Path,
    line_number: usize,
) -> Result<(String, Section), InventoryError> {
    let Some(header) = rest.strip_suffix(']') else {
        return Err(error(
            path,
            Some(line_number),
            format!("section header {line:?} is missing `]`"),
        ));
    };
    let (name, kind) = match header.split_once(':') {
        Some((name, "vars")) => (name, Section::Vars),
        Some((name, "children")) => (name, Section::Children),
        Some((_, other)) => {
            return Err(error(
                path,
                Some(line_number),
                format!("unknown section type `:{other}` (expected :vars or :children)"),
            ));
        }
        None => (header, Section::Hosts),
    };
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(error(
            path,
            Some(line_number),
            format!("invalid group name {name:?}"),
        ));
    }
    Ok((name.to_string(), kind))
}

/// Reads a host line: a name or range pattern, then `key=value` words; one entry per host.
fn host_line(
    line: &str,
    path: &Path,
    line_number: usize,
) -> Result<Vec<(String, Vars)>, InventoryError> {
    let words = split_words(line)
        .ok_or_else(|| error(path, Some(line_number), "unbalanced quote in host line"))?;
    let Some((pattern, vars)) = words.split_first() else {
        return Ok(Vec::new());
    };
    let mut host_vars = BTreeMap::new();
    for word in vars {
        let Some((key, value)) = word.split_once('=') else {
            return Err(error(
                path,
                Some(line_number),
                format!("expected `key=value` after host {pattern}, got {word:?}"),
            ));
        };
        host_vars.insert(key.to_string(), value.to_string());
    }
    let names =
        expand_range(pattern).map_err(|cause| error(path, Some(line_number), cause.to_string()))?;
    let mut hosts = Vec::new();
    for name in names {
        if !valid_host_name(&name) {
            return Err(error(
                path,
                Some(line_number),
                format!("invalid host name {name:?}"),
            ));
        }
        hosts.push((name, host_vars.clone()));
    }
    Ok(hosts)
}

/// Children must name known groups.
fn check_children(
    text: &str,
    path: &Path,
    groups: &BTreeMap<String, Group>,
) -> Result<(), InventoryError> {
    for (name, group) in groups {
        for child in &group.children {
            if !groups.contains_key(child) {
                let line = super::line_of(text, &format!("[{name}:children]"));
                return Err(error(
                    path,
                    line,
                    format!("group {name:?} lists unknown child group {child:?}"),
                ));
            }
        }
    }
    Ok(())
}

/// Groups the host is in, nearest first, then their ancestors.
fn groups_of(entries: &[HostLine<'_>], parents: &HashMap<&str, Vec<&str>>) -> Vec<String> {
    let mut host_groups: Vec<String> = Vec::new();
    for (group_name, _, _) in entries {
        if !host_groups.iter().any(|g| g == group_name) {
            host_groups.push((*group_name).to_string());
        }
    }
    let mut cursor = 0;
    while let Some(group_name) = host_groups.get(cursor).cloned() {
        for parent in parents.get(group_name.as_str()).into_iter().flatten() {
            if !host_groups.iter().any(|g| g == parent) {
                host_groups.push((*parent).to_string());
            }
        }
        cursor += 1;
    }
    host_groups
}

/// The host's variables (host lines first, then group vars, then `all`) and its first line.
fn vars_of(
    entries: &[HostLine<'_>],
    host_groups: &[String],
    groups: &BTreeMap<String, Group>,
) -> (Vars, Option<usize>) {
    let mut vars: Vars = BTreeMap::new();
    let mut line_number = None;
    for group_name in host_groups {
        for (_, host_vars, line) in entries.iter().filter(|(g, _, _)| g == group_name) {
            line_number.get_or_insert(*line);
            for (k, v) in *host_vars {
                vars.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    for group_name in host_groups
        .iter()
        .map(String::as_str)
        .chain(std::iter::once("all"))
    {
        if let Some(group) = groups.get(group_name) {
            for (k, v) in &group.vars {
                vars.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
    }
    (vars, line_number)
}

/// A connection variable whose value cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum VarError {
    #[error("{key}={value:?} is not a port number")]
    NotAPort { key: String, value: String },
}

/// Applies Ansible connection variables to a host.
pub(super) fn apply_vars(
    host: &mut InventoryHost,
    vars: &BTreeMap<String, String>,
) -> Result<(), VarError> {
    for (key, value) in vars {
        match key.as_str() {
            "ansible_host" | "ansible_ssh_host" => host.address = value.clone(),
            "ansible_user" | "ansible_ssh_user" | "ansible_remote_user" => {
                host.user = Some(value.clone());
            }
            "ansible_port" | "ansible_ssh_port" => {
                host.port = Some(parse_port(value).ok_or_else(|| VarError::NotAPort {
                    key: key.clone(),
                    value: value.clone(),
                })?);
            }
            "ansible_ssh_common_args" | "ansible_ssh_extra_args" => {
                if let Some(jump) = jump_from_args(value) {
                    host.jump = Some(jump);
                }
            }
            "probe_jump" => host.jump = Some(value.clone()),
            "probe_tags" | "tags" => host.tags.extend(
                value
                    .split(',')
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_string),
            ),
            _ => {}
        }
    }
    Ok(())
}

/// `-J jump`, `-o ProxyJump=jump` or `-o 'ProxyJump jump'` in ssh arguments.
fn jump_from_args(args: &str) -> Option<String> {
    let words = split_words(args)?;
    let mut iter = words.iter().peekable();
    while let Some(word) = iter.next() {
        if word == "-J" {
            return iter.next().cloned();
        }
        if let Some(rest) = word.strip_prefix("-J") {
            return Some(rest.to_string());
        }
        let option = if word == "-o" {
            iter.next().cloned()
        } else {
            word.strip_prefix("-o").map(str::to_string)
        };
        if let Some(option) = option {
            let (key, value) = option
                .split_once(['=', ' '])
                .map(|(k, v)| (k.trim(), v.trim()))?;
            if key.eq_ignore_ascii_case("proxyjump") {
                return Some(value.to_string());
            }
        }
    }
    None
}

fn unquote(value: &str) -> String {
    let trimmed = value.trim();
    for quote in ['"', '\''] {
        if let Some(inner) = trimmed
            .strip_prefix(quote)
            .and_then(|rest| rest.strip_suffix(quote))
        {
            return inner.to_string();
        }
    }
    trimmed.to_string()
}

/// Splits on whitespace, honouring single and double quotes (Ansible's shlex-like split).
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut quote: Option<char> = None;
    let mut in_word = false;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => current.push(c),
            None if c == '"' || c == '\'' => {
                quote = Some(c);
                in_word = true;
            }
            None if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            None if c == '#' && !in_word => break,
            None => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(current);
    }
    Some(words)
}

/// A host range that cannot be expanded (the pattern as written).
#[derive(Debug, thiserror::Error)]
pub(super) enum RangeError {
    #[error("host range in {0:?} is missing `]`")]
    Unclosed(String),
    #[error("bad stride in host range {0:?}")]
    Stride(String),
    #[error("bad host range {0:?} (expected [start:end])")]
    Shape(String),
    /// Ends out of order, over 10,000 names, or not numbers or single letters.
    #[error("bad host range {0:?}")]
    Ends(String),
}

/// `gpu[01:03].lab` -> gpu01.lab, gpu02.lab, gpu03.lab; `n[a:c]`; `[1:9:2]` with a stride.
pub(super) fn expand_range(pattern: &str) -> Result<Vec<String>, RangeError> {
    let Some(open) = pattern.find('[') else {
        return Ok(vec![pattern.to_string()]);
    };
    let Some(close_rel) = pattern.get(open..).and_then(|rest| rest.find(']')) else {
        return Err(RangeError::Unclosed(pattern.to_string()));
    };
    let close = open + close_rel;
    let head = pattern.get(..open).unwrap_or("");
    let body = pattern.get(open + 1..close).unwrap_or("");
    let tail = pattern.get(close + 1..).unwrap_or("");
    let parts: Vec<&str> = body.split(':').collect();
    let (start, end, stride) = match parts.as_slice() {
        [start, end] => (*start, *end, 1usize),
        [start, end, stride] => (
            *start,
            *end,
            stride
                .parse::<usize>()
                .ok()
                .filter(|s| *s > 0)
                .ok_or_else(|| RangeError::Stride(pattern.to_string()))?,
        ),
        _ => return Err(RangeError::Shape(pattern.to_string())),
    };
    let mut items = Vec::new();
    if let (Ok(first), Ok(last)) = (start.parse::<u64>(), end.parse::<u64>()) {
        if first > last || last - first > 10_000 {
            return Err(RangeError::Ends(pattern.to_string()));
        }
        let width = if start.starts_with('0') && start.len() > 1 {
            start.len()
        } else {
            0
        };
        let mut n = first;
        while n <= last {
            items.push(format!("{n:0width$}"));
            n += stride as u64;
        }
    } else {
        let (Some(first), Some(last)) = (single_char(start), single_char(end)) else {
            return Err(RangeError::Ends(pattern.to_string()));
        };
        if first > last {
            return Err(RangeError::Ends(pattern.to_string()));
        }
        items.extend(
            (first..=last)
                .step_by(stride)
                .map(|c| char::from(c).to_string()),
        );
    }
    let mut out = Vec::new();
    for item in items {
        for rest in expand_range(tail)? {
            out.push(format!("{head}{item}{rest}"));
        }
    }
    Ok(out)
}

fn single_char(text: &str) -> Option<u8> {
    match text.as_bytes() {
        [c] if c.is_ascii_alphabetic() => Some(*c),
        _ => None,
    }
}
