//! Driving the `stpreset` binary from tests, as scripts and people do.
#![allow(dead_code)] // each test binary uses part of this module

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The binary, for tests that manage the child process themselves.
pub fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_stpreset"))
}

/// Runs the binary with `args`, feeding `stdin` if given, and collects its output.
pub fn stpreset(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("binary runs");
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.map(<[u8]>::to_vec);
    // Feed stdin from a thread: a large input must not deadlock against a full stdout pipe.
    let feeder = std::thread::spawn(move || {
        if let Some(data) = data {
            let _ = input.write_all(&data);
        }
    });
    let out = child.wait_with_output().expect("waits");
    feeder.join().expect("feeder");
    out
}

/// A public conformance vector file, read whole: the repository's copy in `tests/vectors/`
/// (kept equal to `../shared/conformance` by `scripts/sync-vectors`; `tests/vectors.rs` checks
/// it), so a clone without `../shared` runs every vector.
pub fn vectors(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/vectors")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Writes `content` to a file named `name` in this test binary's scratch folder.
pub fn temp(name: &str, content: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("stpreset-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, content).expect("write temp");
    path
}

/// A path as a command-line argument.
pub fn arg(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

pub fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The real presets of `../shared/corpus/presets` (file name, preset), in name order; `None`,
/// with a visible message, when `../shared` is not beside this checkout.
pub fn corpus_presets() -> Option<Vec<(String, stpreset::Preset)>> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/presets");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!(
            "SKIPPED: {} not found (../shared is not beside this checkout)",
            dir.display()
        );
        return None;
    };
    let mut presets: Vec<(String, stpreset::Preset)> = entries
        .flatten()
        .filter_map(|e| {
            let preset = stpreset::Preset::from_json(&std::fs::read(e.path()).ok()?).ok()?;
            Some((e.file_name().to_string_lossy().into_owned(), preset))
        })
        .collect();
    presets.sort_by(|a, b| a.0.cmp(&b.0));
    Some(presets)
}
