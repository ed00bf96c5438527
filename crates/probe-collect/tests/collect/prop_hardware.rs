//! Property tests of the hardware-lane parsers (issue 13): total on random bytes mixed with
//! fragments of real nvidia-smi CSV / `-q`, kernel Xid lines and /proc/PID/maps, and what they
//! return is bounded and terminal-safe.

use probe_collect::parse::{self, Ctx};
use proptest::prelude::*;

const B: &str = "00112233445566778899aabbccddeeff";

fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let frags = prop_oneof![
        any::<Vec<u8>>(),
        Just(format!("\n{B} R boot 0\n").into_bytes()),
        Just(format!("\n{B} R boot -1\n").into_bytes()),
        Just(format!("\n{B} R dmesg\n").into_bytes()),
        Just(format!("\n{B} R csv\n").into_bytes()),
        Just(format!("\n{B} R q\n").into_bytes()),
        Just(format!("\n{B} R unknown clocks_event_reasons.active\n").into_bytes()),
        Just(format!("\n{B} R maps 42\n").into_bytes()),
        Just(format!("\n{B} R owner 42\n4343\n").into_bytes()),
        Just(b"2026-12-01T03:12:44+0000 h kernel: NVRM: Xid (PCI:0000:17:00): 79, pid=1234, name=python3, GPU has fallen off the bus.\n".to_vec()),
        Just(b"[  812.1] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12028, Non-fatal\n".to_vec()),
        Just(b"NVRM: Xid (PCI:\xff:17:00): 99999999999999, pid=-1, name=\x1b[31m\n".to_vec()),
        Just(b"index, uuid, pci.bus_id, clocks_throttle_reasons.active, power.limit [W]\n0, GPU-1, 00000000:17:00.0, 0xFFFFFFFFFFFFFFFF, [N/A]\n".to_vec()),
        Just(b"GPU 00000000:17:00.0\n        GPU Slowdown Temp : 87 C\n".to_vec()),
        Just(b"7f3a1c000000-7f3a1c200000 r-xp 00000000 fd:01 1311 /usr/lib/libnccl.so.2.21.5\n/x/torch/lib/libtorch_cuda.so (deleted)\n".to_vec()),
        Just(b"\x1b]0;t\x07\x00\xc3".to_vec()),
    ];
    prop::collection::vec(frags, 0..14).prop_map(|v| v.concat())
}

fn clean(s: &str) -> bool {
    !s.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn hardware_parsers_are_total(data in bytes()) {
        let ctx = Ctx { boundary: B.into(), boot_time: Some(1_796_000_000), ..Ctx::default() };
        let (faults, _) = parse::kernel_log::parse(&data, &ctx);
        prop_assert!(faults.len() <= 500);
        for f in &faults {
            prop_assert!(clean(&f.line) && f.line.chars().count() <= 400);
            prop_assert!(f.process.as_deref().is_none_or(clean));
        }
        let gpus = parse::gpu_health::parse(&data, B);
        prop_assert!(gpus.len() <= 64);
        for g in &gpus {
            prop_assert!(g.event_reasons.len() <= 9);
            prop_assert!(g.uuid.as_deref().is_none_or(clean));
        }
        let (_, libs) = parse::gpu_procs::parse(&data, B);
        for l in &libs {
            prop_assert!(clean(&l.path) && l.path.starts_with('/'));
            prop_assert!(probe_collect::parse::gpu_catalog::lib_families().iter().any(|f| f.name == l.name));
        }
        let _ = parse::gpu_health::parse_csv(&String::from_utf8_lossy(&data));
    }
}
