//! Arbitrary bytes imported as a preset (legacy fields included); identifiers stay unique.
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::import(data));
