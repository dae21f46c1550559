//! A preset, a card and a chat file under `layout: "sillytavern"` (see `checks::st_layout`).
#![no_main]

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::st_layout(data));
