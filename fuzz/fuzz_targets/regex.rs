//! One regex script (pattern, flags, replacement, trim string) over one text, in every pass.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::regex(data));
