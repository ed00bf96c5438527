//! The round-2 `gpu_procs` section: `rec owner PID` + the uid owning `/proc/PID` (compute
//! processes of nvidia-smi), and `rec maps PID` + the mapped paths of a serving process (its
//! `/proc/PID/maps` cut to paths by the script), reduced here to the CUDA-stack libraries of
//! `configs/cuda_libs.toml`.

use std::collections::BTreeMap;

use probe_model::{ComputeApp, GpuProcess, LoadedLib};

use super::{Ctx, lines};
use crate::frame::records;
use crate::sanitize::sanitize_line;

/// Libraries kept per process.
const MAX_LIBS: usize = 64;

/// Parses the section body: PID → owning uid, and the loaded libraries.
pub fn parse(body: &[u8], boundary: &str) -> (BTreeMap<u32, u32>, Vec<LoadedLib>) {
    let mut owners = BTreeMap::new();
    let mut libs = Vec::new();
    for r in records(body, boundary) {
        let mut w = r.header.split(' ');
        let (Some(kind), Some(pid)) = (w.next(), w.next().and_then(|p| p.parse::<u32>().ok()))
        else {
            continue;
        };
        match kind {
            "owner" => {
                if let Ok(uid) = String::from_utf8_lossy(r.data).trim().parse() {
                    owners.insert(pid, uid);
                }
            }
            "maps" => libs.extend(reduce(pid, r.data)),
            _ => {}
        }
    }
    (owners, libs)
}

/// nvidia-smi's compute processes with the uid and user owning each PID.
pub fn owned(apps: &[ComputeApp], owners: &BTreeMap<u32, u32>, ctx: &Ctx) -> Vec<GpuProcess> {
    apps.iter()
        .map(|a| {
            let uid = a.pid.and_then(|p| owners.get(&p).copied());
            GpuProcess {
                gpu_uuid: a.gpu_uuid.clone(),
                pid: a.pid,
                process_name: a.process_name.clone(),
                used_memory_mib: a.used_memory_mib,
                uid,
                user: uid.and_then(|u| ctx.users.get(&u).cloned()),
            }
        })
        .collect()
}

/// Mapped paths of one process (or whole maps lines) → its CUDA-stack libraries, deduplicated.
pub fn reduce(pid: u32, data: &[u8]) -> Vec<LoadedLib> {
    let mut out: Vec<LoadedLib> = Vec::new();
    for l in lines(data).take(100_000) {
        // A whole maps line (`addr perms off dev inode path`) or the path alone.
        let Some(at) = l.find('/') else { continue };
        let path = l[at..].trim_end().trim_end_matches(" (deleted)");
        let Some(fam) = crate::parse::gpu_catalog::lib_family(path) else {
            continue;
        };
        let path = sanitize_line(path);
        if out.iter().any(|x| x.path == path) || out.len() >= MAX_LIBS {
            continue;
        }
        out.push(LoadedLib {
            pid,
            name: fam.name.clone(),
            wheels: fam.wheels.clone(),
            version: crate::parse::gpu_catalog::soname_version(&path),
            path,
            ..LoadedLib::default()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table() {
        type Libs = [(&'static str, Option<&'static str>)];
        let cases: &[(&str, &Libs)] = &[
            (
                "7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 1311 /usr/local/lib/nccl/libnccl.so.2.21.5\n7f3a1c200000-7f3a1c400000 r--p 00200000 fd:01 1311 /usr/local/lib/nccl/libnccl.so.2.21.5\n7f3a1d000000-7f3a1d100000 r-xp 00000000 fd:01 99 /usr/lib/x86_64-linux-gnu/libc.so.6\n",
                &[("libnccl", Some("2.21.5"))],
            ),
            (
                "/opt/v/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so\n/usr/lib/x86_64-linux-gnu/libcuda.so.570.172.08\n/x/libcudnn.so.9 (deleted)\n",
                &[
                    ("torch", None),
                    ("libcuda", Some("570.172.08")),
                    ("libcudnn", Some("9")),
                ],
            ),
            ("no paths at all\n\u{0}\u{ff}", &[]),
        ];
        for (input, want) in cases {
            let got: Vec<(String, Option<String>)> = reduce(1, input.as_bytes())
                .into_iter()
                .map(|l| (l.name, l.version))
                .collect();
            let want: Vec<(String, Option<String>)> = want
                .iter()
                .map(|(n, v)| (n.to_string(), v.map(String::from)))
                .collect();
            assert_eq!(got, want, "{input}");
        }
    }
}
