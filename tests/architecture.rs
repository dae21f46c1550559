//! The house's layer rule, checked: every module of `src/` stands on the floor that
//! `docs/architecture.md`'s table gives it, and imports only modules on lower floors (SPEC-free:
//! a rule of this codebase, issue 37). Read from the `crate::` paths of each file outside
//! `#[cfg(test)]`, so a test module may use what it likes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// `module → floor` from the table's rows `| N | `module` | … |`.
fn declared() -> BTreeMap<String, u32> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("docs/architecture.md")).unwrap();
    let mut floors = BTreeMap::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let [_, floor, module, ..] = cells.as_slice() else {
            continue;
        };
        let (Ok(floor), Some(module)) = (
            floor.parse::<u32>(),
            module.strip_prefix('`').and_then(|m| m.strip_suffix('`')),
        ) else {
            continue;
        };
        let before = floors.insert(module.to_string(), floor);
        assert!(
            before.is_none(),
            "docs/architecture.md places `{module}` twice"
        );
    }
    assert!(floors.len() > 20, "docs/architecture.md has no floor table");
    floors
}

/// The library's top-level modules (a file or a folder of `src/`): all but the front door and
/// the binary.
fn modules() -> BTreeSet<String> {
    std::fs::read_dir(Path::new(ROOT).join("src"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_name()?.to_str()?.to_string();
            match name.strip_suffix(".rs") {
                Some(stem) => Some(stem.to_string()),
                None if p.is_dir() => Some(name),
                None => None,
            }
        })
        .filter(|m| !["lib", "main", "cli"].contains(&m.as_str()))
        .collect()
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The modules `module`'s code names, with the first place it names each.
fn imports(module: &str) -> BTreeMap<String, String> {
    let src = Path::new(ROOT).join("src");
    let mut paths = Vec::new();
    let file = src.join(format!("{module}.rs"));
    let root = if file.exists() {
        file
    } else {
        src.join(module)
    };
    files(&root, &mut paths);
    let mut out = BTreeMap::new();
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap();
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("#[cfg(test)]") {
                break;
            }
            if line.starts_with("//") {
                continue;
            }
            let at = || format!("{}:{}", path.strip_prefix(ROOT).unwrap().display(), n + 1);
            assert!(
                !line.contains("crate::{"),
                "{}: write one `crate::module::…` path per import, so the layer rule can read it",
                at()
            );
            for (i, _) in line.match_indices("crate::") {
                let rest = &line[i + "crate::".len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() && name != module {
                    out.entry(name).or_insert_with(at);
                }
            }
        }
    }
    out
}

#[test]
fn imports_run_downhill_as_docs_architecture_says() {
    let floors = declared();
    let modules = modules();
    let placed: BTreeSet<String> = floors.keys().cloned().collect();
    assert_eq!(
        modules, placed,
        "docs/architecture.md's floor table and src/ name different modules"
    );
    let mut climbs = Vec::new();
    for module in &modules {
        let floor = floors[module];
        for (target, at) in imports(module) {
            match floors.get(&target) {
                Some(&f) if f < floor => {}
                Some(&f) => climbs.push(format!(
                    "{at}: `{module}` (floor {floor}) imports `{target}` (floor {f})"
                )),
                // An item of the crate root (a re-export): the front door stands above all.
                None => climbs.push(format!(
                    "{at}: `{module}` names `crate::{target}` (the crate root): use its own module's path"
                )),
            }
        }
    }
    assert!(
        climbs.is_empty(),
        "imports that do not run downhill:\n{}",
        climbs.join("\n")
    );
}

/// The table is tight: each floor above the ground holds a module that stands on the floor
/// right below it (else the drawing has a floor the code does not).
#[test]
fn every_floor_stands_on_the_one_below() {
    let floors = declared();
    let top = floors.values().copied().max().unwrap();
    for floor in 2..=top {
        let on_it: Vec<&String> = floors
            .iter()
            .filter(|(_, f)| **f == floor)
            .map(|(m, _)| m)
            .collect();
        assert!(!on_it.is_empty(), "floor {floor} is empty");
        let stands = on_it.iter().any(|m| {
            imports(m)
                .keys()
                .any(|t| floors.get(t) == Some(&(floor - 1)))
        });
        assert!(
            stands,
            "no module of floor {floor} ({on_it:?}) imports one of floor {}",
            floor - 1
        );
    }
}
