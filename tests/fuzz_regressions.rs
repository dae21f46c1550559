//! Replays every input under `tests/fuzz-regressions/<target>/` through the same invariants the
//! fuzz targets assert (`fuzz/checks.rs`). Every crash a fuzzer finds lands here as a file.

use std::path::PathBuf;

#[path = "../fuzz/checks.rs"]
mod checks;

fn replay(target: &str, check: fn(&[u8])) {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fuzz-regressions")
        .join(target);
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).expect("regression folder exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            continue;
        }
        let data = std::fs::read(&path).unwrap();
        // A panic names the file through the test's failure output.
        eprintln!("replaying {}", path.display());
        check(&data);
        n += 1;
    }
    assert!(n > 0, "no regression inputs for {target}");
}

#[test]
fn parse_regressions() {
    replay("parse", checks::parse);
}

#[test]
fn expand_regressions() {
    replay("expand", checks::expand);
}

#[test]
fn render_regressions() {
    replay("render", checks::render);
}

#[test]
fn import_regressions() {
    replay("import", checks::import);
}

#[test]
fn cli_regressions() {
    replay("cli", checks::cli);
}

#[test]
fn regex_regressions() {
    replay("regex", checks::regex);
}

#[test]
fn chat_regressions() {
    replay("chat", checks::chat);
}

#[test]
fn lore_regressions() {
    replay("lore", checks::lore);
}

#[test]
fn card_regressions() {
    replay("card", checks::card);
}

#[test]
fn st_layout_regressions() {
    replay("st_layout", checks::st_layout);
}
