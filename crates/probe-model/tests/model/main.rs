//! probe-model's integration tests, one binary: the schemas, the repository's invariants, and
//! the module-cycle check.

mod engine_names;
mod module_cycles;
mod repo_invariants;
mod schema;
