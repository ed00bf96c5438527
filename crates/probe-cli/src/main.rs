fn main() -> std::process::ExitCode {
    probe_cli::main()
}
