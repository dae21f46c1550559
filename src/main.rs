//! The `stpreset` command line: the library's face for scripts, tests and people.

mod cli;

fn main() -> std::process::ExitCode {
    cli::main()
}
