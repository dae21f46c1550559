//! World Info activation over a fuzzed lorebook and chat (see `checks::lore`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::lore(data));
