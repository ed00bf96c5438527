//! What runs a container.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
