//! The CLI path: import, compile, render, audit, diagnostics printed in text and JSON with bounded output.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::cli(data));
