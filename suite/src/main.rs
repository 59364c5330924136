//! `chataigne-conformance`: certifies an MCP server against the Chataigne contract.

fn main() -> std::process::ExitCode {
    chataigne_conformance::cli::main()
}
