//! Hostile inputs driven through the binary, as a stranger's preset reaches a bot's scripts:
//! no internal error (exit 70) or abort, inputs capped, output within a constant factor of
//! the input. (Time is measured in `benches/hostile.rs`; the inputs here that used to be
//! quadratic took minutes, so a regression shows as a hung test.)

use std::io::Read;
use std::path::PathBuf;
use std::process::{Output, Stdio};

mod support;

use support::{arg as s, bin, stpreset as run, temp, text};

fn history_context() -> PathBuf {
    temp(
        "history.json",
        br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#,
    )
}

#[test]
fn legacy_identifier_clash_with_multibyte_content_does_not_panic() {
    let preset = temp(
        "clash.json",
        r#"{"prompts":[{"identifier":"legacyPostHistory","content":"aéééé"},{"identifier":"chatHistory","marker":true}],"post_history":"a{{x}}"}"#.as_bytes(),
    );
    let ctx = history_context();
    for args in [
        vec!["render", s(&preset), "--context", s(&ctx)],
        vec![
            "render",
            s(&preset),
            "--context",
            s(&ctx),
            "--format",
            "json",
        ],
        vec!["audit", s(&preset)],
        vec!["audit", s(&preset), "--format", "json"],
    ] {
        let out = run(&args, None);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(!text(&out.stderr).contains("internal error"));
    }
    let out = run(&["render", s(&preset), "--context", s(&ctx)], None);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("### system (node legacyPostHistory)\naéééé"),
        "{stdout}"
    );
    assert!(stdout.contains("[System: a{{x}}]"), "{stdout}");
    // The diagnostic points into the post-history node's own text, under its own identifier.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("#legacyPostHistory_2:1:2"), "{stderr}");
    assert!(stderr.contains("1 | a{{x}}"), "{stderr}");
}

#[test]
fn a_story_string_of_many_placeholders_imports() {
    // 80k placeholders (0.8 MB) took 347 s when each one rescanned the story.
    let story = "{{system}}".repeat(80_000);
    let preset =
        serde_json::json!({"context": {"story_string": story}, "sysprompt": {"content": "S"}});
    let path = temp("story.json", preset.to_string().as_bytes());
    let out = run(&["render", s(&path)], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "### system (node main)\nS\n");
}

#[test]
fn datetimeformat_with_many_unmatched_brackets_renders() {
    let tpl = format!("{{{{datetimeformat::{}}}}}", "[".repeat(400_000));
    let out = run(
        &["expand", "-", "--now", "2026-11-29T17:07:00Z"],
        Some(tpl.as_bytes()),
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout, "[".repeat(400_000).as_bytes());
}

/// Total bytes a command writes, stdout and stderr.
fn output_len(out: &Output) -> usize {
    out.stdout.len() + out.stderr.len()
}

#[test]
fn output_stays_within_a_constant_factor_of_the_input() {
    // Amplification shapes: many diagnostics on one long line, many nodes with diagnostics,
    // nested unknown macros (each one quotes its own text), long identifiers.
    let one_line = "{{x}}".repeat(40_000);
    let nested = format!("{}{}", "{{x::".repeat(60), "}}".repeat(60)).repeat(500);
    let id = "i".repeat(256);
    let presets = [
        serde_json::json!({"prompts": [{"identifier": "a", "content": one_line}]}),
        serde_json::json!({"prompts": (0..4000).map(|i| serde_json::json!(
            {"identifier": format!("n{i}"), "content": "{{x}}{{y}}"})).collect::<Vec<_>>()}),
        serde_json::json!({"prompts": [{"identifier": "a", "content": nested}]}),
        serde_json::json!({"prompts": [{"identifier": id, "content": "{{x}}".repeat(20_000)}]}),
    ];
    for (i, preset) in presets.iter().enumerate() {
        let bytes = preset.to_string().into_bytes();
        let path = temp(&format!("amp{i}.json"), &bytes);
        let template = temp(&format!("amp{i}.txt"), one_line.as_bytes());
        for args in [
            vec!["render", s(&path)],
            vec!["render", s(&path), "--format", "json"],
            vec!["audit", s(&path)],
            vec!["audit", s(&path), "--format", "json"],
            vec!["expand", s(&template)],
            vec!["expand", s(&template), "--format", "json"],
        ] {
            let out = run(&args, None);
            assert_eq!(out.status.code(), Some(0), "{args:?}");
            let input = bytes.len().max(one_line.len());
            // Text formats print at most 200 diagnostics; JSON lists every one, each of
            // bounded size (an identifier is at most 256 bytes, quoted text is cut).
            let factor = if args.contains(&"json") { 120 } else { 3 };
            assert!(
                output_len(&out) <= factor * input + 400_000,
                "{args:?} (preset {i}): {} bytes out for {input} in",
                output_len(&out)
            );
        }
    }
}

#[test]
fn text_diagnostics_are_capped_with_a_count_of_the_rest() {
    let path = temp("many.txt", "{{x}}".repeat(40_000).as_bytes());
    let out = run(&["expand", s(&path)], None);
    let stderr = text(&out.stderr);
    assert_eq!(stderr.matches("info[UnknownMacro]").count(), 20);
    assert!(
        stderr.contains("… and 39980 more diagnostics not shown"),
        "{stderr}"
    );
    let out = run(&["expand", s(&path), "--format", "json"], None);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(40_000));
}

#[test]
fn closed_pipes_end_quietly() {
    let nodes: Vec<_> = (0..1000)
        .map(|i| serde_json::json!({"identifier": format!("n{i}"), "content": "x".repeat(2000)}))
        .collect();
    let path = temp(
        "big.json",
        serde_json::json!({"prompts": nodes}).to_string().as_bytes(),
    );
    for format in ["text", "json"] {
        // `stpreset render big.json | head -c 1`: stdout closes after one byte.
        let mut child = bin()
            .args(["render", s(&path), "--format", format])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("runs");
        let mut stdout = child.stdout.take().expect("stdout");
        let mut one = [0u8; 1];
        stdout.read_exact(&mut one).expect("first byte");
        drop(stdout);
        let out = child.wait_with_output().expect("waits");
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(out.stderr.is_empty(), "{}", text(&out.stderr));
    }
    // Diagnostics to a closed stderr (`2>&- ` or a reader that went away).
    let diag = temp("diag.txt", "{{x}}".repeat(40_000).as_bytes());
    let mut child = bin()
        .args(["expand", s(&diag)])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("runs");
    drop(child.stderr.take());
    assert_eq!(child.wait().expect("waits").code(), Some(0));
}

#[test]
fn every_input_is_capped_at_2_mib() {
    let big = vec![b'x'; (2 << 20) + 1];
    let path = temp("big.txt", &big);
    let ctx = temp("bigctx.json", &big);
    for (args, stdin) in [
        (vec!["expand", s(&path)], None),
        (vec!["expand", "-"], Some(&big[..])),
        (vec!["expand"], Some(&big[..])),
        (vec!["render", s(&path)], None),
        (vec!["audit", s(&path)], None),
        (vec!["expand", "-", "--context", s(&ctx)], Some(&b"x"[..])),
    ] {
        let out = run(&args, stdin);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains("over the limit of 2097152 bytes"),
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    let exact = vec![b'x'; 2 << 20];
    let out = run(&["expand", "-"], Some(&exact));
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(out.stdout.len(), 2 << 20);
}

#[test]
fn numbers_and_encodings() {
    let preset = temp(
        "num.json",
        br#"{"prompts":[{"identifier":"a","content":"x","injection_position":1,"injection_depth":1e309,"injection_order":-1e309}]}"#,
    );
    let out = run(&["audit", s(&preset)], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let fractional = temp(
        "frac.json",
        br#"{"prompts":[{"identifier":"a","content":"x","injection_depth":2.5}]}"#,
    );
    let out = run(&["audit", s(&fractional)], None);
    assert_eq!(out.status.code(), Some(1));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("prompt a: field `injection_depth`"),
        "{stderr}"
    );

    let mut bom = b"\xEF\xBB\xBF".to_vec();
    bom.extend_from_slice(br#"{"prompts":[{"identifier":"a","content":"{{user}}"}]}"#);
    let preset = temp("bom.json", &bom);
    let mut ctx = b"\xEF\xBB\xBF".to_vec();
    ctx.extend_from_slice(br#"{"user": "Alice"}"#);
    let ctx = temp("bomctx.json", &ctx);
    let out = run(&["render", s(&preset), "--context", s(&ctx)], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "### system (node a)\nAlice\n");

    let huge = "9".repeat(400);
    let tpl = format!("{{{{setvar::k::{huge}}}}}{{{{addvar::k::1}}}}{{{{getvar::k}}}}");
    let out = run(&["expand", "-"], Some(tpl.as_bytes()));
    assert_eq!(text(&out.stdout), format!("{huge}1"));

    for (content, found) in [("5", "a number"), ("[]", "an array"), ("null", "null")] {
        let ctx = temp("notobj.json", content.as_bytes());
        let out = run(&["expand", "-", "--context", s(&ctx)], Some(b"x"));
        assert_eq!(out.status.code(), Some(1));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "the context file must be a JSON object, found {found}"
            )),
            "{stderr}"
        );
    }
}

#[test]
fn control_characters_never_reach_the_terminal() {
    let preset = temp(
        "ctl.json",
        "{\"prompts\":[{\"identifier\":\"a\\n\\u001b[31mRED\\u0007\",\"content\":\"{{x}}\\u001b]0;t\\u0007\"}]}"
            .as_bytes(),
    );
    for args in [vec!["render", s(&preset)], vec!["audit", s(&preset)]] {
        let out = run(&args, None);
        assert_eq!(out.status.code(), Some(0));
        for stream in [&out.stdout, &out.stderr] {
            assert!(
                !stream.iter().any(|&b| b == 0x1b || b == 0x07),
                "{args:?}: {:?}",
                text(stream)
            );
        }
        assert!(
            text(&out.stderr).contains("\\u{1b}[31mRED"),
            "{}",
            text(&out.stderr)
        );
    }
    // A newline in an identifier cannot forge a header line.
    let out = run(&["render", s(&preset)], None);
    assert_eq!(
        text(&out.stdout)
            .lines()
            .filter(|l| l.starts_with("###"))
            .count(),
        1
    );
}
