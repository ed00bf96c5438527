//! The hardware lane of a snapshot: per-GPU health (throttle reasons, clocks, power limits, PCIe
//! link, ECC, remapped rows, modes), the compute processes with their owners, kernel-reported
//! GPU faults (Xid, SXid, fallen off the bus, resets, NVLink) and the CUDA-stack libraries the
//! serving processes really mapped. Every string came from the remote host.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::UnixTime;

/// Everything the hardware probes read. Empty on a host without NVIDIA GPUs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HardwareState {
    pub gpus: Vec<GpuHealth>,
    /// Compute processes (`--query-compute-apps`) with the user owning each PID.
    pub processes: Vec<GpuProcess>,
    /// Kernel-log lines about the GPUs, oldest first.
    pub faults: Vec<KernelFault>,
    /// Where the kernel log came from: `journal`, `dmesg`, or `None` when neither was readable.
    pub kernel_log: Option<String>,
    /// CUDA-stack shared objects mapped by the serving processes.
    pub loaded_libs: Vec<LoadedLib>,
}

/// Health of one GPU from the extended `--query-gpu` call (fields the driver does not know are
/// listed in `unknown_fields`, never fatal).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GpuHealth {
    pub index: Option<u32>,
    pub uuid: Option<String>,
    pub pci_bus_id: Option<String>,
    pub driver_version: Option<String>,
    /// Bit mask of active clock event (throttle) reasons, as printed (`0x0000000000000004`).
    pub event_reasons_mask: Option<String>,
    /// Active reasons by name (`sw_power_cap`, `hw_slowdown`, `sw_thermal_slowdown`, ...).
    pub event_reasons: Vec<String>,
    pub clocks_sm_mhz: Option<u32>,
    pub clocks_max_sm_mhz: Option<u32>,
    pub clocks_mem_mhz: Option<u32>,
    pub clocks_max_mem_mhz: Option<u32>,
    pub temperature_c: Option<u32>,
    pub slowdown_temp_c: Option<u32>,
    pub shutdown_temp_c: Option<u32>,
    pub power_draw_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub enforced_power_limit_w: Option<f64>,
    pub default_power_limit_w: Option<f64>,
    pub max_power_limit_w: Option<f64>,
    pub pcie_gen_current: Option<u32>,
    pub pcie_gen_max: Option<u32>,
    pub pcie_width_current: Option<u32>,
    pub pcie_width_max: Option<u32>,
    pub ecc_volatile_corrected: Option<u64>,
    pub ecc_volatile_uncorrected: Option<u64>,
    pub ecc_aggregate_corrected: Option<u64>,
    pub ecc_aggregate_uncorrected: Option<u64>,
    pub retired_pages_pending: Option<String>,
    pub remapped_rows_pending: Option<String>,
    pub remapped_rows_failure: Option<String>,
    pub persistence_mode: Option<String>,
    pub mig_mode: Option<String>,
    pub compute_mode: Option<String>,
    /// Fields this driver does not know (answered `[N/A]` counts as known).
    pub unknown_fields: Vec<String>,
}

/// One compute process on a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct GpuProcess {
    pub gpu_uuid: Option<String>,
    pub pid: Option<u32>,
    pub process_name: Option<String>,
    pub used_memory_mib: Option<u64>,
    pub uid: Option<u32>,
    pub user: Option<String>,
}

/// What a kernel line about a GPU reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FaultKind {
    #[default]
    Xid,
    /// NVSwitch error (`SXid`).
    Sxid,
    FallenOffBus,
    GpuReset,
    Nvlink,
}

/// One kernel-log line about a GPU.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct KernelFault {
    pub time: Option<UnixTime>,
    /// Boot offset as journalctl names it (0 = current, -1 = previous); `None` from dmesg.
    pub boot: Option<i32>,
    pub kind: FaultKind,
    /// PCI bus id, normalised `0000:17:00.0`.
    pub pci_bus_id: Option<String>,
    pub code: Option<u32>,
    pub pid: Option<u32>,
    pub process: Option<String>,
    /// Meaning of the Xid code from `configs/xid.toml`.
    pub meaning: Option<String>,
    /// The kernel line (sanitised, capped).
    pub line: String,
}

/// One CUDA-stack shared object mapped by a serving process.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct LoadedLib {
    pub pid: u32,
    /// Library family: `libnccl`, `libcudnn`, `libcuda`, `torch`, `sgl_kernel`, ...
    pub name: String,
    pub path: String,
    /// Version from the file name (`libnccl.so.2.21.5` → `2.21.5`), when it carries one.
    pub version: Option<String>,
    /// The wheels that ship this family, first installed wins (`configs/cuda_libs.toml`, read at
    /// collection). Empty in snapshots of older releases and for families no wheel ships.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub wheels: Vec<String>,
    /// The wheel of the process's Python environment that owns this family (`nvidia-nccl-cu12`).
    pub wheel: Option<String>,
    pub wheel_version: Option<String>,
    /// Whether the path lies inside that wheel's site-packages.
    pub from_wheel: Option<bool>,
}

/// The hardware lane of a host report: the state read, and the findings ranked most likely
/// cause of a slowdown first (each a [`crate::Change`] whose `after` is the evidence).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct HardwareReport {
    pub state: HardwareState,
    pub findings: Vec<crate::Change>,
}
