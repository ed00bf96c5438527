//! `probe resolve TARGET`: the SSH settings for a target, in the form of `ssh -G`.

use probe_model::exit_codes;
use probe_transport::config::{ResolveOptions, resolve};
use probe_transport::target::parse_target;

use super::Ctx;
use crate::args::ResolveArgs;
use crate::errors::{ExpectedError, Result};

pub fn run(ctx: &Ctx, args: ResolveArgs) -> Result<u8> {
    let target = parse_target(&args.target).map_err(|err| ExpectedError::Usage(err.to_string()))?;
    let options = ResolveOptions::from_env(ctx.settings.ssh_config.clone());
    let resolved =
        resolve(&target, &options).map_err(|err| ExpectedError::Config(err.to_string()))?;
    ctx.write(&crate::output::sanitize_terminal(&resolved.ssh_g()))?;
    Ok(exit_codes::OK)
}
