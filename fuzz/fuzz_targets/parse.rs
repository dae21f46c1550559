//! Arbitrary bytes through the grammar and the tree builder.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::parse(data));
