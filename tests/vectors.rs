//! The repository's copy of the public conformance vectors (`tests/vectors/`) is the shared
//! one (`../shared/conformance/`), file for file and byte for byte: `scripts/sync-vectors`
//! brings a change over. Skipped, with a visible message, without `../shared` (a fresh clone
//! runs the copies, which is what they are for).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json"))
        .collect()
}

#[test]
fn the_vectors_here_are_the_shared_ones() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.join("../shared/conformance");
    let here = root.join("tests/vectors");
    if !shared.exists() {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED: {} not found: tests/vectors/ is not compared with ../shared",
            shared.display()
        );
        return;
    }
    assert_eq!(
        names(&here),
        names(&shared),
        "tests/vectors/ and ../shared/conformance/ hold different files: run scripts/sync-vectors"
    );
    for name in names(&here) {
        let (a, b) = (
            std::fs::read(here.join(&name)).unwrap(),
            std::fs::read(shared.join(&name)).unwrap(),
        );
        assert!(
            a == b,
            "tests/vectors/{name} differs from ../shared: run scripts/sync-vectors"
        );
    }
}
