//! What a newcomer meets first (issue 23): the README's commands run as written, the CLI
//! synopsis and `--help` agree, every Markdown file renders, inputs and errors say what they
//! are, and the surprises of a render come with a diagnostic.

/// A skip message the test harness does not capture: it shows in a plain `cargo test`.
macro_rules! skipped {
    ($($t:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($t)*);
    }};
}

mod support;

use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use stpreset::{Context, DiagnosticKind, Preset};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(root().join("README.md")).expect("README.md")
}

/// The fenced blocks of a Markdown text with their info string: `(lang, body)`.
fn blocks(md: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in md.lines() {
        let fence = line.trim_start().strip_prefix("```");
        match (&mut open, fence) {
            (None, Some(info)) => open = Some((info.trim().to_string(), String::new())),
            (Some(_), Some(_)) => out.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    out
}

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if path.is_dir() {
            if !["target", "node_modules", ".git", ".venv"].contains(&name.as_ref()) {
                markdown_files(&path, out);
            }
        } else if name.ends_with(".md") {
            out.push(path);
        }
    }
}

#[test]
fn every_markdown_file_closes_its_fences() {
    let mut files = Vec::new();
    markdown_files(&root(), &mut files);
    assert!(files.len() >= 5, "{files:?}");
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert!(fences % 2 == 0, "{}: {fences} fence lines", f.display());
    }
}

/// Splits a README command line into arguments (words; the README uses no quoting).
fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn the_readme_commands_run_as_written() {
    let shared = root().join("../shared/corpus/presets").exists();
    let (mut ran, mut skipped) = (0, 0);
    for (lang, body) in blocks(&readme()) {
        if lang != "sh" {
            continue;
        }
        for line in body.lines() {
            let args = match line.trim() {
                l if l.starts_with("stpreset ") => words(&l["stpreset ".len()..]),
                l if l.starts_with("cargo run --release -- ") => {
                    words(&l["cargo run --release -- ".len()..])
                }
                _ => continue,
            };
            if !shared && line.contains("../shared") {
                skipped!("SKIPPED (../shared absent): {line}");
                skipped += 1;
                continue;
            }
            let out = support::bin()
                .args(&args)
                .current_dir(root())
                .output()
                .expect("runs");
            assert!(
                out.status.success(),
                "`{line}` failed: {}",
                support::text(&out.stderr)
            );
            assert!(!out.stdout.is_empty(), "`{line}` printed nothing");
            ran += 1;
        }
    }
    // Without `../shared` (a fresh clone elsewhere) the commands that read it are skipped,
    // not failed: the README still has to show at least two.
    assert!(
        ran + skipped >= 2,
        "only {} README commands found",
        ran + skipped
    );
}

/// The long options `stpreset ARGS -h` lists, each with whether it has a description.
fn options(args: &[&str]) -> Vec<(String, bool)> {
    let out = support::stpreset(args, None);
    let help = support::text(&out.stdout);
    let mut in_options = false;
    let mut found = Vec::new();
    for line in help.lines() {
        if line.starts_with("Options:") {
            in_options = true;
            continue;
        }
        let t = line.trim_start();
        if !in_options || !t.starts_with('-') {
            continue;
        }
        let Some(flag) = t.split_whitespace().find(|w| w.starts_with("--")) else {
            continue;
        };
        let flag = flag.trim_end_matches(',').to_string();
        if flag == "--help" {
            continue;
        }
        // After the flag and its value name, two or more spaces, then the description.
        let rest = t.split_once("  ").map_or("", |(_, r)| r.trim());
        let described =
            !rest.is_empty() && !rest.starts_with("[default") && !rest.starts_with("[possible");
        found.push((flag, described));
    }
    found
}

#[test]
fn help_describes_every_option_and_the_readme_lists_them() {
    let readme = readme();
    let synopsis = blocks(&readme)
        .into_iter()
        .find(|(lang, body)| lang == "text" && body.contains("stpreset render PRESET.json"))
        .map(|(_, body)| body)
        .expect("the README's command-line synopsis");
    let mut commands = vec![
        vec!["render", "-h"],
        vec!["audit", "-h"],
        vec!["expand", "-h"],
        vec!["regex", "-h"],
        vec!["store", "--db", "x", "--server", "1", "list", "-h"],
        vec!["store", "--db", "x", "--server", "1", "render", "-h"],
        vec!["store", "--db", "x", "--server", "1", "import", "-h"],
    ];
    if cfg!(feature = "serve") {
        commands.push(vec!["serve", "-h"]);
    }
    for command in commands {
        let found = options(&command);
        assert!(!found.is_empty(), "{command:?}: no options parsed");
        for (flag, described) in found {
            assert!(described, "{command:?}: {flag} has no description");
            if command[0] != "store" {
                let line = synopsis
                    .lines()
                    .skip_while(|l| !l.starts_with(&format!("stpreset {}", command[0])))
                    .take_while(|l| {
                        l.starts_with(&format!("stpreset {}", command[0])) || l.starts_with(' ')
                    })
                    .collect::<String>();
                assert!(
                    line.contains(&flag),
                    "README synopsis of `{}` lacks {flag}",
                    command[0]
                );
            }
        }
    }
    // Store commands are listed in the README's store section.
    for flag in ["--db", "--server", "--name", "--context", "--format"] {
        assert!(readme.contains(&format!("stpreset store {flag}")) || readme.contains(flag));
    }
}

#[test]
fn dash_reads_standard_input_for_the_preset_and_the_context() {
    let preset = std::fs::read(root().join("examples/preset.json")).unwrap();
    let ctx = support::temp("ctx-dash.json", b"{\"char\": \"Tomori\"}");
    let out = support::stpreset(
        &[
            "render",
            "-",
            "--context",
            support::arg(&ctx),
            "--format",
            "json",
        ],
        Some(&preset),
    );
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let p = support::temp("preset-dash.json", &preset);
    let out = support::stpreset(
        &["render", support::arg(&p), "--context", "-"],
        Some(b"{\"char\": \"Tomori\"}"),
    );
    assert!(support::text(&out.stdout).contains("Tomori"));
    let out = support::stpreset(&["render", "-", "--context", "-"], Some(b"{}"));
    assert_eq!(out.status.code(), Some(1));
    assert!(support::text(&out.stderr).contains("only one input"));
}

#[test]
fn errors_say_which_input_and_what_was_expected() {
    let out = support::stpreset(&["render", "no-such-preset.json"], None);
    assert!(support::text(&out.stderr).contains("cannot read the preset file"));
    let p = root().join("examples/preset.json");
    let out = support::stpreset(
        &[
            "render",
            p.to_str().unwrap(),
            "--context",
            "no-such-context.json",
        ],
        None,
    );
    assert!(support::text(&out.stderr).contains("cannot read the context file"));
    let out = support::stpreset(&["render", p.to_str().unwrap(), "--now", "yesterday"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(support::text(&out.stderr).contains("e.g. 2026-11-29T17:07:00Z"));
    for bad in [
        json!({"now": "2026-01-01"}),
        json!({"items": [{"role": "user", "text": "x", "time": "noon"}]}),
    ] {
        let err = Context::from_json(bad.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("expected an RFC 3339 time, e.g. 2026-11-29T17:07:00Z"),
            "{err}"
        );
    }
    let err = Context::from_json(br#"{"provider_options": {"temprature": 1}}"#)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("temprature") && err.contains("temperature, top_p"),
        "{err}"
    );
}

#[test]
fn audit_can_write_one_stream() {
    let p = support::temp(
        "audit-one-stream.json",
        br#"{"prompts": [{"identifier": "main", "content": "{{nope}}"}]}"#,
    );
    let out = support::stpreset(&["audit", support::arg(&p), "--stdout"], None);
    let stdout = support::text(&out.stdout);
    assert!(
        stdout.contains("UnknownMacro") && stdout.contains("0 warnings, 1 note"),
        "{stdout}"
    );
    assert!(out.stderr.is_empty());
}

fn render(preset: Value, ctx: Value) -> stpreset::Rendered<'static> {
    let preset = Preset::from_json(preset.to_string().as_bytes()).unwrap();
    let ctx = Box::leak(Box::new(
        Context::from_json(ctx.to_string().as_bytes()).unwrap(),
    ));
    preset.compile().render(ctx)
}

#[test]
fn items_without_an_anchor_are_reported() {
    let preset = json!({"prompts": [
        {"identifier": "main", "content": "Main", "enabled": false},
        {"identifier": "rules", "content": "Rules"},
        {"identifier": "chatHistory", "marker": true}]});
    let items = json!([
        {"tag": "SYSTEM_CHANNEL_PROMPT", "role": "system", "text": "Channel"},
        {"tag": "KNOWLEDGE_SERVER_MEMORIES", "role": "system", "text": "Memory"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"},
        {"role": "system", "text": "untagged, last by design"}]);
    let out = render(preset.clone(), json!({"items": items}));
    let found: Vec<&str> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::UnanchoredItems)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(found.len(), 1, "{:?}", out.diagnostics);
    assert!(found[0].contains("KNOWLEDGE_SERVER_MEMORIES, SYSTEM_CHANNEL_PROMPT"));
    // With `main` walked, nothing to report.
    let mut anchored = preset;
    anchored["prompts"][0]["enabled"] = json!(true);
    let out = render(anchored, json!({"items": items}));
    assert!(
        out.diagnostics
            .iter()
            .all(|d| d.kind != DiagnosticKind::UnanchoredItems)
    );
}

#[test]
fn an_empty_name_is_noted_once_per_render() {
    let preset = json!({"prompts": [
        {"identifier": "main", "content": "You are {{char}}, with {{user}}."},
        {"identifier": "more", "content": "{{char}} again"}]});
    let out = render(preset.clone(), json!({"user": "Alice"}));
    let empty: Vec<_> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::EmptyName)
        .collect();
    assert_eq!(empty.len(), 1, "{:?}", out.diagnostics);
    assert_eq!(empty[0].node.as_deref(), Some("main"));
    assert!(empty[0].message.contains("`{{char}}`"));
    let out = render(preset, json!({"user": "Alice", "char": "Tomori"}));
    assert!(
        out.diagnostics
            .iter()
            .all(|d| d.kind != DiagnosticKind::EmptyName)
    );
}

/// A JSON value whose objects all have their keys in byte order (SPEC §16), or an error naming
/// the first pair out of order.
struct Sorted;

impl<'de> serde::Deserialize<'de> for Sorted {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Sorted, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Sorted;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_bool<E>(self, _: bool) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_i64<E>(self, _: i64) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_u64<E>(self, _: u64) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_str<E>(self, _: &str) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_unit<E>(self) -> Result<Sorted, E> {
                Ok(Sorted)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut s: A) -> Result<Sorted, A::Error> {
                while s.next_element::<Sorted>()?.is_some() {}
                Ok(Sorted)
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Sorted, A::Error> {
                let mut last: Option<String> = None;
                while let Some(k) = m.next_key::<String>()? {
                    if let Some(prev) = &last
                        && prev.as_str() >= k.as_str()
                    {
                        return Err(serde::de::Error::custom(format!("`{prev}` before `{k}`")));
                    }
                    m.next_value::<Sorted>()?;
                    last = Some(k);
                }
                Ok(Sorted)
            }
        }
        d.deserialize_any(V)
    }
}

#[test]
fn every_printed_document_has_sorted_keys() {
    assert!(serde_json::from_str::<Sorted>(r#"{"a": [{"b": 1, "a": 2}]}"#).is_err());
    let preset = root().join("examples/preset.json");
    let ctx = root().join("examples/context.json");
    let (p, c) = (preset.to_str().unwrap(), ctx.to_str().unwrap());
    for args in [
        vec!["render", p, "--context", c, "--format", "json"],
        vec![
            "render",
            p,
            "--context",
            c,
            "--format",
            "json",
            "--shape",
            "anthropic",
        ],
        vec!["render", p, "--context", c, "--shape", "google"],
        vec!["audit", p, "--format", "json"],
        vec!["expand", "--format", "json"],
    ] {
        let out = support::stpreset(&args, Some(b"{{user}} {{nope}}"));
        assert!(out.status.success(), "{args:?}");
        if let Err(e) = serde_json::from_slice::<Sorted>(&out.stdout) {
            panic!("{args:?}: {e}");
        }
    }
}

#[test]
fn regex_scripts_not_allowed_are_said_not_to_run() {
    let p = Preset::from_json(
        br#"{"extensions": {"regex_scripts": [{"findRegex": "/a/g"}, {}]},
             "prompts": [{"identifier": "main", "content": "Hi"}]}"#,
    )
    .unwrap();
    assert_eq!(p.regex_scripts().len(), 2);
    let ctx = Context::default();
    let notes: Vec<_> = p
        .compile()
        .render(&ctx)
        .diagnostics
        .into_iter()
        .filter(|d| d.kind == DiagnosticKind::RegexNotAllowed)
        .collect();
    assert_eq!(notes.len(), 1);
    assert!(
        notes[0]
            .message
            .contains("the context does not allow them (`allow_preset_regex`)"),
        "{}",
        notes[0].message
    );
    for none in [
        r#"{}"#,
        r#"{"regex_scripts": []}"#,
        r#"{"regex_scripts": null}"#,
    ] {
        let text = format!(r#"{{"extensions": {none}, "prompts": [{{"identifier": "main"}}]}}"#);
        let p = Preset::from_json(text.as_bytes()).unwrap();
        assert!(p.diagnostics().is_empty(), "{none}");
        assert!(p.compile().render(&ctx).diagnostics.is_empty(), "{none}");
    }
    let p = Preset::from_json(
        br#"{"extensions": {"regex_scripts": "x"}, "prompts": [{"identifier": "main"}]}"#,
    )
    .unwrap();
    assert_eq!(p.diagnostics()[0].kind, DiagnosticKind::RegexScriptInvalid);
}

#[test]
fn the_store_renders_requests_and_names_stdin_imports() {
    let db = support::temp("newcomer-store.sqlite", b"");
    std::fs::remove_file(&db).unwrap();
    let db = support::arg(&db).to_string();
    let preset = std::fs::read(root().join("examples/preset.json")).unwrap();
    let base = ["store", "--db", db.as_str(), "--server", "7"];
    let run = |extra: &[&str], stdin: Option<&[u8]>| {
        let args: Vec<&str> = base.iter().chain(extra).copied().collect();
        support::stpreset(&args, stdin)
    };
    let out = run(&["import", "-"], Some(&preset));
    assert_eq!(out.status.code(), Some(1));
    assert!(support::text(&out.stderr).contains("--name"));
    assert!(
        run(&["import", "-", "--name", "sample"], Some(&preset))
            .status
            .success()
    );
    let out = run(
        &[
            "render",
            "--shape",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
        ],
        None,
    );
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    let body: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(body["model"], "claude-sonnet-4-5");
    assert!(body["messages"].is_array());
}

#[test]
fn context_type_errors_name_the_field() {
    for (bad, path) in [
        (json!({"user": 5}), "`user`"),
        (
            json!({"items": [{"role": "user", "txt": "x"}]}),
            "`items[0].txt`",
        ),
        (
            json!({"items": [{"role": "user"}, {"role": "bot"}]}),
            "`items[1].role`",
        ),
    ] {
        let err = Context::from_json(bad.to_string().as_bytes())
            .unwrap_err()
            .to_string();
        assert!(err.contains(path), "{bad}: {err}");
    }
}

/// Issue 39: a SillyTavern file that is not a chat-completion preset says what it is and what
/// to export instead.
#[test]
fn other_sillytavern_files_are_named() {
    for (json, kind) in [
        (
            r#"{"temp": 0.7, "rep_pen": 1.1, "top_p": 0.9}"#,
            "text-completion sampler preset",
        ),
        (
            r#"{"name": "Alpaca", "input_sequence": "Instruction:", "output_sequence": "Response:"}"#,
            "instruct template",
        ),
        (
            r#"{"name": "Default", "story_string": "{{description}}", "example_separator": "***"}"#,
            "context template",
        ),
        (r#"{"instruct": {}, "context": {}}"#, "master export"),
        (
            r#"{"openai_model": "gpt-4o", "prompts": []}"#,
            "`prompts` list is missing or empty",
        ),
        (
            r#"{"name": "Neutral", "content": "Write {{char}}'s next reply."}"#,
            "system prompt",
        ),
    ] {
        let err = Preset::from_json(json.as_bytes()).unwrap_err();
        assert_eq!(err.kind(), "NotAPreset");
        let msg = err.to_string();
        assert!(
            msg.contains(kind) && msg.contains("chat-completion"),
            "{json}: {msg}"
        );
    }
    let msg = Preset::from_json(br#"{"x": 1}"#).unwrap_err().to_string();
    assert!(msg.contains("no non-empty `prompts` array"), "{msg}");
}
