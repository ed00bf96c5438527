//! What the GPU sections' parsers look up: the Xid catalogue (`configs/xid.toml`: an Xid's
//! meaning is stored with the fault), the CUDA library families (`configs/cuda_libs.toml`: which
//! mapped objects are kept, and the wheels that ship each), shared-object versions and PCI bus ids
//! as one spelling. The analysis reads what these put in the snapshot; it does not look them up
//! again.

use std::sync::OnceLock;

use serde::Deserialize;

/// The embedded Xid catalogue.
pub const XID_TOML: &str = include_str!("../../../../configs/xid.toml");
/// The embedded CUDA library families.
pub const CUDA_LIBS_TOML: &str = include_str!("../../../../configs/cuda_libs.toml");

/// Who is at fault for an Xid, per the catalogue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum XidClass {
    Hardware,
    Memory,
    Link,
    Driver,
    Application,
    Thermal,
}

/// One Xid code of `configs/xid.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XidEntry {
    pub code: u32,
    pub meaning: String,
    pub class: XidClass,
    pub reset: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct XidFile {
    xid: Vec<XidEntry>,
}

/// One library family of `configs/cuda_libs.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibFamily {
    pub name: String,
    pub files: Vec<String>,
    #[serde(default)]
    pub dirs: Vec<String>,
    pub wheels: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LibFile {
    lib: Vec<LibFamily>,
}

/// Parses an Xid catalogue (the embedded one, or another for tests).
pub fn parse_xid(text: &str) -> Result<Vec<XidEntry>, toml::de::Error> {
    toml::from_str::<XidFile>(text).map(|f| f.xid)
}

/// Parses a library-family file.
pub fn parse_libs(text: &str) -> Result<Vec<LibFamily>, toml::de::Error> {
    toml::from_str::<LibFile>(text).map(|f| f.lib)
}

/// The embedded Xid catalogue (checked by a test; empty should it ever fail to parse).
pub fn xid_catalog() -> &'static [XidEntry] {
    static X: OnceLock<Vec<XidEntry>> = OnceLock::new();
    X.get_or_init(|| probe_launch::embedded::load("configs/xid.toml", parse_xid(XID_TOML)))
}

/// The catalogue entry of an Xid code.
pub fn xid(code: u32) -> Option<&'static XidEntry> {
    xid_catalog().iter().find(|x| x.code == code)
}

/// The embedded library families.
pub fn lib_families() -> &'static [LibFamily] {
    static L: OnceLock<Vec<LibFamily>> = OnceLock::new();
    L.get_or_init(|| {
        probe_launch::embedded::load("configs/cuda_libs.toml", parse_libs(CUDA_LIBS_TOML))
    })
}

/// `*`-glob match of a whole string.
fn glob(pattern: &str, s: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = s.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for p in middle {
        match rest.find(p) {
            Some(i) => rest = &rest[i + p.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// The family of a mapped path (first match in file order), if it is a CUDA-stack object.
pub fn lib_family(path: &str) -> Option<&'static LibFamily> {
    let file = path.rsplit('/').next().unwrap_or(path);
    lib_families().iter().find(|f| {
        f.files.iter().any(|p| glob(p, file))
            && (f.dirs.is_empty() || f.dirs.iter().any(|d| path.contains(d.as_str())))
    })
}

/// Version carried by a shared object's file name: `libnccl.so.2.21.5` → `2.21.5`,
/// `libcudart.so.12` → `12`; `None` for `libfoo.so`.
pub fn soname_version(path: &str) -> Option<String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let (_, v) = file.split_once(".so.")?;
    (!v.is_empty() && v.chars().all(|c| c.is_ascii_digit() || c == '.')).then(|| v.to_string())
}

/// A PCI bus id as `0000:17:00.0`, from nvidia-smi's `00000000:17:00.0` or the kernel's
/// `PCI:0000:17:00` / `0000:17:00.0`.
pub fn normalize_bus_id(s: &str) -> Option<String> {
    let s = s.trim().trim_start_matches("PCI:").to_ascii_lowercase();
    let mut it = s.split(':');
    let (dom, bus, rest) = (it.next()?, it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    let (dev, func) = rest.split_once('.').unwrap_or((rest, "0"));
    let hex = |x: &str, n: usize| {
        !x.is_empty() && x.len() <= n && x.bytes().all(|b| b.is_ascii_hexdigit())
    };
    if !hex(dom, 8) || !hex(bus, 2) || !hex(dev, 2) || !hex(func, 1) {
        return None;
    }
    let dom = &dom[dom.len().saturating_sub(4)..];
    Some(format!("{dom:0>4}:{bus:0>2}:{dev:0>2}.{func}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogues_load() {
        assert!(parse_xid(XID_TOML).is_ok());
        assert!(parse_libs(CUDA_LIBS_TOML).is_ok());
        assert_eq!(xid(79).map(|x| x.class), Some(XidClass::Hardware));
        assert!(
            parse_xid(
                "[[xid]]\ncode = 1\nmeaning = \"x\"\nclass = \"memory\"\nreset = true\ntypo = 1\n"
            )
            .is_err()
        );
    }

    #[test]
    fn readers() {
        let bus = [
            ("00000000:17:00.0", Some("0000:17:00.0")),
            ("PCI:0000:17:00", Some("0000:17:00.0")),
            ("0000:3B:00.1", Some("0000:3b:00.1")),
            ("garbage", None),
            ("1:2:3:4", None),
        ];
        for (i, e) in bus {
            assert_eq!(normalize_bus_id(i).as_deref(), e, "{i}");
        }
        let fam = [
            (
                "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5",
                Some("libnccl"),
            ),
            (
                "/v/site-packages/nvidia/cudnn/lib/libcudnn_ops.so.9",
                Some("libcudnn"),
            ),
            ("/v/site-packages/torch/lib/libtorch_cuda.so", Some("torch")),
            (
                "/v/site-packages/sgl_kernel/common_ops.abi3.so",
                Some("sgl_kernel"),
            ),
            ("/v/site-packages/vllm/_C.abi3.so", Some("vllm")),
            ("/usr/lib/libc.so.6", None),
        ];
        for (i, e) in fam {
            assert_eq!(lib_family(i).map(|f| f.name.as_str()), e, "{i}");
        }
        assert_eq!(
            soname_version("/x/libnccl.so.2.21.5").as_deref(),
            Some("2.21.5")
        );
        assert_eq!(soname_version("/x/libtorch_cuda.so"), None);
    }
}
