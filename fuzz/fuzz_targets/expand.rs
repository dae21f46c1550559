//! An arbitrary template rendered as a lone node against a fixed context.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::expand(data));
