//! A `Chat` changed by a sequence of splices, sets, keeps and renders (see `checks::chat`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::chat(data));
