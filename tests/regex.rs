//! SPEC §13 (preset regex scripts): every case of the public `regex.json` vectors
//! (`tests/vectors/`) through the library — text exactly, `Regex*` diagnostics as (kind,
//! script) — and the rules' own tests.

use std::path::PathBuf;

mod support;

use serde_json::{Value, json};
use stpreset::{
    Context, DiagnosticKind, Preset, Role, options::RandomSource, passes::PassKind,
    passes::Placement, passes::RegexPass,
};

fn vectors() -> Option<Value> {
    Some(serde_json::from_slice(&support::vectors("regex.json")).expect("vector file is JSON"))
}

/// The case's scripts as a list (resolving `{"set": FILE[, "index": N]}`).
fn scripts(case: &Value, sets: &Value) -> Value {
    match &case["scripts"] {
        Value::Object(o) => {
            let set = &sets[o["set"].as_str().unwrap()];
            match o.get("index").and_then(Value::as_u64) {
                Some(i) => json!([set[i as usize]]),
                None => set.clone(),
            }
        }
        list => list.clone(),
    }
}

fn preset(scripts: Value) -> stpreset::CompiledPreset {
    let file = json!({"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": scripts}});
    Preset::from_json(file.to_string().as_bytes())
        .unwrap()
        .compile()
}

fn context(input: &Value) -> Context {
    let m = &input["macros"];
    let mut ctx = Context::from_json(
        json!({
            "user": m["user"], "char": m["char"],
            "variables": m["variables"], "globals": m["globals"],
            "allow_preset_regex": input["allowed"],
            "items": input.get("items").cloned().unwrap_or(json!([])),
        })
        .to_string()
        .as_bytes(),
    )
    .unwrap();
    if m["random"] == "first" {
        ctx.options.regex_random = RandomSource::First;
    }
    ctx
}

fn regex_kinds(diags: &[stpreset::Diagnostic]) -> Vec<(String, Option<u32>)> {
    diags
        .iter()
        .filter(|d| format!("{}", d.kind).starts_with("Regex"))
        .map(|d| (d.kind.to_string(), d.script))
        .collect()
}

fn expected_kinds(expected: &Value) -> Vec<(String, Option<u32>)> {
    expected["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["kind"].as_str().unwrap().to_string(),
                d["script"].as_u64().map(|s| s as u32),
            )
        })
        .collect()
}

fn pass_of(input: &Value) -> RegexPass {
    let kind = match input["pass"].as_str().unwrap() {
        "store" => PassKind::Store,
        "edit" => PassKind::Edit,
        "prompt" => PassKind::Prompt,
        _ => PassKind::Display,
    };
    let placement = match input["placement"].as_u64().unwrap() {
        1 => Placement::UserInput,
        2 => Placement::AiOutput,
        _ => Placement::WorldInfo,
    };
    let mut pass = RegexPass::new(kind, placement);
    pass.depth = input["depth"].as_u64().map(|d| d as u32);
    pass.speaker = input["speaker"].as_str().map(str::to_string);
    pass
}

#[test]
fn every_vector_case() {
    let Some(v) = vectors() else { return };
    let sets = &v["script_sets"];
    let mut failures = Vec::new();
    let cases = v["cases"].as_array().unwrap();
    for case in cases {
        let id = case["id"].as_str().unwrap();
        let started = std::time::Instant::now();
        let compiled = preset(scripts(case, sets));
        let input = &case["input"];
        let ctx = context(input);
        let expected = &case["expected"];
        let (got, diags) = if case["kind"] == "history" {
            let out = compiled.prompt_pass(&ctx);
            (json!(out.items), out.diagnostics)
        } else {
            let out = compiled.apply_regex(input["text"].as_str().unwrap(), &pass_of(input), &ctx);
            (json!(out.text), out.diagnostics)
        };
        let want = if case["kind"] == "history" {
            &expected["items"]
        } else {
            &expected["text"]
        };
        if std::env::var_os("REGEX_TIMES").is_some() {
            eprintln!("{:>8.1} ms {id}", started.elapsed().as_secs_f64() * 1e3);
        }
        if &got != want {
            failures.push(format!(
                "{id}: text\n  got  {}\n  want {}",
                short(&got),
                short(want)
            ));
        } else if regex_kinds(&diags) != expected_kinds(expected) {
            failures.push(format!(
                "{id}: diagnostics {:?}, want {:?}",
                regex_kinds(&diags),
                expected_kinds(expected)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 400 {
        format!("{}…", &s[..s.floor_char_boundary(400)])
    } else {
        s
    }
}

#[test]
fn not_allowed_runs_nothing_and_says_so() {
    let p = preset(json!([{"findRegex": "/a/", "replaceString": "b", "placement": [2]}]));
    let ctx = Context::default();
    let out = p.store_message("a", Role::Model, &ctx);
    assert_eq!(out.text, "a");
    assert_eq!(out.diagnostics[0].kind, DiagnosticKind::RegexNotAllowed);
}

fn render_texts(p: &stpreset::CompiledPreset, ctx: &Context) -> Vec<String> {
    p.render(ctx)
        .messages
        .iter()
        .map(|m| m.text().into_owned())
        .collect()
}

fn scripted(scripts: Value, prompts: Value) -> stpreset::CompiledPreset {
    let file = json!({"prompts": prompts, "extensions": {"regex_scripts": scripts}});
    Preset::from_json(file.to_string().as_bytes())
        .unwrap()
        .compile()
}

fn allowed(items: Value) -> Context {
    Context::from_json(
        json!({"user": "Alice", "char": "Tomori", "allow_preset_regex": true, "items": items})
            .to_string()
            .as_bytes(),
    )
    .unwrap()
}

#[test]
fn start_anchored_scripts_see_the_text_and_the_name_comes_after() {
    let p = scripted(
        json!([{"findRegex": "/^<plan>[\\s\\S]*?<\\/plan>\\s*/", "placement": [2], "promptOnly": true}]),
        json!([{"identifier": "chatHistory", "marker": true}]),
    );
    let ctx = allowed(json!([
        {"tag": "DIALOGUE_HISTORY", "role": "model", "name": "Tomori", "text": "<plan>x</plan> hi"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "name": "Alice", "text": "<plan>y</plan> yo"}
    ]));
    assert_eq!(
        render_texts(&p, &ctx),
        ["Tomori: hi", "Alice: <plan>y</plan> yo"]
    );
    // Without permission the text is as the host gave it, with the name.
    let mut off = ctx.clone();
    off.allow_preset_regex = false;
    assert_eq!(
        render_texts(&p, &off),
        ["Tomori: <plan>x</plan> hi", "Alice: <plan>y</plan> yo"]
    );
    // A second render (from the cache) is the same.
    assert_eq!(
        render_texts(&p, &ctx),
        ["Tomori: hi", "Alice: <plan>y</plan> yo"]
    );
}

#[test]
fn lore_a_script_empties_is_dropped_and_injections_are_not_regexed() {
    let p = scripted(
        json!([
            {"findRegex": "/SECRET.*/", "placement": [5], "promptOnly": true},
            {"findRegex": "/jb/g", "replaceString": "JB", "placement": [2], "promptOnly": true}
        ]),
        json!([
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "jb", "content": "jb note", "injection_position": 1, "injection_depth": 0}
        ]),
    );
    let ctx = allowed(json!([
        {"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "SECRET lore"},
        {"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "kept {{user}}"},
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "said jb"}
    ]));
    let texts = render_texts(&p, &ctx);
    assert_eq!(texts, ["kept Alice", "said JB\n[System: jb note]"]);
    let pass = p.prompt_pass(&ctx);
    assert_eq!(
        pass.items,
        [
            None,
            Some("kept Alice".to_string()),
            Some("said JB".to_string())
        ]
    );
}

#[test]
fn script_writes_never_reach_the_render() {
    let p = scripted(
        json!([{"findRegex": "/#/g", "replaceString": "{{incvar::n}}", "placement": [2], "promptOnly": true}]),
        json!([{"identifier": "chatHistory", "marker": true}, {"identifier": "v", "content": "n={{getvar::n}}"}]),
    );
    let mut ctx = allowed(json!([{"tag": "DIALOGUE_HISTORY", "role": "model", "text": "# #"}]));
    ctx.variables.insert("n".into(), "5".into());
    let out = p.render(&ctx);
    let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(texts, ["6 6", "n=5"]);
    assert_eq!(out.variables["n"], "5");
}

#[test]
fn hostile_patterns_stop_within_the_bound_and_later_scripts_run() {
    let p = scripted(
        json!([
            {"findRegex": "/(a+)+$/", "replaceString": "X", "placement": [2]},
            {"findRegex": "/!/", "replaceString": "?", "placement": [2]}
        ]),
        json!([{"identifier": "main", "content": "x"}]),
    );
    let ctx = allowed(json!([]));
    let text = format!("{}!", "a".repeat(30));
    let out = p.store_message(&text, Role::Model, &ctx);
    assert_eq!(out.text, format!("{}?", "a".repeat(30)));
    assert_eq!(
        regex_kinds(&out.diagnostics),
        [("RegexLimit".to_string(), Some(0))]
    );
}

#[test]
fn the_pass_total_ends_a_pass_once() {
    let mut s = Vec::new();
    for _ in 0..4 {
        s.push(json!({"findRegex": "/(a+)+$/", "replaceString": "X", "placement": [2]}));
    }
    let p = scripted(json!(s), json!([{"identifier": "main", "content": "x"}]));
    let mut ctx = allowed(json!([]));
    ctx.options.limits.regex_pass_steps = 25_000_000;
    let out = p.store_message(&format!("{}!", "a".repeat(30)), Role::Model, &ctx);
    assert_eq!(
        regex_kinds(&out.diagnostics),
        [
            ("RegexLimit".to_string(), Some(0)),
            ("RegexLimit".to_string(), Some(1)),
            ("RegexLimit".to_string(), None)
        ]
    );
}

#[test]
fn output_over_the_limit_is_discarded() {
    let p = scripted(
        json!([{"findRegex": "/(?:)/g", "replaceString": "x".repeat(100), "placement": [2]}]),
        json!([{"identifier": "main", "content": "x"}]),
    );
    let mut ctx = allowed(json!([]));
    ctx.options.limits.output_bytes = 10_000;
    let out = p.store_message(&"y".repeat(200), Role::Model, &ctx);
    assert_eq!(out.text, "y".repeat(200));
    assert_eq!(
        regex_kinds(&out.diagnostics),
        [("RegexLimit".to_string(), Some(0))]
    );
}

#[test]
fn audit_names_what_never_runs() {
    let file = json!({"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": [
        {"findRegex": "/a/", "placement": [2], "minDepth": 11},
        {"findRegex": "", "placement": [2]},
        {"findRegex": "/a/", "placement": [0, 3]},
        {"findRegex": "/a/", "placement": [5]},
        {"findRegex": "/(/", "placement": [2]},
        {"findRegex": "/a/", "placement": [2], "disabled": true, "minDepth": 3},
        7
    ]}});
    let p = Preset::from_json(file.to_string().as_bytes()).unwrap();
    let kinds = regex_kinds(&p.audit());
    assert_eq!(
        kinds,
        [
            ("RegexScriptInvalid".to_string(), Some(6)),
            ("RegexDepthIgnored".to_string(), Some(0)),
            ("RegexNeverRuns".to_string(), Some(1)),
            ("RegexNeverRuns".to_string(), Some(2)),
            ("RegexNeverRuns".to_string(), Some(3)),
            ("RegexInvalid".to_string(), Some(4)),
        ]
    );
}

/// A sample of the vectors through `stpreset regex --format json`: every 25th text case.
#[test]
fn a_sample_through_the_cli() {
    let Some(v) = vectors() else { return };
    let sets = &v["script_sets"];
    let dir = tempfile::tempdir().unwrap();
    let mut ran = 0;
    for case in v["cases"].as_array().unwrap().iter().step_by(25) {
        if case["kind"] != "text" {
            continue;
        }
        let input = &case["input"];
        if input["macros"]["random"] == "first"
            && scripts(case, sets).to_string().contains("random")
        {
            continue; // the first-item source is a library option, not a CLI flag
        }
        let preset = dir.path().join("p.json");
        let file = json!({"prompts": [{"identifier": "main", "content": "x"}],
            "extensions": {"regex_scripts": scripts(case, sets)}});
        std::fs::write(&preset, file.to_string()).unwrap();
        let ctx = dir.path().join("c.json");
        let m = &input["macros"];
        std::fs::write(
            &ctx,
            json!({"user": m["user"], "char": m["char"], "variables": m["variables"], "globals": m["globals"]})
                .to_string(),
        )
        .unwrap();
        let pass = input["pass"].as_str().unwrap();
        let placement = match input["placement"].as_u64().unwrap() {
            1 => "user",
            2 => "model",
            _ => "world-info",
        };
        let mut args = vec![
            "regex".to_string(),
            preset.display().to_string(),
            "--context".into(),
            ctx.display().to_string(),
            "--pass".into(),
            pass.into(),
            "--placement".into(),
            placement.into(),
            "--format".into(),
            "json".into(),
        ];
        if input["allowed"] == true {
            args.push("--allow-regex".into());
        }
        if let Some(d) = input["depth"].as_u64() {
            args.extend(["--depth".into(), d.to_string()]);
        }
        if let Some(s) = input["speaker"].as_str() {
            args.extend(["--speaker".into(), s.to_string()]);
        }
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_stpreset"))
            .args(&args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write as _;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input["text"].as_str().unwrap().as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", case["id"]);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(doc["text"], case["expected"]["text"], "{}", case["id"]);
        ran += 1;
    }
    assert!(ran > 10);
}

/// Compiling is bounded too (regress folds classes through Unicode tables, is quadratic in
/// alternatives and recurses per alternative and nesting level): long patterns and too many
/// case-insensitive classes are refused before compiling, and a small thread's stack holds.
#[test]
fn pattern_compile_is_bounded_and_fits_small_stacks() {
    let run = |find: String| {
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let p = scripted(
                    json!([{"findRegex": find, "replaceString": "X", "placement": [2]}]),
                    json!([{"identifier": "main", "content": "x"}]),
                );
                let out = p.store_message("ab b", Role::Model, &allowed(json!([])));
                (out.text, regex_kinds(&out.diagnostics))
            })
            .unwrap()
            .join()
            .expect("no stack overflow")
    };
    // 8,000 alternatives (the most a pattern within the length cap holds).
    let (text, kinds) = run(format!("/{}b/g", "a|".repeat(8000)));
    assert_eq!((text.as_str(), kinds.len()), ("XX X", 0));
    // 250 nested groups.
    let (text, _) = run(format!("/{}b{}/", "(?:".repeat(250), ")".repeat(250)));
    assert_eq!(text, "aX b");
    // Over the length cap, and too many case-insensitive classes: refused.
    for find in [
        format!("/{}b/", "a|".repeat(9000)),
        format!("/{}/i", "[a]".repeat(300)),
    ] {
        let (text, kinds) = run(find);
        assert_eq!(text, "ab b");
        assert_eq!(kinds, [("RegexInvalid".to_string(), Some(0))]);
    }
}

#[test]
fn the_presets_patterns_share_one_compile_budget() {
    // 40 scripts of 50 case-insensitive `\p` classes (weight 250) each: the budget (8,192)
    // pays for the first 32; the rest are refused whichever pass meets them.
    let scripts: Vec<Value> = (0..40)
        .map(|_| json!({"findRegex": format!("/{}/giu", "\\p{L}".repeat(50)), "placement": [2]}))
        .collect();
    let p = scripted(
        json!(scripts),
        json!([{"identifier": "main", "content": "x"}]),
    );
    // The 32 compiles cost 32 · (250 · 100 + 250 · 50,000 + 50 · 10,000) = 416 M units of
    // work, more than a pass's default 300 M steps: give the pass enough to see the budget.
    let mut ctx = allowed(json!([]));
    ctx.options.limits.regex_pass_steps = 1_000_000_000;
    ctx.options.limits.render_work = 4_000_000_000;
    let out = p.store_message("hello", Role::Model, &ctx);
    let invalid: Vec<Option<u32>> = regex_kinds(&out.diagnostics)
        .into_iter()
        .filter(|(k, _)| k == "RegexInvalid")
        .map(|(_, s)| s)
        .collect();
    assert_eq!(invalid, (32..40).map(Some).collect::<Vec<_>>());
    // With the default limits the pass cannot pay for them: it ends before any runs.
    let out = p.store_message("hello", Role::Model, &allowed(json!([])));
    assert_eq!(
        regex_kinds(&out.diagnostics),
        [("RegexLimit".to_string(), None)]
    );
}

/// Found by a hostile review: the literal prefilter read octal and decimal escapes as text.
#[test]
fn octal_and_backreference_escapes_are_not_literals() {
    for (find, text, want) in [
        ("/\\0123/g", "a\n3b", "aXb"),
        ("/(a)\\10xyz/g", "a\u{8}xyz", "X"),
        ("/\\012?/", "s", "Xs"),
    ] {
        let p = scripted(
            json!([{"findRegex": find, "replaceString": "X", "placement": [2]}]),
            json!([{"identifier": "main", "content": "x"}]),
        );
        let out = p.store_message(text, Role::Model, &allowed(json!([])));
        assert_eq!(out.text, want, "{find}");
    }
}

/// Found by a hostile review: cached prompt-pass results must not outlive what they read.
#[test]
fn the_cache_follows_host_facts_and_the_work_budget() {
    let p = scripted(
        json!([{"findRegex": "/hi/", "replaceString": "{{if capability:web}}WEB{{else}}NOWEB{{/if}}",
                "placement": [2], "promptOnly": true}]),
        json!([{"identifier": "chatHistory", "marker": true}]),
    );
    let item = json!([{"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hi there"}]);
    let mut ctx = allowed(item.clone());
    let on: Context = Context::from_json(
        json!({"allow_preset_regex": true, "capabilities": {"web": true}, "items": item})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(p.prompt_pass(&on).items[0].as_deref(), Some("WEB there"));
    ctx.allow_preset_regex = true;
    let off = Context::from_json(
        json!({"allow_preset_regex": true, "capabilities": {"web": false}, "items": item})
            .to_string()
            .as_bytes(),
    )
    .unwrap();
    assert_eq!(p.prompt_pass(&off).items[0].as_deref(), Some("NOWEB there"));

    // A result cached with budget to spare must not be replayed when the budget is spent.
    let p = scripted(
        json!([{"findRegex": "/h(i)/g", "replaceString": "{{user}}{{user}}{{user}}",
                "placement": [2], "promptOnly": true}]),
        json!([{"identifier": "chatHistory", "marker": true}]),
    );
    let history = |n: usize| {
        let items: Vec<Value> = (0..n)
            .map(|_| json!({"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hi"}))
            .collect();
        let mut ctx = allowed(json!(items));
        ctx.options.limits.work_bytes = 200;
        ctx
    };
    let small = history(1);
    let big = history(35);
    p.prompt_pass(&small);
    let cached = p.prompt_pass(&big);
    let fresh = scripted(
        json!([{"findRegex": "/h(i)/g", "replaceString": "{{user}}{{user}}{{user}}",
                "placement": [2], "promptOnly": true}]),
        json!([{"identifier": "chatHistory", "marker": true}]),
    )
    .prompt_pass(&big);
    assert_eq!(cached.items, fresh.items);
    assert_eq!(
        regex_kinds(&cached.diagnostics),
        regex_kinds(&fresh.diagnostics)
    );
}

/// From a second hostile review: runs whose prefilter finds nothing still pay for reading the
/// text, so a pass of thousands of scripts meets its total.
#[test]
fn runs_that_find_nothing_still_spend_steps() {
    let scripts: Vec<Value> = (0..2_000)
        .map(|_| json!({"findRegex": "/ab|cd/", "placement": [2]}))
        .collect();
    let p = scripted(
        json!(scripts),
        json!([{"identifier": "main", "content": "x"}]),
    );
    let mut ctx = allowed(json!([]));
    ctx.options.limits.regex_pass_steps = 5_000_000;
    let out = p.store_message(&"ac".repeat(50_000), Role::Model, &ctx);
    assert_eq!(
        regex_kinds(&out.diagnostics),
        [("RegexLimit".to_string(), None)]
    );
}

#[test]
fn macro_diagnostics_of_expansions_are_positionless_with_the_script() {
    let p = scripted(
        json!([{"findRegex": "/b/", "replaceString": "{{nope::x}}", "placement": [2]}]),
        json!([{"identifier": "main", "content": "x"}]),
    );
    let out = p.store_message("abc", Role::Model, &allowed(json!([])));
    assert_eq!(out.text, "a{{nope::x}}c");
    let d = &out.diagnostics[0];
    assert_eq!((d.kind, d.script), (DiagnosticKind::UnknownMacro, Some(0)));
    assert_eq!((d.node.as_deref(), d.span, d.line), (None, None, None));
    assert!(
        d.message.starts_with("regex script 1 \"\": "),
        "{}",
        d.message
    );
    assert!(out.to_json().contains(r#""script":0"#));
}

/// Matching recurses per nested lookaround; a pass on a small thread (and a render on a bot's
/// worker thread) must hold 250 of them.
#[test]
fn nested_lookarounds_match_on_a_small_stack() {
    let find = format!("/{}a{}/g", "(?=".repeat(250), ")".repeat(250));
    let out = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || {
            let p = scripted(
                json!([{"findRegex": find, "replaceString": "X", "placement": [2]}]),
                json!([{"identifier": "main", "content": "x"}]),
            );
            p.store_message("bab", Role::Model, &allowed(json!([])))
                .text
        })
        .unwrap()
        .join()
        .expect("no stack overflow");
    assert_eq!(out, "bXab");
}

/// Compiling a pattern is work the render pays (issue 38): a pass pays, in list order, for
/// the scripts it selects before any runs, the same whether the pattern was compiled now or
/// by an earlier render; from the first it cannot pay for, the pass ends when it gets there.
/// 100 units of work a UTF-16 unit, 50,000 a case-insensitive class, 10,000 a property escape.
#[test]
fn a_pass_pays_to_compile_the_scripts_it_selects() {
    // Bodies of 5 and 6 UTF-16 units, one case-insensitive class, one property escape.
    let s = json!([
        {"findRegex": "/[ab]c/gi", "replaceString": "x", "placement": [2]},
        {"findRegex": "/\\p{Ll}/gu", "replaceString": "Y", "placement": [2]},
        {"findRegex": "/never/", "replaceString": "Z", "placement": [1]}
    ]);
    let p = scripted(s, json!([{"identifier": "main", "content": "x"}]));
    let (first, second) = (5 * 100 + 50_000, 6 * 100 + 10_000);
    let mut ctx = allowed(json!([]));
    // Each case twice: the second render finds the patterns compiled and pays the same.
    for (steps, text, limited) in [
        // Enough for the compiles and the matching (a few steps a unit of "Ac Bc").
        (first + second + 1_000, "Y Y", false),
        // Short of the second compile: the first script runs, then the pass ends.
        (first + second - 1, "x x", true),
        // Short of the first: nothing runs.
        (first - 1, "Ac Bc", true),
    ] {
        for _ in 0..2 {
            ctx.options.limits.regex_pass_steps = steps;
            let out = p.store_message("Ac Bc", Role::Model, &ctx);
            assert_eq!(out.text, text, "{steps}");
            let want = match limited {
                true => vec![("RegexLimit".to_string(), None)],
                false => vec![],
            };
            assert_eq!(regex_kinds(&out.diagnostics), want, "{steps}");
        }
    }
}

/// A reply as NemoEngine's model writes one: reasoning, a final block, tracker markup, Magpie
/// stats, emoji with effects, and the reply's own Markdown.
fn nemo_reply() -> String {
    "<think>\nAlice wants to sneak in. Tomori would hesitate.\n</think>\n<nemo-final>\n\
     »» The Archive\n\
     Tomori's breath hitched 🔥 as the lantern swung past the door. *She smiled warmly.*\n\n\
     \"We go in **now**,\" she said. ✨\n\
     [[stat Courage|steady|70|brave]]\n\
     <st-tracker type=\"status\" title=\"Archive Run\" icon=\"🗝️\" accent=\"#c084fc\">\
     <st-row k=\"Location\" v=\"Archive\"/><st-bar k=\"Suspicion\" v=\"40\" l=\"rising\"/></st-tracker>\n\
     </nemo-final>"
        .to_string()
}

/// Issue 39 §3: the display pass's HTML becomes text a chat app shows, for every corpus
/// preset with display scripts: no tag, style or script left, the words and the reply's
/// Markdown kept.
#[test]
fn the_display_text_of_corpus_presets_is_readable_markdown() {
    let Some(presets) = support::corpus_presets() else {
        return;
    };
    let mut checked = 0;
    for (name, preset) in presets {
        let compiled = preset.compile();
        let ctx = allowed(json!([]));
        let reply = nemo_reply();
        let html = compiled.display_message(&reply, Role::Model, Some(0), Some("Tomori"), &ctx);
        let text = compiled.display_text(&reply, Role::Model, Some(0), Some("Tomori"), &ctx);
        assert_eq!(text.diagnostics, html.diagnostics, "{name}");
        assert_eq!(
            text.text,
            stpreset::scripts::display_markdown(&html.text),
            "{name}"
        );
        for gone in [
            "<style",
            "<span",
            "<div",
            "<details",
            "</nemo-final>",
            "@keyframes",
            "style=\"",
        ] {
            assert!(
                !text.text.contains(gone),
                "{name}: {gone} left in:\n{}",
                text.text
            );
        }
        for kept in [
            "breath hitched",
            "*She smiled warmly.*",
            "**now**",
            "🔥",
            "✨",
        ] {
            assert!(
                text.text.contains(kept),
                "{name}: {kept} lost from:\n{}",
                text.text
            );
        }
        checked += usize::from(html.text != reply);
    }
    // NemoEngine and the other presets with display scripts changed the reply.
    assert!(checked >= 1, "no corpus preset's display scripts ran");
}

/// One script that appends `mark` to every text of its placements (2: model replies).
fn marker(mark: &str) -> Value {
    json!({"scriptName": mark, "findRegex": "/$/", "replaceString": mark, "placement": [2]})
}

/// Issue 39: the host's scripts, the preset's and the card's run in SillyTavern's order
/// (`getRegexScripts`: global, preset, scoped), each source with its own permission.
#[test]
fn global_preset_and_card_scripts_run_in_sillytavern_order() {
    let p = preset(json!([marker("P")]));
    let ctx = Context::from_json(
        &serde_json::to_vec(&json!({
            "allow_preset_regex": true, "allow_char_regex": true,
            "regex_scripts": [marker("G1"), marker("G2")],
            "char_regex_scripts": [marker("C")],
        }))
        .unwrap(),
    )
    .unwrap();
    let out = p.store_message("t", Role::Model, &ctx);
    assert_eq!(out.text, "tG1G2PC");
    assert!(out.diagnostics.is_empty(), "{:?}", out.diagnostics);
    // The same three lists in the prompt pass of a render and of `prompt_pass`.
    let mut ctx = ctx;
    for s in ctx
        .regex_scripts
        .iter_mut()
        .chain(&mut ctx.char_regex_scripts)
    {
        s.prompt_only = true;
    }
    ctx.items.push(stpreset::ContextItem::new(
        Some(stpreset::Tag::DialogueHistory),
        Role::Model,
        "h",
    ));
    // The preset's own script is not prompt-only: only G1, G2 and C run in the prompt.
    assert_eq!(p.prompt_pass(&ctx).items, [Some("hG1G2C".to_string())]);
}

#[test]
fn each_source_has_its_own_permission() {
    let p = preset(json!([marker("P")]));
    let mut ctx = Context::default();
    ctx.add_regex_scripts(
        stpreset::scripts::ScriptSource::Global,
        &serde_json::to_vec(&marker("G")).unwrap(),
    )
    .unwrap();
    ctx.add_regex_scripts(
        stpreset::scripts::ScriptSource::Character,
        &serde_json::to_vec(&json!([marker("C")])).unwrap(),
    )
    .unwrap();
    // Nothing allowed: the host's own still run; the preset's and the card's are refused,
    // each named.
    let out = p.store_message("t", Role::Model, &ctx);
    assert_eq!(out.text, "tG");
    let refusals: Vec<&str> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::RegexNotAllowed)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(refusals.len(), 2, "{refusals:?}");
    assert!(refusals[0].contains("allow_preset_regex"), "{refusals:?}");
    assert!(refusals[1].contains("the card's") && refusals[1].contains("allow_char_regex"));
    ctx.allow_char_regex = true;
    let out = p.store_message("t", Role::Model, &ctx);
    assert_eq!(out.text, "tGC");
    ctx.allow_preset_regex = true;
    assert_eq!(p.store_message("t", Role::Model, &ctx).text, "tGPC");
    // A preset's scripts come with the preset, not the context.
    assert!(
        ctx.add_regex_scripts(stpreset::scripts::ScriptSource::Preset, b"[]")
            .is_err()
    );
}

/// A card's `extensions.regex_scripts` become the context's card scripts; an entry that cannot
/// be read is named as the card's in every pass.
#[test]
fn a_cards_scripts_come_with_the_card() {
    let card = stpreset::Card::from_bytes(
        &serde_json::to_vec(&json!({"spec": "chara_card_v2", "data": {"name": "Sera",
            "extensions": {"regex_scripts": [marker("C"), {"findRegex": 3}]}}}))
        .unwrap(),
        stpreset::lore::CardFormat::Json,
        &stpreset::Limits::default(),
    )
    .unwrap();
    let mut ctx = Context::default();
    card.apply_to(&mut ctx);
    assert_eq!(ctx.char_regex_scripts.len(), 1);
    ctx.allow_char_regex = true;
    let p = preset(json!([]));
    let out = p.store_message("t", Role::Model, &ctx);
    assert_eq!(out.text, "tC");
    let invalid: Vec<&str> = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == DiagnosticKind::RegexScriptInvalid)
        .map(|d| d.message.as_str())
        .collect();
    assert_eq!(invalid.len(), 1);
    assert!(
        invalid[0].starts_with("the card's regex script 2"),
        "{invalid:?}"
    );
    // A host building context files gets the scripts with the card's values.
    assert_eq!(
        card.context_values()["char_regex_scripts"][0]["scriptName"],
        "C"
    );
}

/// SillyTavern's own regex engine (`getRegexedString`, run in Node by
/// `tests/st-macros/record.mjs`) over the host's global scripts, the preset's and the card's,
/// each list allowed or not: every recorded case gives the same text here.
#[test]
fn three_lists_as_sillytaverns_regex_engine_runs_them() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/st-macros/regex-vectors.json");
    let cases: Vec<Value> =
        serde_json::from_slice(&std::fs::read(&path).expect("regex-vectors.json")).unwrap();
    assert!(cases.len() >= 10);
    let mut failures = Vec::new();
    for case in &cases {
        let name = case["name"].as_str().unwrap_or("?");
        let p = preset(case["preset_scripts"].clone());
        let ctx = Context::from_json(case["context"].to_string().as_bytes())
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let pass = &case["pass"];
        let placement = match pass["placement"].as_str() {
            Some("user") => Placement::UserInput,
            Some("world_info") => Placement::WorldInfo,
            _ => Placement::AiOutput,
        };
        let kind = match pass["kind"].as_str() {
            Some("prompt") => PassKind::Prompt,
            Some("display") => PassKind::Display,
            Some("edit") => PassKind::Edit,
            _ => PassKind::Store,
        };
        let mut regex_pass = RegexPass::new(kind, placement);
        regex_pass.depth = pass["depth"].as_u64().map(|d| d as u32);
        let got = p.apply_regex(case["text"].as_str().unwrap(), &regex_pass, &ctx);
        if got.text != case["expect"].as_str().unwrap() {
            failures.push(format!("{name}: {:?} != {:?}", got.text, case["expect"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
