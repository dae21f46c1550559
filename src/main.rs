//! The `stpreset` command line: the library's face for scripts, tests and people.

mod cli;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A bug must not greet a user with a Rust panic message and backtrace: one line, and a
    // distinct exit code (70, EX_SOFTWARE) so scripts can tell it from bad input.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown failure".into());
        // Never `eprintln!` here: it panics when stderr is closed, and a panic inside the
        // hook aborts the process (exit 134) instead of exiting 70.
        let _ = writeln!(
            std::io::stderr(),
            "stpreset: internal error: {what} (please report it with the input that caused it)"
        );
    }));
    std::panic::catch_unwind(cli::main).unwrap_or(ExitCode::from(70))
}
