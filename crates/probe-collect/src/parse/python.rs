//! Python environments: site-packages listings, METADATA Name/Version, dist-info mtimes,
//! INSTALLER, direct_url.json. Every distribution is kept (at most [`MAX_PACKAGES`] an
//! environment): a pure-Python package can matter as much as the engine.

use std::collections::BTreeMap;

use probe_model::{PythonEnv, PythonPackage, UnixTime};

use crate::config::normalize_dist;
use crate::frame::{file_header, records};
use crate::sanitize::{line, sanitize_line, text};

/// Distributions kept per environment at most.
pub const MAX_PACKAGES: usize = 2000;

/// Parses the `python_envs` section into one env per prefix.
pub fn parse(body: &[u8], boundary: &str) -> Vec<PythonEnv> {
    let mut envs: Vec<PythonEnv> = Vec::new();
    let mut mtimes: BTreeMap<String, UnixTime> = BTreeMap::new();
    // dist-info directory -> the INSTALLER's tool, of the env at that index.
    let mut installers: BTreeMap<(usize, String), String> = BTreeMap::new();
    let mut cur: Option<usize> = None;
    for r in records(body, boundary) {
        let env = cur.and_then(|i| envs.get_mut(i));
        match (r.kind, r.header.split_once(' ')) {
            ('R', Some(("prefix", pre))) => {
                envs.push(PythonEnv {
                    prefix: Some(sanitize_line(pre)),
                    ..Default::default()
                });
                cur = Some(envs.len() - 1);
            }
            ('F', _) => {
                let h = file_header(&r.header);
                if h.tag == "pyvenv"
                    && h.is_ok()
                    && let Some(e) = env
                {
                    read_pyvenv(e, r.data);
                }
            }
            ('R', Some(("sp", rest))) => read_site_packages(env, rest, r.data, &mut mtimes),
            ('R', Some(("meta", path))) if path.ends_with("/INSTALLER") => {
                if let (Some(i), Some(tool)) = (cur, installer_of(r.data)) {
                    let dir = path.rsplit_once('/').map_or(path, |(d, _)| d);
                    installers.insert((i, dir.to_string()), tool);
                }
            }
            ('R', Some(("meta", path))) => {
                if let Some(e) = env {
                    read_metadata(e, path, r.data, &mtimes);
                }
            }
            ('R', Some(("durl", path))) => {
                if let Some(e) = env {
                    read_direct_url(e, path, r.data);
                }
            }
            _ => {}
        }
    }
    for ((i, dir), tool) in installers {
        let n = dist_of_dir(&dir);
        if let Some(p) = envs
            .get_mut(i)
            .and_then(|e| e.packages.iter_mut().find(|p| p.name == n))
        {
            p.installer = Some(tool);
        }
    }
    for e in &mut envs {
        e.packages.sort_by(|a, b| a.name.cmp(&b.name));
    }
    envs
}

/// The tool an `Installer: TOOL` line names (one word of plain characters).
fn installer_of(data: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(data);
    let tool = text
        .lines()
        .find_map(|l| l.strip_prefix("Installer: "))?
        .trim();
    (!tool.is_empty()
        && tool.len() <= 64
        && tool
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c)))
    .then(|| tool.to_string())
}

/// The normalised distribution name of a `name-version.dist-info` directory.
fn dist_of_dir(dir: &str) -> String {
    let base = dir.rsplit('/').next().unwrap_or(dir);
    normalize_dist(base.split('-').next().unwrap_or(""))
}

/// `pyvenv.cfg`: the Python version.
fn read_pyvenv(e: &mut PythonEnv, data: &[u8]) {
    for l in text(data).lines() {
        if let Some((k, v)) = l.split_once('=')
            && matches!(k.trim(), "version" | "version_info")
        {
            e.python_version = Some(sanitize_line(v.trim()));
        }
    }
}

/// `sp <prefix> <site-packages>` and its dist-info mtimes: the site-packages path starts at
/// the prefix's end; its `pythonX.Y` component is the version where `pyvenv.cfg` gave none.
fn read_site_packages(
    env: Option<&mut PythonEnv>,
    rest: &str,
    data: &[u8],
    mtimes: &mut BTreeMap<String, UnixTime>,
) {
    let sp = match env.as_ref().and_then(|e| e.prefix.clone()) {
        Some(pre) => rest
            .strip_prefix(&pre)
            .map(|s| s.trim_start().to_string())
            .unwrap_or_else(|| rest.to_string()),
        None => rest.to_string(),
    };
    let sp = sanitize_line(&sp);
    for l in String::from_utf8_lossy(data).lines() {
        if let Some((m, p)) = l.split_once(' ')
            && let Ok(m) = m.parse()
        {
            mtimes.insert(p.to_string(), m);
        }
    }
    if let Some(e) = env {
        if e.python_version.is_none() {
            e.python_version = sp
                .split('/')
                .find_map(|c| c.strip_prefix("python"))
                .filter(|v| v.starts_with('3'))
                .map(str::to_string);
        }
        if !e.site_packages.contains(&sp) {
            e.site_packages.push(sp);
        }
    }
}

/// A dist-info `METADATA`: the package's name and version (the first of each).
fn read_metadata(e: &mut PythonEnv, path: &str, data: &[u8], mtimes: &BTreeMap<String, UnixTime>) {
    let (mut name, mut version) = (None, None);
    for l in String::from_utf8_lossy(data).lines() {
        if let Some(v) = l.strip_prefix("Name: ") {
            name = name.or_else(|| Some(v.trim().to_string()));
        } else if let Some(v) = l.strip_prefix("Version: ") {
            version = version.or_else(|| Some(v.trim().to_string()));
        }
    }
    let (Some(name), Some(version)) = (name, version) else {
        return;
    };
    let n = normalize_dist(&name);
    if e.packages.iter().any(|p| p.name == n) || e.packages.len() >= MAX_PACKAGES {
        return;
    }
    let dir = path.rsplit_once('/').map_or(path, |(d, _)| d);
    e.packages.push(PythonPackage {
        name: n,
        version: sanitize_line(&version),
        installed_at: mtimes.get(dir).copied(),
        direct_url: None,
        installer: None,
    });
}

/// A dist-info `direct_url.json`, matched to its package by the directory name
/// (`name-version.dist-info`).
fn read_direct_url(e: &mut PythonEnv, path: &str, data: &[u8]) {
    let dir = path.rsplit_once('/').map_or(path, |(d, _)| d);
    let Some(durl) = direct_url(data) else {
        return;
    };
    let n = dist_of_dir(dir);
    if let Some(p) = e.packages.iter_mut().find(|p| p.name == n) {
        p.direct_url = Some(durl);
    }
}

/// `direct_url.json` → `url` (plus `@commit` for VCS installs).
pub fn direct_url(data: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(data).ok()?;
    let url = v.get("url")?.as_str()?;
    let mut s = url.to_string();
    if let Some(c) = v
        .get("vcs_info")
        .and_then(|x| x.get("commit_id"))
        .and_then(|x| x.as_str())
    {
        s.push('@');
        s.push_str(c);
    }
    if v.get("dir_info")
        .and_then(|x| x.get("editable"))
        .and_then(|x| x.as_bool())
        == Some(true)
    {
        s.push_str(" (editable)");
    }
    Some(line(s.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env() {
        let b = "B";
        let sp = "/opt/venv/lib/python3.11/site-packages";
        let body = format!(
            "\n{b} R prefix /opt/venv\n{b} F ok pyvenv 1 40 /opt/venv/pyvenv.cfg\nhome = /usr/bin\nversion = 3.11.2\n\
             {b} R sp /opt/venv {sp}\n1761800000 {sp}/torch-2.9.1+cu128.dist-info\n1761800100 {sp}/sglang-0.5.9.dist-info\n1761800200 {sp}/requests-2.32.dist-info\n\
             {b} R meta {sp}/torch-2.9.1+cu128.dist-info/METADATA\nName: torch\nVersion: 2.9.1+cu128\n\
             {b} R meta {sp}/sglang-0.5.9.dist-info/METADATA\nName: sglang\nVersion: 0.1.dev16016+g3cfc8f8b7\n\
             {b} R meta {sp}/requests-2.32.dist-info/METADATA\nName: requests\nVersion: 2.32\n\
             {b} R meta {sp}/requests-2.32.dist-info/INSTALLER\nInstaller: uv\n\
             {b} R meta {sp}/torch-2.9.1+cu128.dist-info/INSTALLER\nInstaller: pip\x1b[31m\n\
             {b} R meta {sp}/Flash_Attn-2.7.4.dist-info/METADATA\nName: flash_attn\nVersion: 2.7.4.post1\n\
             {b} R durl {sp}/sglang-0.5.9.dist-info/direct_url.json\n{{\"url\": \"https://github.com/sgl-project/sglang\", \"vcs_info\": {{\"vcs\": \"git\", \"commit_id\": \"3cfc8f8b7\"}}}}\n"
        );
        let e = parse(body.as_bytes(), b);
        assert_eq!(e.len(), 1);
        let e = &e[0];
        assert_eq!(e.python_version.as_deref(), Some("3.11.2"));
        assert_eq!(e.site_packages, vec![sp.to_string()]);
        // Every distribution, a pure-Python one too; its installer where INSTALLER names a
        // plain tool (one with a terminal escape is not taken).
        let names: Vec<&str> = e.packages.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["flash-attn", "requests", "sglang", "torch"]);
        let torch = &e.packages[3];
        assert_eq!(torch.version, "2.9.1+cu128");
        assert_eq!(torch.installed_at, Some(1_761_800_000));
        assert_eq!(torch.installer, None);
        assert_eq!(e.packages[1].installer.as_deref(), Some("uv"));
        assert_eq!(e.packages[2].version, "0.1.dev16016+g3cfc8f8b7");
        assert_eq!(
            e.packages[2].direct_url.as_deref(),
            Some("https://github.com/sgl-project/sglang@3cfc8f8b7")
        );
    }
}
