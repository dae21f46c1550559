//! Character card bytes, as PNG and as JSON (see `checks::card`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::card(data));
