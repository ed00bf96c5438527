//! The `probe` command: argument parsing, settings, dispatch to one module per command, and
//! rendering. This is the only crate that prints; libraries return values and errors.
//!
//! * `args`: clap types (the `--help` text), `settings`: flags over config file over defaults.
//! * `cmd`: one module per command, returning an exit code or an `errors::ExpectedError`.
//! * `render`: reports as documents, rendered as human text, Markdown or JSON.
//! * `inventory`: fleet inventories (TOML, Ansible INI/YAML, ssh_config).
//! * `output`: the terminal: colour, sanitizing remote text, stdout/stderr.

#![deny(clippy::print_stdout, clippy::print_stderr)]

mod args;
mod baseline;
mod cmd;
mod collect;
mod errors;
mod inventory;
mod output;
mod prometheus;
mod render;
mod report;
mod settings;
mod shard;

/// What the integration tests and benchmarks drive directly (the property test renders every
/// output of a report; the Kubernetes test parses the manifests' arguments with the real `Cli`):
/// the rest of the crate is private, so the compiler tells dead code from API.
#[doc(hidden)]
pub mod testing {
    pub use crate::args::{Cli, Command, Format};
    pub use crate::inventory::parse as parse_inventory;
    pub use crate::output::Printer;
    pub use crate::prometheus::render as prometheus;
    pub use crate::render::html::host_page;
    pub use crate::render::json::{line as json_line, pretty as json_pretty};
    pub use crate::render::{audit_doc, change_summary, host_report_doc, snapshot_diff_doc, text};
    pub use crate::report::build as host_report;
}

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use probe_model::exit_codes;

use args::Cli;
use errors::ExpectedError;
use output::Printer;
use settings::Settings;

/// Parses the command line, runs the command, and turns the outcome into an exit code. The
/// binary's whole `main.rs`:
///
/// ```no_run
/// fn main() -> std::process::ExitCode {
///     probe_cli::main()
/// }
/// ```
pub fn main() -> ExitCode {
    install_panic_hook();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            let _ = err.print();
            return ExitCode::from(if err.use_stderr() {
                exit_codes::ERROR
            } else {
                exit_codes::OK
            });
        }
    };
    init_tracing(cli.global.verbose);
    let fallback = Printer::new(args::Format::Human, cli.global.color);
    let settings = match Settings::resolve(&cli.global) {
        Ok(settings) => settings,
        Err(err) => return report_error(&fallback, &err),
    };
    let format = cmd::format_for(&cli.command, settings.format, settings.format_is_default);
    let printer = Printer::new(format, settings.color);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            return report_error(
                &printer,
                &ExpectedError::Other(format!("cannot start the async runtime: {err}")),
            );
        }
    };
    let ctx = cmd::Ctx::new(Arc::new(settings), printer.clone());
    let outcome = runtime.block_on(cmd::dispatch(cli.command, &ctx));
    // Do not wait for stray blocking tasks (a hung local command) once the command is done.
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    match outcome {
        Ok(code) => ExitCode::from(code),
        Err(err) => report_error(&printer, &err),
    }
}

fn report_error(printer: &Printer, err: &ExpectedError) -> ExitCode {
    printer.warn(&err.to_string());
    if let Some(hint) = err.hint() {
        printer.hint(&hint);
    }
    ExitCode::from(err.exit_code())
}

/// A panic is a bug, but the user still gets one line and exit code 2, never a backtrace.
fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        use std::io::Write;
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let location = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        let mut stderr = std::io::stderr().lock();
        let _ = writeln!(
            stderr,
            "probe: internal error: {}{location} (please report this)",
            output::one_line(&message)
        );
        let _ = stderr.flush();
        // Exit now with the error code instead of unwinding into a runtime thread.
        #[expect(
            clippy::exit,
            reason = "a panic ends the process with the error code; unwinding further would land in a runtime thread"
        )]
        std::process::exit(i32::from(exit_codes::ERROR));
    }));
}

/// Logs to stderr: `RUST_LOG` when set, else by `-v` count.
fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let filter = match std::env::var("RUST_LOG") {
        Ok(value) if !value.is_empty() => EnvFilter::new(value),
        _ => EnvFilter::new(match verbose {
            0 => "error",
            1 => "info",
            2 => "debug",
            _ => "trace",
        }),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(verbose >= 2)
        .try_init();
}
