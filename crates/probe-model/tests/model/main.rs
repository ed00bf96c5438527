//! probe-model's integration tests, one binary: the schemas, the repository's invariants, the
//! module-cycle check, and the check that no engine is named in code outside its definitions.

mod engine_names;
mod module_cycles;
mod repo_invariants;
mod schema;
