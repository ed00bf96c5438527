//! Containers: what runs them, and what a serving container is (its image, command, where it
//! came from: a Compose project or a Kubernetes pod and its owner).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::UnixTime;

/// The program that runs a container, as the collection asks it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ContainerRuntime {
    Docker,
    Podman,
    /// A runtime this version does not know (a newer store) reads as this, never as an error.
    #[default]
    #[serde(other)]
    Other,
}

impl ContainerRuntime {
    /// The runtime a section names (`docker`, `podman`); any other name is [`Self::Other`].
    pub fn from_name(name: &str) -> ContainerRuntime {
        match name {
            "docker" => ContainerRuntime::Docker,
            "podman" => ContainerRuntime::Podman,
            _ => ContainerRuntime::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContainerRuntime::Docker => "docker",
            ContainerRuntime::Podman => "podman",
            ContainerRuntime::Other => "other",
        }
    }
}

impl std::fmt::Display for ContainerRuntime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ContainerInfo {
    /// `docker` or `podman`.
    pub runtime: ContainerRuntime,
    pub id: String,
    pub name: Option<String>,
    pub image: String,
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub started_at: Option<UnixTime>,
    /// When it last stopped (`State.FinishedAt`); `None` when it never has. A container
    /// restarted since keeps the previous stop here: the end of its previous run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<UnixTime>,
    pub state: Option<String>,
    /// The file the runtime keeps the container's stdout/stderr in (`LogPath` of `inspect`:
    /// docker's `/var/lib/docker/containers/<id>/<id>-json.log`); absent for drivers without
    /// one (journald, syslog, none).
    #[serde(default)]
    pub log_path: Option<String>,
    /// Its log driver (`HostConfig.LogConfig.Type`: `json-file`, `local`, `k8s-file`,
    /// `journald`, ...).
    #[serde(default)]
    pub log_driver: Option<String>,
    /// The image it runs, by content (`Image` of `inspect`, `sha256:...`; a digest the image
    /// was named by, `name@sha256:...`, is in `image`).
    #[serde(default)]
    pub image_id: Option<String>,
    /// The registry digests that image is known by (`RepoDigests` of `image inspect`:
    /// `vllm/vllm-openai@sha256:...`): what to pull to get the same bytes again.
    #[serde(default)]
    pub repo_digests: Vec<String>,
    /// The Docker Compose project and service it was created for, from the labels Compose
    /// writes (`com.docker.compose.*`).
    #[serde(default)]
    pub compose: Option<ComposeOrigin>,
    /// The Kubernetes pod it belongs to, from the labels the kubelet's runtime writes
    /// (`io.kubernetes.*`), with the pod's annotations where the runtime copied them.
    #[serde(default)]
    pub pod: Option<PodOrigin>,
}

/// An image name without its tag or digest (`registry:5000/vllm:v1` -> `registry:5000/vllm`,
/// `lmsysorg/sglang@sha256:...` -> `lmsysorg/sglang`): a colon counts as a tag only after the
/// last `/`, so a registry's port stays.
pub fn image_repository(image: &str) -> &str {
    let name = image.split('@').next().unwrap_or(image);
    match name.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => name,
    }
}

/// Where a container's launch comes from when Docker Compose created it: the compose file(s)
/// and the service in them (labels `com.docker.compose.project`, `.service`,
/// `.project.config_files`, `.project.working_dir`, `.container-number`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct ComposeOrigin {
    pub project: String,
    pub service: String,
    /// The compose files (comma-separated in the label; Compose writes absolute paths, and a
    /// relative one is made absolute under `working_dir` when the label is read).
    pub config_files: Vec<String>,
    pub working_dir: Option<String>,
    /// The replica (`--scale`): 1 for the first.
    pub container_number: Option<u32>,
}

/// The Kubernetes pod a container belongs to (labels `io.kubernetes.pod.namespace`,
/// `.pod.name`, `.container.name`, `.pod.uid`; annotations the runtime copied as
/// `annotation.KEY` labels, bounded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PodOrigin {
    pub namespace: Option<String>,
    pub pod: String,
    pub container: Option<String>,
    pub uid: Option<String>,
    pub annotations: BTreeMap<String, String>,
    /// The workload that made the pod, as far as its name and annotations tell (the runtime's
    /// labels carry no owner reference): inferred, never read from the API server.
    #[serde(default)]
    pub owner: Option<PodOwner>,
}

/// The workload a pod belongs to, inferred from the names controllers give their pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(default)]
pub struct PodOwner {
    pub kind: PodOwnerKind,
    /// The workload's name (`vllm` for pod `vllm-7d9c8b6f5-x2k4q`).
    pub name: String,
    /// What the name told beyond the workload: the ReplicaSet (`vllm-7d9c8b6f5`), the
    /// StatefulSet ordinal (`0`), the LeaderWorkerSet group and worker (`0-1`).
    pub detail: Option<String>,
}

/// Kinds of workload a pod's name points to.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PodOwnerKind {
    /// `NAME-<template hash>-<suffix>`: a Deployment's ReplicaSet.
    Deployment,
    /// `NAME-<suffix>`: a DaemonSet, a Job or a bare ReplicaSet (the name cannot tell which).
    #[default]
    Generated,
    /// `NAME-<ordinal>`: a StatefulSet (a LeaderWorkerSet's leader is one).
    StatefulSet,
    /// `NAME-<group>-<worker>`: a LeaderWorkerSet worker (or a StatefulSet whose name ends in a
    /// number).
    LeaderWorkerSet,
    /// A static pod the kubelet runs from a manifest file (`kubernetes.io/config.source: file`).
    Static,
}

impl PodOwnerKind {
    /// How the kind reads in text (`Deployment`, `StatefulSet`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            PodOwnerKind::Deployment => "Deployment",
            PodOwnerKind::Generated => "DaemonSet, Job or ReplicaSet",
            PodOwnerKind::StatefulSet => "StatefulSet",
            PodOwnerKind::LeaderWorkerSet => "LeaderWorkerSet",
            PodOwnerKind::Static => "static pod manifest",
        }
    }
}
