//! An arbitrary preset (and optionally a context) imported, compiled, rendered and audited.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::render(data));
