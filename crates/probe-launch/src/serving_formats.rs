//! `configs/serving_formats.toml`: the serving specs without a command that `serving` reads
//! (KServe's `huggingfaceserver`, Triton's vLLM backend), each with the engine it runs and the
//! words it is known by, so that no engine is named in the reader's code.

use std::sync::LazyLock;

use probe_model::Engine;
use serde::Deserialize;

const SERVING_FORMATS_TOML: &str = include_str!("../../../configs/serving_formats.toml");

/// The whole file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ServingFormats {
    pub(crate) kserve: Kserve,
    pub(crate) triton: Triton,
}

/// A KServe `InferenceService` predictor served by `huggingfaceserver`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Kserve {
    /// The engine its default backend runs.
    pub(crate) engine: Engine,
    /// `modelFormat.name`s it serves (compared case-blind).
    pub(crate) model_formats: Vec<String>,
    /// The server's own options (snake_case), not the engine's.
    pub(crate) own_options: Vec<String>,
    /// The `--backend` value that turns the engine off.
    pub(crate) engine_off_backend: String,
}

/// Triton's backend whose `model.json` keys are the engine's arguments.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Triton {
    pub(crate) engine: Engine,
    /// Keys of `model.json` that are the backend's own.
    pub(crate) own_keys: Vec<String>,
    /// The launch's entry point label.
    pub(crate) entrypoint: String,
    /// The warning every such launch carries.
    pub(crate) warning: String,
}

/// The embedded table, parsed once.
pub(crate) fn formats() -> &'static ServingFormats {
    static T: LazyLock<ServingFormats> = LazyLock::new(|| {
        crate::embedded::load(
            "configs/serving_formats.toml",
            toml::from_str(SERVING_FORMATS_TOML),
        )
    });
    &T
}
