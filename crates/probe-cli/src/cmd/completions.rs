//! `probe completions SHELL` and `probe man`: generated from the clap definitions, so they
//! always name the flags this binary has.

use clap::CommandFactory;
use probe_model::exit_codes;

use super::Ctx;
use crate::args::Cli;
use crate::errors::{ExpectedError, Result};

/// The completion script for `shell`.
pub fn completion_script(shell: clap_complete::Shell) -> String {
    let mut command = Cli::command();
    let mut bytes = Vec::new();
    clap_complete::generate(shell, &mut command, "probe", &mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The man page, roff.
pub fn man_page() -> std::io::Result<String> {
    let mut bytes = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

pub fn completions(ctx: &Ctx, shell: clap_complete::Shell) -> Result<u8> {
    ctx.write(&completion_script(shell))?;
    Ok(exit_codes::OK)
}

pub fn man(ctx: &Ctx) -> Result<u8> {
    let page = man_page().map_err(|err| ExpectedError::Other(format!("man page: {err}")))?;
    ctx.write(&page)?;
    Ok(exit_codes::OK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completion_scripts_start_as_each_shell_expects() {
        let bash = completion_script(clap_complete::Shell::Bash);
        insta::assert_snapshot!(
            "bash_completion_head",
            bash.lines().take(3).collect::<Vec<_>>().join("\n")
        );
        for shell in [
            clap_complete::Shell::Zsh,
            clap_complete::Shell::Fish,
            clap_complete::Shell::Elvish,
            clap_complete::Shell::PowerShell,
        ] {
            let script = completion_script(shell);
            assert!(script.contains("audit"), "{shell:?}");
            assert!(script.contains("html"), "{shell:?}");
        }
    }

    #[test]
    fn man_page_header() {
        let page = man_page().unwrap();
        insta::assert_snapshot!(
            "man_page_head",
            page.lines().take(4).collect::<Vec<_>>().join("\n")
        );
    }
}
