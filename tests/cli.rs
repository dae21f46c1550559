//! `stpreset expand` driven from outside, as scripts and people use it (SPEC §9).

mod support;

use support::{arg, stpreset, temp, text};

#[test]
fn expand_text_prints_exactly_the_text() {
    let tpl = temp("a.txt", b"Hi {{user}}{{else}}!");
    let ctx = temp("a.json", br#"{"user": "Alice"}"#);
    let out = stpreset(
        &[
            "expand",
            tpl.to_str().unwrap(),
            "--context",
            ctx.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(text(&out.stdout), "Hi Alice!");
    let err = text(&out.stderr);
    assert!(err.contains("warning[StrayElse]"), "{err}");
    assert!(err.contains("a.txt:1:12"), "{err}");
    assert!(err.contains("^^^^^^^^"), "{err}");
}

#[test]
fn expand_json_and_stdin() {
    let out = stpreset(
        &[
            "expand",
            "-",
            "--format",
            "json",
            "--seed",
            "5",
            "--now",
            "2026-11-29T17:07:00Z",
        ],
        Some(b"{{setvar::k::v}}{{isodate}} {{foo}}"),
    );
    assert_eq!(out.status.code(), Some(0));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["text"], "2026-11-29 {{foo}}");
    assert_eq!(v["variables"]["k"], "v");
    let d = &v["diagnostics"][0];
    assert_eq!(d["severity"], "info");
    assert_eq!(d["kind"], "UnknownMacro");
    assert_eq!(d["node"], "template");
    assert_eq!(d["span"], serde_json::json!([28, 35]));
    assert_eq!(
        (d["line"].as_u64(), d["column"].as_u64()),
        (Some(1), Some(29))
    );
    assert!(out.stderr.is_empty());
}

#[test]
fn seed_and_now_override_the_context_file() {
    let ctx = temp("s.json", br#"{"seed": 1, "now": "2020-01-01T00:00:00Z"}"#);
    let run = |seed: &str| {
        let out = stpreset(
            &[
                "expand",
                "-",
                "--context",
                ctx.to_str().unwrap(),
                "--seed",
                seed,
                "--now",
                "2026-11-29T17:07:00+02:00",
            ],
            Some(b"{{isodate}} {{isotime}} {{roll:1d1000000}}"),
        );
        text(&out.stdout)
    };
    assert!(run("9").starts_with("2026-11-29 15:07 "));
    assert_eq!(run("9"), run("9"));
}

#[test]
fn bad_inputs_exit_1_with_one_line() {
    let ctx = temp("bad.json", br#"{"user": "A", "colour": "red"}"#);
    let out = stpreset(
        &["expand", "-", "--context", ctx.to_str().unwrap()],
        Some(b"x"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("colour") && err.contains("bad.json"), "{err}");

    let out = stpreset(&["expand", "/nonexistent/t.txt"], None);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(text(&out.stderr).lines().count(), 1);

    let out = stpreset(&["expand", "-"], Some(b"ok \xff"));
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("UTF-8"));
}

#[test]
fn bad_usage_exits_2() {
    assert_eq!(
        stpreset(&["expand", "--format", "yaml"], Some(b""))
            .status
            .code(),
        Some(2)
    );
    assert_eq!(
        stpreset(&["expand", "--now", "yesterday"], Some(b""))
            .status
            .code(),
        Some(2)
    );
    assert_eq!(stpreset(&["frobnicate"], None).status.code(), Some(2));
}

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn render_text_and_json() {
    let preset = example("preset.json");
    let ctx = example("context.json");
    let out = stpreset(&["render", &preset, "--context", &ctx], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    assert!(
        t.starts_with("### system (node main)\nYou are Tomori"),
        "{t}"
    );
    assert!(t.contains("### model (DIALOGUE_HISTORY)\nTomori: Welcome back. The lanterns are lit.\n[System: It has started to rain.]"), "{t}");
    assert!(!t.contains("disabled in the order list"));

    let out = stpreset(
        &[
            "render",
            &preset,
            "--context",
            &ctx,
            "--format",
            "json",
            "--seed",
            "3",
        ],
        None,
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["messages"][0]["source"],
        serde_json::json!({"node": "main"})
    );
    assert_eq!(
        v["messages"][1]["source"],
        serde_json::json!({"tag": "SYSTEM_CHANNEL_PROMPT"})
    );
    assert!(v["variables"]["style"].is_string());
    assert!(v["globals"].is_object());
    assert!(v["diagnostics"].is_array());
}

#[test]
fn render_bad_preset_exits_1_naming_the_file() {
    let bad = temp(
        "bad-preset.json",
        br#"{"prompts": [{"identifier": "x", "injection_position": 7}]}"#,
    );
    let out = stpreset(&["render", bad.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("bad-preset.json")
            && err.contains("prompt x")
            && err.contains("injection_position"),
        "{err}"
    );
}

#[test]
fn audit_reports_and_exits_0() {
    let p = temp(
        "audit.json",
        br#"{"prompts": [{"identifier": "a", "content": "x\n {{#if}}y{{/if}} {{getvarkey::x}}"}]}"#,
    );
    let out = stpreset(&["audit", p.to_str().unwrap()], None);
    assert_eq!(out.status.code(), Some(0));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning[MalformedBlock]") && err.contains("audit.json#a:2:2"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("1 nodes (1 enabled), 2 warnings, 0 notes"));
    let out = stpreset(&["audit", p.to_str().unwrap(), "--format", "json"], None);
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let kinds: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["MalformedBlock", "BadArguments"]);
}

#[test]
fn render_text_names_the_sources_of_injected_messages() {
    let preset = temp(
        "separate-preset.json",
        br#"{"prompts": [{"identifier": "main", "content": "M"},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "d1", "role": "user", "content": "X", "injection_position": 1, "injection_depth": 0}]}"#,
    );
    let ctx = temp(
        "separate-context.json",
        br#"{"injection": "separate", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"},
            {"tag": "CONTEXT_CURRENT", "role": "user", "text": "rain", "depth": 0}]}"#,
    );
    let out = stpreset(&["render", arg(&preset), "--context", arg(&ctx)], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).ends_with("### user (injected: node d1, CONTEXT_CURRENT)\nX\nrain\n"),
        "{}",
        text(&out.stdout)
    );
}

#[test]
fn render_prints_provider_requests_when_a_shape_is_asked_for() {
    let preset = example("preset.json");
    let ctx = example("context.json");
    let json = |args: &[&str]| -> serde_json::Value {
        let out = stpreset(args, None);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let anthropic = json(&["render", &preset, "--context", &ctx, "--shape", "anthropic"]);
    assert!(
        anthropic["system"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("You are Tomori")
    );
    assert_eq!(anthropic["messages"][0]["role"], "user");
    let google = json(&[
        "render",
        &preset,
        "--context",
        &ctx,
        "--shape",
        "google",
        "--format",
        "json",
    ]);
    assert!(google["request"]["contents"].is_array());
    assert!(google["prompt_tokens"].is_null());
    assert!(google["diagnostics"].is_array() && google["variables"].is_object());
    // `gemini` is another name for `google`, on the command line and in the context.
    let gemini = json(&[
        "render",
        &preset,
        "--context",
        &ctx,
        "--shape",
        "gemini",
        "--format",
        "json",
    ]);
    assert_eq!(gemini, google);
    let named = temp(
        "gemini-context.json",
        br#"{"provider_options": {"shape": "gemini"}}"#,
    );
    let by_context = json(&["render", &preset, "--context", arg(&named)]);
    assert!(by_context["contents"].is_array(), "{by_context}");
    let out = stpreset(&["render", &preset, "--shape", "Gemini"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        text(&out.stderr).contains("gemini"),
        "{}",
        text(&out.stderr)
    );
    // The context's provider_options.shape asks too; --shape overrides it.
    let shaped = temp(
        "shaped-context.json",
        br#"{"provider_options": {"shape": "google", "post_processing": "strict"},
             "max_context_tokens": 4096, "tokenizer": "approx",
             "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#,
    );
    let out = json(&[
        "render",
        &preset,
        "--context",
        arg(&shaped),
        "--format",
        "json",
    ]);
    assert!(out["request"]["contents"].is_array());
    assert!(out["prompt_tokens"].as_u64().is_some());
    let out = json(&[
        "render",
        &preset,
        "--context",
        arg(&shaped),
        "--shape",
        "openai",
    ]);
    assert!(out["messages"].is_array());
    // Without a shape the messages print as before, with prompt_tokens in JSON.
    let plain = json(&["render", &preset, "--context", &ctx, "--format", "json"]);
    assert!(plain["messages"].is_array() && plain["prompt_tokens"].is_null());
}

#[test]
fn bad_provider_options_name_the_field() {
    let preset = example("preset.json");
    for (ctx, field) in [
        (r#"{"provider_options": {"cache_ttl": "300"}}"#, "cache_ttl"),
        (r#"{"provider_options": {"shap": "google"}}"#, "shap"),
        (r#"{"max_context_tokens": 2.5}"#, "max_context_tokens"),
        (r#"{"reserve_tokens": -1}"#, "reserve_tokens"),
        (r#"{"tokenizer": "gpt2"}"#, "tokenizer"),
        (r#"{"provider_options": []}"#, "`provider_options`"),
    ] {
        let path = temp("bad-provider.json", ctx.as_bytes());
        let out = stpreset(&["render", &preset, "--context", arg(&path)], None);
        assert_eq!(out.status.code(), Some(1), "{ctx}");
        let err = text(&out.stderr);
        assert!(
            err.contains(field) && err.lines().count() == 1,
            "{ctx}: {err}"
        );
    }
    let out = stpreset(&["render", &preset, "--shape", "cohere"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// The CLI prints the library's JSON documents, byte for byte (SPEC §9: one contract for every
/// front end).
#[test]
fn json_output_is_the_library_json_byte_for_byte() {
    use stpreset::{Context, Preset, Shape, Template};
    let preset_path = example("preset.json");
    let ctx_path = example("context.json");
    let now = "2026-11-29T17:07:00Z";
    let preset = Preset::from_json(&std::fs::read(&preset_path).unwrap()).unwrap();
    let mut ctx = Context::from_json(&std::fs::read(&ctx_path).unwrap()).unwrap();
    ctx.now = Some(now.parse().unwrap());
    let cli = |args: &[&str], stdin: Option<&[u8]>| {
        let out = stpreset(args, stdin);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let rendered = preset.compile().render(&ctx);
    let common = [
        "--context",
        ctx_path.as_str(),
        "--now",
        now,
        "--format",
        "json",
    ];
    let render_args: Vec<&str> = ["render", preset_path.as_str()]
        .iter()
        .chain(&common)
        .copied()
        .collect();
    assert_eq!(cli(&render_args, None), rendered.to_json() + "\n");
    let mut options = ctx.provider_options.clone();
    options.shape = Some(Shape::Anthropic);
    let mut shaped = render_args.clone();
    shaped.extend(["--shape", "anthropic"]);
    assert_eq!(
        cli(&shaped, None),
        rendered.to_request_json(&options) + "\n"
    );
    assert_eq!(
        cli(&["audit", &preset_path, "--format", "json"], None),
        preset.audit_json() + "\n"
    );
    let template = "{{setvar::k::{{user}}}}{{getvar::k}} {{foo}} {{time}}";
    let expand_args: Vec<&str> = ["expand", "-"].iter().chain(&common).copied().collect();
    assert_eq!(
        cli(&expand_args, Some(template.as_bytes())),
        Template::compile(template).render(&ctx).to_json() + "\n"
    );
}

/// Issue 39: `regex` runs the host's own scripts (`--regex`), the preset's and the card's
/// (`--card`, with `--allow-char-regex`), in SillyTavern's order (`render` has the same flags).
#[test]
fn regex_runs_global_preset_and_card_scripts() {
    let mark =
        |m: &str| format!(r#"{{"findRegex": "/$/", "replaceString": "{m}", "placement": [2]}}"#);
    let preset = temp(
        "rx-preset.json",
        format!(
            r#"{{"prompts": [{{"identifier": "main", "content": "x"}}], "extensions": {{"regex_scripts": [{}]}}}}"#,
            mark("P")
        )
        .as_bytes(),
    );
    let global = temp("rx-global.json", mark("G").as_bytes());
    let card = temp(
        "rx-card.json",
        format!(
            r#"{{"spec": "chara_card_v2", "data": {{"name": "Sera", "extensions": {{"regex_scripts": [{}]}}}}}}"#,
            mark("C")
        )
        .as_bytes(),
    );
    let run = |extra: &[&str]| {
        let mut args = vec![
            "regex",
            preset.to_str().unwrap(),
            "--regex",
            global.to_str().unwrap(),
            "--card",
            card.to_str().unwrap(),
            "--allow-regex",
        ];
        args.extend_from_slice(extra);
        stpreset(&args, Some(b"t"))
    };
    let out = run(&["--allow-char-regex"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "tGPC");
    let out = run(&[]);
    assert_eq!(text(&out.stdout), "tGP");
    assert!(
        text(&out.stderr).contains("allow_char_regex"),
        "{}",
        text(&out.stderr)
    );
    let bad = temp("rx-bad.json", b"{");
    let out = stpreset(
        &[
            "regex",
            preset.to_str().unwrap(),
            "--regex",
            bad.to_str().unwrap(),
        ],
        Some(b"t"),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("rx-bad.json"),
        "{}",
        text(&out.stderr)
    );
}
