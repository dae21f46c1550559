//! SPEC §17 through the library and the CLI: the layout switch, the inputs of §17.2, a
//! SillyTavern chat file, constant randomness, and the card defects fixed in both layouts.

mod support;

use serde_json::{Value, json};
use stpreset::{Card, Context, Layout, Limits, Preset, Shape, lore::CardFormat};
use support::{arg, stpreset, temp, text};

fn ctx(v: Value) -> Context {
    Context::from_json(v.to_string().as_bytes()).unwrap_or_else(|e| panic!("{e}"))
}

/// A V2 card of these `data` fields.
fn card(data: Value) -> Card {
    let v = json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": data});
    Card::from_bytes(
        v.to_string().as_bytes(),
        CardFormat::Json,
        &Limits::default(),
    )
    .unwrap()
}

/// The openai body's messages as (role, content, name).
fn messages(preset: &Value, c: &Context) -> Vec<(String, String, Option<String>)> {
    let p = Preset::from_json(preset.to_string().as_bytes())
        .unwrap()
        .compile();
    let mut options = c.provider_options.clone();
    options.shape = Some(Shape::OpenAi);
    let (body, _) = p.render(c).to_request(&options);
    body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["role"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
                m["name"].as_str().map(str::to_string),
            )
        })
        .collect()
}

fn preset(prompts: Value, order: Value) -> Value {
    json!({"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]})
}

#[test]
fn the_switch_and_its_fields_are_checked() {
    assert_eq!(ctx(json!({})).layout, Layout::Seed);
    assert_eq!(ctx(json!({"layout": null})).layout, Layout::Seed);
    assert_eq!(
        ctx(json!({"layout": "sillytavern"})).layout,
        Layout::SillyTavern
    );
    for (bad, field) in [
        (json!({"layout": "SillyTavern"}), "layout"),
        (json!({"layout": 1}), "layout"),
        (json!({"random": {"constant": 1}}), "random"),
        (json!({"random": {"constant": -0.1}}), "random"),
        (json!({"random": "first"}), "random"),
        (json!({"persona_position": 1}), "persona_position"),
        (json!({"persona_role": "narrator"}), "persona_role"),
        (
            json!({"author_note": {"position": 5}}),
            "author_note.position",
        ),
        (json!({"author_note": {"colour": 5}}), "author_note.colour"),
        (json!({"chat_id_hash": -1}), "chat_id_hash"),
        (json!({"chat_id_hash": 9007199254740992u64}), "chat_id_hash"),
        (json!({"pick_reroll_seed": [1]}), "pick_reroll_seed"),
    ] {
        let err = Context::from_json(bad.to_string().as_bytes()).unwrap_err();
        assert!(err.to_string().contains(field), "{bad}: {err}");
    }
    let c = ctx(
        json!({"persona_position": 4, "persona_depth": 1, "persona_role": "user",
        "author_note": {"text": "AN", "depth": 2}, "start_reply_with": "Sure",
        "pin_examples": true, "chat_id_hash": 7, "pick_reroll_seed": 3}),
    );
    let st = &c.user_settings;
    assert_eq!(
        st.persona_position,
        stpreset::layout::PersonaPosition::AtDepth
    );
    assert_eq!(
        (
            st.persona_depth,
            st.author_note.depth,
            st.author_note.interval
        ),
        (1, 2, 1)
    );
    assert_eq!(st.pick_reroll_seed.as_deref(), Some("3"));
    assert!(st.pin_examples);
}

#[test]
fn a_constant_random_source_draws_as_sillytavern_does() {
    let p = Preset::from_json(
        br#"{"prompts": [{"identifier": "main",
        "content": "{{roll:1d6}} {{roll:2d10+1}} {{random::a::b::c}}"}]}"#,
    )
    .unwrap()
    .compile();
    for (x, want) in [(0.5, "4 13 b"), (0.0, "1 3 a"), (0.999, "6 21 c")] {
        let c = ctx(json!({"random": {"constant": x}}));
        assert_eq!(p.render(&c).messages[0].text(), want, "{x}");
    }
}

#[test]
fn examples_history_and_injections_are_sillytavern_messages() {
    let p = preset(
        json!([
            {"identifier": "main", "content": "Be {{char}}.", "role": "system"},
            {"identifier": "dialogueExamples", "marker": true},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "deep", "content": "At one.", "role": "system", "system_prompt": false,
             "injection_position": 1, "injection_depth": 1},
            {"identifier": "off", "content": "never", "role": "system", "system_prompt": false},
            {"identifier": "flagged", "content": "not sent", "role": "system", "system_prompt": true}
        ]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "dialogueExamples", "enabled": true},
               {"identifier": "chatHistory", "enabled": true}, {"identifier": "deep", "enabled": true},
               {"identifier": "off"}, {"identifier": "flagged", "enabled": true}]),
    );
    let mut c = ctx(json!({"user": "Alice", "layout": "sillytavern", "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello, {{user}}. {{getvar::x}}"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."}]}));
    card(json!({"name": "Sera", "mes_example": "{{user}}: Q?\n{{char}}: A.\nMore."}))
        .apply_to(&mut c);
    let got = messages(&p, &c);
    let want: Vec<(&str, &str, Option<&str>)> = vec![
        ("system", "Be Sera.", None),
        ("system", "[Example Chat]", None),
        ("system", "Q?", Some("example_user")),
        ("system", "A.\nMore.", Some("example_assistant")),
        ("system", "[Start a new Chat]", None),
        ("assistant", "Hello, Alice. {{getvar::x}}", None),
        ("system", "At one.", None),
        ("user", "Hi.", None),
    ];
    let got: Vec<(&str, &str, Option<&str>)> = got
        .iter()
        .map(|(r, t, n)| (r.as_str(), t.as_str(), n.as_deref()))
        .collect();
    assert_eq!(got, want);
    // The seed layout of the same inputs is another list.
    c.layout = Layout::Seed;
    assert_ne!(messages(&p, &c).len(), want.len());
}

#[test]
fn card_prompts_survive_comment_only_nodes_in_both_layouts() {
    let p = preset(
        json!([
            {"identifier": "main", "content": "{{// a note }}Main.", "role": "system"},
            {"identifier": "jailbreak", "content": "{{// only a comment }}", "role": "system"},
            {"identifier": "chatHistory", "marker": true}
        ]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "chatHistory", "enabled": true},
               {"identifier": "jailbreak", "enabled": true}]),
    );
    let c_card = card(
        json!({"name": "Oren", "system_prompt": "Card {{original}} {{original}}",
        "post_history_instructions": "PHI for {{char}}",
        "extensions": {"depth_prompt": {"prompt": "{{char}} knows.", "depth": 0, "role": "system"}}}),
    );
    for layout in ["seed", "sillytavern"] {
        let mut c = ctx(
            json!({"layout": layout, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}),
        );
        c_card.apply_to(&mut c);
        let all: String = messages(&p, &c).into_iter().map(|m| m.1 + "|").collect();
        assert!(all.contains("PHI for Oren"), "{layout}: {all}");
        assert!(all.contains("Oren knows."), "{layout}: {all}");
        assert!(!all.contains("{{char}}"), "{layout}: {all}");
        // ST's `{{original}}` expands once; the seed layout's everywhere.
        let main = if layout == "seed" {
            "Card Main. Main."
        } else {
            "Card Main. "
        };
        assert!(all.starts_with(main), "{layout}: {all}");
    }
}

#[test]
fn the_cli_takes_layout_and_a_sillytavern_chat_file() {
    let p = preset(
        json!([{"identifier": "main", "content": "Main {{lastMessage}}", "role": "system"},
               {"identifier": "chatHistory", "marker": true}]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "chatHistory", "enabled": true}]),
    );
    let preset_file = temp("layout-preset.json", p.to_string().as_bytes());
    let chat = concat!(
        r#"{"user_name": "Alice", "character_name": "Sera", "chat_metadata": {"variables": {"mood": 3}, "note_prompt": ""}}"#,
        "\n",
        r#"{"name": "Sera", "is_user": false, "mes": "Welcome.", "send_date": "2025-06-15@13h50m00s"}"#,
        "\n",
        r#"{"name": "Alice", "is_user": true, "is_system": true, "mes": "hidden"}"#,
        "\n",
        r#"{"name": "Alice", "is_user": true, "mes": "Thanks.", "send_date": "June 15, 2025 1:51pm"}"#,
        "\n",
    );
    let chat_file = temp("layout-chat.jsonl", chat.as_bytes());
    let out = stpreset(
        &[
            "render",
            arg(&preset_file),
            "--layout",
            "sillytavern",
            "--chat",
            arg(&chat_file),
            "--shape",
            "openai",
            "--format",
            "json",
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    let contents: Vec<&str> = doc["request"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        ["Main Thanks.", "[Start a new Chat]", "Welcome.", "Thanks."]
    );
    assert_eq!(doc["variables"]["mood"], "3");
    // The same with --layout seed keeps the seed's list.
    let seed = stpreset(
        &[
            "render",
            arg(&preset_file),
            "--chat",
            arg(&chat_file),
            "--format",
            "json",
        ],
        None,
    );
    let doc: Value = serde_json::from_slice(&seed.stdout).unwrap();
    assert_eq!(doc["messages"].as_array().unwrap().len(), 3);
    // A quiet generation takes its prompt from --quiet-prompt, with the context's macros.
    let quiet = |extra: &[&str]| -> Value {
        let mut args = vec!["render", arg(&preset_file), "--layout", "sillytavern"];
        args.extend([
            "--chat",
            arg(&chat_file),
            "--generation",
            "quiet",
            "--format",
            "json",
        ]);
        args.extend(extra);
        let out = stpreset(&args, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let doc = quiet(&["--quiet-prompt", "Sum up {{char}}."]);
    let last = doc["messages"].as_array().unwrap().last().unwrap();
    assert_eq!(last["parts"], json!(["Sum up Sera."]), "{doc}");
    let doc = quiet(&[]);
    assert!(
        doc["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d["kind"] == "GenerationFallback"),
        "{doc}"
    );
    // A line that is no object is named.
    let bad = temp("layout-bad.jsonl", b"{}\nnot json\n");
    let out = stpreset(&["render", arg(&preset_file), "--chat", arg(&bad)], None);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("chat line 2"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_render_document_names_example_lines() {
    let p = preset(
        json!([{"identifier": "dialogueExamples", "marker": true}]),
        json!([{"identifier": "dialogueExamples", "enabled": true}]),
    );
    let mut c = ctx(json!({"user": "Alice", "layout": "sillytavern"}));
    card(json!({"name": "Sera", "mes_example": "<START>\nAlice: Q\nSera: A"})).apply_to(&mut c);
    let doc: Value = serde_json::from_str(
        &Preset::from_json(p.to_string().as_bytes())
            .unwrap()
            .compile()
            .render(&c)
            .to_json(),
    )
    .unwrap();
    let m = &doc["messages"];
    assert_eq!(
        m[0]["source"],
        json!({"setting": "new_example_chat_prompt"})
    );
    assert_eq!(
        (m[1]["name"].as_str(), &m[1]["source"]),
        (Some("example_user"), &json!({"example": 0}))
    );
    assert_eq!(m[2]["name"], "example_assistant");
}

/// A preset in ST's terms: main, history, a post-history prompt.
fn gen_preset(settings: Value) -> Value {
    let mut p = preset(
        json!([
            {"identifier": "main", "content": "Main.", "role": "system"},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "jailbreak", "content": "PHI.", "role": "system"}
        ]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "chatHistory", "enabled": true},
               {"identifier": "jailbreak", "enabled": true}]),
    );
    if let (Value::Object(p), Value::Object(s)) = (&mut p, settings) {
        p.extend(s);
    }
    p
}

fn gen_ctx(generation: &str, extra: Value) -> Context {
    let mut v = json!({"user": "Alice", "char": "Sera", "layout": "sillytavern",
        "generation_type": generation, "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."},
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello there"}]});
    if let (Value::Object(v), Value::Object(e)) = (&mut v, extra) {
        v.extend(e);
    }
    ctx(v)
}

fn contents(p: &Value, c: &Context) -> Vec<String> {
    messages(p, c).into_iter().map(|m| m.1).collect()
}

#[test]
fn generation_types_build_the_prompt_as_sillytavern_does() {
    let p = gen_preset(json!({}));
    let normal = ["Main.", "[Start a new Chat]", "Hi.", "Hello there", "PHI."];
    assert_eq!(contents(&p, &gen_ctx("normal", json!({}))), normal);
    assert_eq!(contents(&p, &gen_ctx("regenerate", json!({}))), normal);
    // Continue: the last message and the nudge after every prompt.
    assert_eq!(
        contents(&p, &gen_ctx("continue", json!({}))),
        [
            "Main.",
            "[Start a new Chat]",
            "Hi.",
            "PHI.",
            "Hello there",
            "[Continue your last message without repeating its original content.]"
        ]
    );
    let nudge =
        gen_preset(json!({"continue_nudge_prompt": "Go on from: {{lastChatMessage}} ({{char}})"}));
    assert_eq!(
        contents(&nudge, &gen_ctx("continue", json!({})))
            .last()
            .unwrap(),
        "Go on from: Hello there (Sera)"
    );
    // With continue_prefill: the message taken out before the injections, sent last.
    let prefill = gen_preset(json!({"continue_prefill": true}));
    assert_eq!(
        contents(&prefill, &gen_ctx("continue", json!({}))),
        ["Main.", "[Start a new Chat]", "Hi.", "PHI.", "Hello there"]
    );
    // Impersonate: ST's impersonation prompt last; no "Start Reply With".
    let imp = contents(
        &p,
        &gen_ctx("impersonate", json!({"start_reply_with": "Sure"})),
    );
    assert!(
        imp.last()
            .unwrap()
            .starts_with("[Write your next reply from the point of view of Alice"),
        "{imp:?}"
    );
    assert!(!imp.iter().any(|t| t == "Sure"));
    assert_eq!(
        contents(&p, &gen_ctx("normal", json!({"start_reply_with": "Sure"})))
            .last()
            .unwrap(),
        "Sure"
    );
    // Swipe: the host gives the whole chat; the last message is left out of the prompt, while
    // the last-message macros still read it.
    let last = gen_preset(json!({}));
    let mut with_macro = last.clone();
    with_macro["prompts"][0]["content"] = json!("Last: {{lastMessage}}");
    assert_eq!(
        contents(&with_macro, &gen_ctx("swipe", json!({}))),
        ["Last: Hello there", "[Start a new Chat]", "Hi.", "PHI."]
    );
    // Quiet: the quiet prompt last of all.
    assert_eq!(
        contents(
            &p,
            &gen_ctx("quiet", json!({"quiet_prompt": "Summarize {{char}}."}))
        )
        .last()
        .unwrap(),
        "Summarize Sera."
    );
}

#[test]
fn generation_types_the_chat_cannot_honour_are_said() {
    let p = gen_preset(json!({}));
    let render = |c: &Context| {
        let out = Preset::from_json(p.to_string().as_bytes())
            .unwrap()
            .compile()
            .render(c);
        let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
        let fallbacks = out
            .diagnostics
            .iter()
            .filter(|d| d.kind == stpreset::DiagnosticKind::GenerationFallback)
            .count();
        (texts, fallbacks)
    };
    // A swipe of a chat that ends with the user's message keeps it: a regeneration.
    let user_last = json!({"items": [
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello there"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."}]});
    let (swiped, notes) = render(&gen_ctx("swipe", user_last.clone()));
    assert_eq!(notes, 1);
    assert_eq!(swiped, render(&gen_ctx("regenerate", user_last)).0);
    assert!(swiped.iter().any(|t| t == "Hi."), "{swiped:?}");
    // A swipe of a reply leaves it out, silently.
    let (swiped, notes) = render(&gen_ctx("swipe", json!({})));
    assert_eq!(notes, 0);
    assert!(!swiped.iter().any(|t| t == "Hello there"), "{swiped:?}");
    // A quiet generation without a quiet prompt is the normal prompt, said once.
    let (quiet, notes) = render(&gen_ctx("quiet", json!({})));
    assert_eq!(notes, 1);
    assert_eq!(quiet, render(&gen_ctx("normal", json!({}))).0);
    let (_, notes) = render(&gen_ctx("quiet", json!({"quiet_prompt": "Sum up."})));
    assert_eq!(notes, 0);
}

#[test]
fn claude_prefill_follows_the_generation_type() {
    let p = gen_preset(
        json!({"assistant_prefill": "As {{char}}:", "assistant_impersonation": "As {{user}}:"}),
    );
    let last = |generation: &str| {
        let mut c = gen_ctx(generation, json!({}));
        c.provider_options.shape = Some(Shape::Anthropic);
        let (body, _) = Preset::from_json(p.to_string().as_bytes())
            .unwrap()
            .compile()
            .render(&c)
            .to_request(&c.provider_options);
        body["messages"].as_array().unwrap().last().unwrap()["content"]
            .as_array()
            .unwrap()
            .last()
            .unwrap()["text"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(last("normal"), "As Sera:");
    assert_eq!(last("impersonate"), "As Alice:");
    assert_ne!(last("quiet"), "As Sera:");
}

/// The Anthropic body's turns as (role, [block texts]), and the diagnostics' kinds.
fn claude_turns(p: &Value, c: &Context) -> (Vec<(String, Vec<String>)>, Vec<String>) {
    let mut options = c.provider_options.clone();
    options.shape = Some(Shape::Anthropic);
    let (body, notes) = Preset::from_json(p.to_string().as_bytes())
        .unwrap()
        .compile()
        .render(c)
        .to_request(&options);
    let turns = body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let texts = m["content"].as_array().unwrap().iter();
            let texts = texts.map(|b| b["text"].as_str().unwrap().to_string());
            (m["role"].as_str().unwrap().to_string(), texts.collect())
        })
        .collect();
    let kinds = notes.iter().map(|d| format!("{:?}", d.kind)).collect();
    (turns, kinds)
}

#[test]
fn blank_claude_turns_are_sent_as_sillytavern_sends_them_with_a_warning() {
    let chat = |texts: &[(&str, &str)]| {
        let items: Vec<Value> = texts
            .iter()
            .map(|(role, text)| json!({"tag": "DIALOGUE_HISTORY", "role": role, "text": text}))
            .collect();
        json!({"items": items})
    };
    // ST keeps whitespace-only messages; the API refuses a turn of nothing else: said once.
    let p = gen_preset(json!({}));
    let c = gen_ctx(
        "normal",
        chat(&[
            ("user", "Hi."),
            ("model", " \n "),
            ("user", "  "),
            ("model", "Hello"),
        ]),
    );
    let (turns, kinds) = claude_turns(&p, &c);
    let roles: Vec<&str> = turns.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(
        roles,
        ["user", "assistant", "user", "assistant", "user"],
        "{turns:?}"
    );
    assert_eq!(turns[1].1, [" \n "]);
    assert_eq!(turns[2].1, ["  "]);
    assert_eq!(kinds, ["BlankTurn"]);
    // A blank block beside a non-blank one is accepted: no warning.
    let c = gen_ctx(
        "normal",
        chat(&[("user", "Hi."), ("user", " "), ("model", "Hello")]),
    );
    let (turns, kinds) = claude_turns(&p, &c);
    assert_eq!(&turns[0].1[turns[0].1.len() - 2..], ["Hi.", " "]);
    assert!(kinds.is_empty(), "{kinds:?}");
    // A blank last message is the final assistant turn, as in ST.
    let mut last = gen_preset(json!({}));
    last["prompt_order"][0]["order"][2]["enabled"] = json!(false);
    let c = gen_ctx("normal", chat(&[("user", "Hi."), ("model", " \n ")]));
    let (turns, kinds) = claude_turns(&last, &c);
    assert_eq!(
        turns.last().unwrap(),
        &("assistant".to_string(), vec![" \n ".to_string()])
    );
    assert_eq!(kinds, ["BlankTurn"]);
    // The seed layout drops blank messages before the shape (SPEC §12.3 step 0), silently.
    let mut seed = c.clone();
    seed.layout = Layout::Seed;
    let (turns, kinds) = claude_turns(&last, &seed);
    assert!(
        turns
            .iter()
            .all(|t| t.1.iter().all(|b| !b.trim().is_empty()))
    );
    assert!(!kinds.iter().any(|k| k == "BlankTurn"), "{kinds:?}");
}

#[test]
fn group_chats_prefix_names_and_nudge() {
    let p = gen_preset(json!({}));
    let mut c = ctx(
        json!({"user": "Alice", "char": "Sera", "layout": "sillytavern",
        "group": ["Sera", "Mira"], "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello.", "name": "Mira"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi.", "name": "Alice"}]}),
    );
    assert_eq!(
        contents(&p, &c),
        [
            "Main.",
            "[Start a new group chat. Group members: Sera, Mira]",
            "Mira: Hello.",
            "Hi.",
            "[Write the next reply only as Sera.]",
            "PHI."
        ]
    );
    c.lore.get_or_insert_with(Default::default).generation_type =
        stpreset::lore::GenerationType::Impersonate;
    assert!(
        !contents(&p, &c)
            .iter()
            .any(|t| t.starts_with("[Write the next reply only"))
    );
}

/// A group of three in each generation mode (SPEC §18.3): the card fields are the speaker's
/// in swap mode and every member's, joined, in the append modes.
#[test]
fn group_append_modes_join_every_members_card() {
    let p = preset(
        json!([
            {"identifier": "charDescription", "marker": true},
            {"identifier": "charPersonality", "marker": true},
            {"identifier": "scenario", "marker": true},
            {"identifier": "chatHistory", "marker": true}
        ]),
        json!([{"identifier": "charDescription", "enabled": true},
               {"identifier": "charPersonality", "enabled": true},
               {"identifier": "scenario", "enabled": true},
               {"identifier": "chatHistory", "enabled": true}]),
    );
    let member = |name: &str, note: Option<(&str, u64)>| {
        let mut data = json!({"name": name, "description": format!("  {name} is {{{{char}}}}, <FieldName>.  "),
            "personality": if name == "Kai" { String::new() } else { format!("{name}-ish") }});
        if let Some((text, depth)) = note {
            data["extensions"] =
                json!({"depth_prompt": {"prompt": text, "depth": depth, "role": "system"}});
        }
        json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": data})
    };
    let base = |mode: &str, muted: Value| {
        json!({"user": "Alice", "char": "Sera", "layout": "sillytavern",
            "description": "Sera tends {{char}}'s shrine.", "personality": "calm",
            "scenario": "A festival.",
            "group": ["Sera", "Mira", "Kai"], "group_muted": muted,
            "group_generation_mode": mode,
            "group_join_prefix": "[<FIELDNAME> of {{char}}: ", "group_join_suffix": "]",
            "group_cards": {"Mira": member("Mira", Some(("Mira's note for {{char}}", 1))),
                            "Kai": member("Kai", None)},
            "items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi.", "name": "Alice"},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello.", "name": "Mira"},
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "And now?", "name": "Alice"}]})
    };
    // Swap: the speaker's own card, nothing of the others.
    let swap = contents(&p, &ctx(base("swap", json!([]))));
    assert_eq!(swap[0], "Sera tends Sera's shrine.");
    assert_eq!(swap[1], "calm");
    assert!(!swap.iter().any(|t| t.contains("Mira is")));
    // Append: every member's field with the join prefix and suffix, `<FIELDNAME>` replaced in
    // both and in the value, each member's macros with that member as `{{char}}`.
    let append = contents(&p, &ctx(base("append", json!([]))));
    assert_eq!(
        append[0],
        "[Description of Sera: Sera tends Sera's shrine.]\n\
         [Description of Mira: Mira is Mira, Description.]\n\
         [Description of Kai: Kai is Kai, Description.]"
    );
    // An empty field is left out with its prefix and suffix.
    assert_eq!(
        append[1],
        "[Personality of Sera: calm]\n[Personality of Mira: Mira-ish]"
    );
    assert_eq!(append[2], "[Scenario of Sera: A festival.]");
    // The card-field macros read the group's fields too (ST's getCharacterCardFields).
    let by_macro = preset(
        json!([{"identifier": "main", "content": "D: {{description}}", "role": "system"},
               {"identifier": "chatHistory", "marker": true}]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "chatHistory", "enabled": true}]),
    );
    assert_eq!(
        contents(&by_macro, &ctx(base("append", json!([]))))[0],
        format!("D: {}", append[0])
    );
    // Mira's Character's Note is injected at its depth, with her as `{{char}}`.
    assert!(
        append.contains(&"Mira's note for Mira".to_string()),
        "{append:?}"
    );
    // A muted member is left out in append mode (fields and note), kept in append_disabled
    // (fields only).
    let muted = contents(&p, &ctx(base("append", json!(["Mira"]))));
    assert!(!muted[0].contains("Mira is"));
    assert!(!muted.iter().any(|t| t.contains("Mira's note")));
    let disabled = contents(&p, &ctx(base("append_disabled", json!(["Mira"]))));
    assert!(disabled[0].contains("[Description of Mira: Mira is Mira, Description.]"));
    assert!(!disabled.iter().any(|t| t.contains("Mira's note")));
    // A member without a card is said and skipped; a bad mode is refused, naming the field.
    let mut v = base("append", json!([]));
    v["group_cards"].as_object_mut().unwrap().remove("Kai");
    let c = ctx(v);
    let p2 = Preset::from_json(p.to_string().as_bytes())
        .unwrap()
        .compile();
    let r = p2.render(&c);
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::GroupCardMissing
                && d.message.contains("Kai"))
    );
    assert!(!contents(&p, &c)[0].contains("Kai"));
    let mut v = base("append", json!([]));
    v["group_generation_mode"] = json!(1);
    let err = Context::from_json(v.to_string().as_bytes()).unwrap_err();
    assert!(err.to_string().contains("group_generation_mode"), "{err}");
    let mut v = base("append", json!([]));
    v["group_cards"]["Kai"] = json!([1]);
    let err = Context::from_json(v.to_string().as_bytes()).unwrap_err();
    assert!(err.to_string().contains("group_cards.Kai"), "{err}");
    // The CLI's --group-card gives the same render as the context's group_cards.
    let name = |n: &str| format!("group-{n}-{}", std::process::id());
    let preset_file = temp(&name("preset.json"), p.to_string().as_bytes());
    let mira = temp(
        &name("mira.json"),
        member("Mira", Some(("Mira's note for {{char}}", 1)))
            .to_string()
            .as_bytes(),
    );
    let kai = temp(
        &name("kai.json"),
        member("Kai", None).to_string().as_bytes(),
    );
    let mut v = base("append", json!([]));
    v.as_object_mut().unwrap().remove("group_cards");
    let ctx_file = temp(&name("ctx.json"), v.to_string().as_bytes());
    let out = stpreset(
        &[
            "render",
            arg(&preset_file),
            "--context",
            arg(&ctx_file),
            "--group-card",
            &format!("Mira={}", arg(&mira)),
            "--group-card",
            &format!("Kai={}", arg(&kai)),
            "--format",
            "json",
        ],
        None,
    );
    let cli = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        cli.contains("[Description of Kai: Kai is Kai, Description.]"),
        "{cli}"
    );
    assert!(cli.contains("Mira's note for Mira"), "{cli}");
}

#[test]
fn the_budget_is_spent_in_sillytavern_order() {
    let p = preset(
        json!([
            {"identifier": "main", "content": "Main.", "role": "system"},
            {"identifier": "dialogueExamples", "marker": true},
            {"identifier": "chatHistory", "marker": true}
        ]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "dialogueExamples", "enabled": true},
               {"identifier": "chatHistory", "enabled": true}]),
    );
    let history: Vec<Value> = (0..40)
        .map(|i| {
            json!({"tag": "DIALOGUE_HISTORY", "role": if i % 2 == 0 { "user" } else { "model" },
                         "text": format!("message number {i} of the long chat")})
        })
        .collect();
    let c = |max: u32| {
        let mut c = ctx(
            json!({"user": "Alice", "layout": "sillytavern", "tokenizer": "words",
            "max_context_tokens": max, "reserve_tokens": 0, "items": history}),
        );
        card(json!({"name": "Sera", "mes_example": "<START>\nAlice: Q?\nSera: A."}))
            .apply_to(&mut c);
        c
    };
    // Room for everything: examples and the whole history.
    let all = contents(&p, &c(100_000));
    assert!(all.contains(&"[Example Chat]".to_string()));
    assert!(all.contains(&"message number 0 of the long chat".to_string()));
    // Tight: the examples go before the oldest history, the newest messages stay.
    let tight = contents(&p, &c(200));
    assert!(!tight.contains(&"[Example Chat]".to_string()), "{tight:?}");
    assert!(!tight.contains(&"message number 0 of the long chat".to_string()));
    assert_eq!(tight.last().unwrap(), "message number 39 of the long chat");
    // Too small for the prompts ST always sends: the body so far and ContextOverflow.
    let small = c(5);
    let compiled = Preset::from_json(p.to_string().as_bytes())
        .unwrap()
        .compile();
    let out = compiled.render(&small);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::ContextOverflow)
    );
    // The prompt's tokens are reported, as in the seed layout.
    let fits = c(100_000);
    let counted = compiled.render(&fits).prompt_tokens();
    assert!(counted.is_some_and(|n| n > 100), "{counted:?}");
    // A preset without a context size has SillyTavern's (4095 - 300).
    let long: Vec<Value> = (0..3000)
        .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": "user", "text": format!("word {i}")}))
        .collect();
    let big = ctx(json!({"layout": "sillytavern", "tokenizer": "words", "items": long}));
    let n = contents(&p, &big).len();
    assert!(n < 3000, "{n} messages: no default budget");
}

#[test]
fn repeats_in_the_order_and_trim_marks_in_data_do_nothing_more() {
    // An in-chat prompt listed many times is taken once.
    let mut order = vec![json!({"identifier": "chatHistory", "enabled": true})];
    order.extend((0..1000).map(|_| json!({"identifier": "d", "enabled": true})));
    let p = preset(
        json!([{"identifier": "chatHistory", "marker": true},
               {"identifier": "d", "content": "DUP", "role": "system", "system_prompt": false,
                "injection_position": 1, "injection_depth": 0}]),
        Value::Array(order),
    );
    let c = ctx(
        json!({"layout": "sillytavern", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}),
    );
    assert_eq!(contents(&p, &c), ["[Start a new Chat]", "hi", "DUP"]);
    // Text that looks like a trim mark stays as written, in chat text and in what macros read.
    let mark = "a\n\n\u{F8FF}trim\u{F8FF}\n\nb";
    let p = preset(
        json!([{"identifier": "main", "content": "{{lastMessage}}|{{trim}}\n|x", "role": "system"},
               {"identifier": "chatHistory", "marker": true}]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "chatHistory", "enabled": true}]),
    );
    let c = ctx(
        json!({"layout": "sillytavern", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": mark}]}),
    );
    let got = contents(&p, &c);
    assert_eq!(got[0], format!("{mark}||x"));
    assert_eq!(got[2], mark);
}

#[test]
fn group_example_lines_are_found_by_any_member_name() {
    let p = preset(
        json!([{"identifier": "dialogueExamples", "marker": true}]),
        json!([{"identifier": "dialogueExamples", "enabled": true}]),
    );
    let mut c = ctx(
        json!({"user": "Alice", "char": "Sera", "layout": "sillytavern",
        "group": ["Sera", "Dr: Mira", "Kai"],
        "mes_examples_raw": "<START>\nAlice: Q\nDr: Mira: A\nAlice: R\nKai: B\nnot: a speaker"}),
    );
    c.char = "Sera".into();
    // As ST's `parseExampleIntoIndividual`: a member line opens a character message, named by
    // the text before its first colon; other lines continue the message.
    let got = contents(&p, &c);
    assert_eq!(
        got,
        [
            "[Example Chat]",
            "Alice: Q",
            "Dr: Mira: A",
            "Alice: R",
            "Kai: B\nnot: a speaker"
        ]
    );
}

#[test]
fn what_the_layout_leaves_out_is_said() {
    let p = gen_preset(json!({}));
    let kinds = |c: &Context| -> Vec<stpreset::DiagnosticKind> {
        Preset::from_json(p.to_string().as_bytes())
            .unwrap()
            .compile()
            .render(c)
            .diagnostics
            .iter()
            .map(|d| d.kind)
            .collect()
    };
    let c = ctx(json!({"layout": "sillytavern", "items": [
        {"tag": "KNOWLEDGE_SERVER_MEMORIES", "role": "system", "text": "a memory"},
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}));
    assert!(kinds(&c).contains(&stpreset::DiagnosticKind::ItemsIgnored));
    let group = ctx(
        json!({"layout": "sillytavern", "char": "Sera", "group": ["Sera", "Mira"], "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "who am I"}]}),
    );
    assert!(kinds(&group).contains(&stpreset::DiagnosticKind::MissingSpeakerName));
    let history: Vec<Value> = (0..50)
        .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": "user", "text": format!("line {i} of many words here")}))
        .collect();
    let tight = ctx(
        json!({"layout": "sillytavern", "tokenizer": "words", "max_context_tokens": 120,
        "reserve_tokens": 0, "items": history}),
    );
    assert!(kinds(&tight).contains(&stpreset::DiagnosticKind::HistoryTrimmed));
    // A chat file whose first line is a message is refused: it has no header.
    let err = Context::from_st_chat(b"{\"name\": \"Sera\", \"mes\": \"hello\"}\n").unwrap_err();
    assert!(err.to_string().contains("header"), "{err}");
}

/// The shapes of the hostile review of the SillyTavern layout (issue 52), at their reported
/// sizes: each stays within the output cap with one `LimitReached`, and text under the cap is
/// SillyTavern's. Time is measured in benches/linear.rs, never here.
#[test]
fn hostile_shapes_stay_within_the_output_cap() {
    let cap = Limits::default().output_bytes;
    let p = Preset::from_json(
        br#"{"prompts": [{"identifier": "main", "content": "Be {{char}}."},
        {"identifier": "dialogueExamples", "marker": true},
        {"identifier": "chatHistory", "marker": true}]}"#,
    )
    .unwrap()
    .compile();
    let check = |c: &Context, what: &str| {
        let out = p.render(c);
        let total: usize = out.messages.iter().map(stpreset::Message::len).sum();
        assert!(total <= cap, "{what}: {total} bytes");
        let cut = out
            .diagnostics
            .iter()
            .filter(|d| d.kind == stpreset::DiagnosticKind::LimitReached)
            .count();
        // One for the layout's cap; a card's fields also meet the evaluator's work budget.
        assert!(cut >= 1, "{what}: {:?}", out.diagnostics);
        if !what.starts_with("card fields") {
            assert_eq!(cut, 1, "{what}: {:?}", out.diagnostics);
        }
    };
    // 1. A 10 KB user name and one message of 100,000 `{{user}}` (a gigabyte replaced), with
    //    the history budget off and on.
    let chat = format!(
        "{}\n{}\n",
        json!({"user_name": "u".repeat(10_000), "character_name": "Sera"}),
        json!({"name": "x", "is_user": true, "mes": "{{user}}".repeat(100_000)})
    );
    let mut c = Context::from_st_chat(chat.as_bytes()).unwrap();
    c.layout = Layout::SillyTavern;
    c.options.budget.max_context_tokens = stpreset::provider::Tri::Null;
    check(&c, "user name macros, no budget");
    // The same through the card's 10 KB name (`<BOT>`) and ten 1 KB group members.
    let mut c = ctx(json!({"layout": "sillytavern", "char": "b".repeat(10_000),
        "max_context_tokens": null,
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "<BOT>".repeat(100_000)}]}));
    check(&c, "card name macros");
    c.group = (0..10)
        .map(|i| format!("{i}{}", "m".repeat(1_000)))
        .collect();
    c.char = c.group[0].clone();
    c.items[0].text = "{{notChar}}".repeat(100_000);
    check(&c, "group member names");
    // 3. Card fields that expand each other (SPEC §8's cap in this layout too).
    let mut c = ctx(json!({"layout": "sillytavern", "char": "Sera", "max_context_tokens": null}));
    card(
        json!({"name": "Sera", "description": "{{personality}}".repeat(10_000),
        "personality": "{{scenario}}".repeat(10_000), "scenario": "s".repeat(100),
        "system_prompt": "{{description}}", "post_history_instructions": "{{description}}",
        "mes_example": "<START>\n{{user}}: {{description}}"}),
    )
    .apply_to(&mut c);
    check(&c, "card fields");
}

#[test]
fn group_example_lines_of_colons_and_long_prompt_lists_render() {
    // 2. A group example line of a million colons: no member name is that long.
    let mut c = ctx(
        json!({"layout": "sillytavern", "char": "Sera", "group": ["Sera", "Mira"],
        "max_context_tokens": null, "mes_examples_raw": format!("<START>\nAlice: hi\n{}\nMira: yo", ":".repeat(1_000_000))}),
    );
    c.user = "Alice".into();
    let p = preset(
        json!([{"identifier": "main", "content": "M"},
               {"identifier": "dialogueExamples", "marker": true},
               {"identifier": "chatHistory", "marker": true}]),
        json!([{"identifier": "main", "enabled": true},
               {"identifier": "dialogueExamples", "enabled": true},
               {"identifier": "chatHistory", "enabled": true}]),
    );
    let m = messages(&p, &c);
    assert!(
        m.iter().any(
            |(_, text, name)| name.as_deref() == Some("example_assistant") && text == "Mira: yo"
        )
    );
    // 4. 20,000 prompts, all in the 100001 order, each switched off by the host: one map.
    let ids: Vec<String> = (0..20_000).map(|i| format!("p{i}")).collect();
    let prompts: Vec<Value> = ids
        .iter()
        .map(|id| json!({"identifier": id, "content": "x", "system_prompt": false}))
        .collect();
    let order: Vec<Value> = ids
        .iter()
        .map(|id| json!({"identifier": id, "enabled": true}))
        .collect();
    let doc =
        json!({"prompts": prompts, "prompt_order": [{"character_id": 100001, "order": order}]});
    let mut preset = Preset::from_json(doc.to_string().as_bytes()).unwrap();
    let c = ctx(json!({"layout": "sillytavern", "max_context_tokens": null}));
    assert_eq!(preset.compile().render(&c).messages.len(), 20_000);
    preset
        .set_enabled_all(ids.iter().skip(1).map(|id| (id.as_str(), false)))
        .unwrap();
    assert_eq!(preset.compile().render(&c).messages.len(), 1);
}

/// Issue 53: a chat started from a card as SillyTavern opens one (`getFirstMessage`): the
/// first message of the character, with the alternate greetings as its swipes, each after the
/// store pass; the CLI's `--first-message` on a chat without history.
#[test]
fn a_chat_starts_with_the_cards_first_message() {
    let p = Preset::from_json(
        json!({"prompts": [{"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [{"findRegex": "/<ooc>.*?<\\/ooc>/g", "replaceString": "",
                "placement": [2]}]}})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    let mut c = ctx(json!({"char": "Sera", "user": "Alice", "allow_preset_regex": true}));
    card(
        json!({"name": "Sera", "first_mes": "Hello, {{user}}.<ooc>note</ooc>",
        "alternate_greetings": ["Hm? <ooc>x</ooc>", "Yes."]}),
    )
    .apply_to(&mut c);
    let first = p.first_message(&c).unwrap();
    assert_eq!(first.swipes, ["Hello, {{user}}.", "Hm? ", "Yes."]);
    assert_eq!(first.item.text, "Hello, {{user}}.");
    assert_eq!(first.item.role, stpreset::Role::Model);
    assert_eq!(first.item.tag, Some(stpreset::Tag::DialogueHistory));
    // An empty first_mes: the alternates alone (ST shifts the empty swipe out).
    c.first_mes.clear();
    assert_eq!(p.first_message(&c).unwrap().swipes, ["Hm? ", "Yes."]);
    // No greeting at all: no message.
    c.alternate_greetings.clear();
    assert!(p.first_message(&c).is_none());

    // The CLI: --first-message SWIPE starts a chat that has no history.
    let preset_file = temp(
        "first-preset.json",
        br#"{"prompts": [{"identifier": "chatHistory", "marker": true}]}"#,
    );
    let card_file = temp(
        "first-card.json",
        json!({"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": "Sera",
            "first_mes": "Hello.", "alternate_greetings": ["Hm?"]}})
        .to_string()
        .as_bytes(),
    );
    let texts = |extra: &[&str]| -> (Option<i32>, Vec<String>, String) {
        let mut args = vec!["render", arg(&preset_file), "--card", arg(&card_file)];
        args.extend(extra);
        args.extend(["--format", "json"]);
        let out = stpreset(&args, None);
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let texts = doc["messages"]
            .as_array()
            .map(|m| {
                m.iter()
                    .map(|m| m["parts"][0].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default();
        (out.status.code(), texts, text(&out.stderr))
    };
    assert_eq!(texts(&["--first-message"]).1, ["Sera: Hello."]);
    assert_eq!(texts(&["--first-message", "1"]).1, ["Sera: Hm?"]);
    assert!(texts(&[]).1.is_empty());
    let (code, _, err) = texts(&["--first-message", "2"]);
    assert_eq!(code, Some(1));
    assert!(err.contains("2 greeting"), "{err}");
    let history = temp(
        "first-history.json",
        br#"{"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#,
    );
    assert_eq!(
        texts(&["--context", arg(&history), "--first-message"]).1,
        ["hi"]
    );
}

/// The seed layout's roles and texts for a generation type (SPEC §18.1): `gen_ctx` without the
/// SillyTavern layout.
fn seed_turn(generation: &str, settings: Value, extra: Value) -> Vec<(String, String)> {
    let mut c = gen_ctx(generation, extra);
    c.layout = Layout::Seed;
    let p = Preset::from_json(gen_preset(settings).to_string().as_bytes())
        .unwrap()
        .compile();
    p.render(&c)
        .messages
        .iter()
        .map(|m| (format!("{:?}", m.role), m.text().into_owned()))
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(r, t)| (r.to_string(), t.to_string()))
        .collect()
}

/// Issue 49: in the seed layout every generation type changes the prompt as SPEC §18.1 says,
/// and a normal one (or a regeneration: the host left the reply out) is as before.
#[test]
fn generation_types_in_the_seed_layout() {
    let normal = pairs(&[
        ("System", "Main."),
        ("User", "Hi."),
        ("Model", "Hello there"),
        ("System", "PHI."),
    ]);
    assert_eq!(seed_turn("normal", json!({}), json!({})), normal);
    assert_eq!(seed_turn("regenerate", json!({}), json!({})), normal);
    // Continue: the continued message goes after every prompt, then its nudge, whose
    // `{{lastChatMessage}}` is the continued text.
    let nudge = json!({"continue_nudge_prompt": "[Go on from: {{lastChatMessage}}]"});
    assert_eq!(
        seed_turn("continue", nudge.clone(), json!({})),
        pairs(&[
            ("System", "Main."),
            ("User", "Hi."),
            ("System", "PHI."),
            ("Model", "Hello there"),
            ("System", "[Go on from: Hello there]"),
        ])
    );
    // ST's default nudge, and none with `continue_prefill` (the message is already last).
    let d = seed_turn("continue", json!({}), json!({}));
    assert_eq!(
        d.last().unwrap().1,
        "[Continue your last message without repeating its original content.]"
    );
    assert_eq!(
        seed_turn("continue", json!({"continue_prefill": true}), json!({})),
        normal
    );
    // Impersonate: ST's prompt (macros expanded), or the preset's, last.
    let i = seed_turn("impersonate", json!({}), json!({}));
    assert_eq!(i[..4], normal[..]);
    assert!(
        i[4].1
            .starts_with("[Write your next reply from the point of view of Alice")
    );
    let i = seed_turn(
        "impersonate",
        json!({"impersonation_prompt": "Be {{user}}, not {{char}}."}),
        json!({}),
    );
    assert_eq!(i[4], ("System".into(), "Be Alice, not Sera.".into()));
    // Quiet: the quiet prompt last; without one the normal prompt.
    let q = seed_turn(
        "quiet",
        json!({}),
        json!({"quiet_prompt": "Summarize {{char}}."}),
    );
    assert_eq!(q[4], ("System".into(), "Summarize Sera.".into()));
    assert_eq!(seed_turn("quiet", json!({}), json!({})), normal);
    // Swipe: the reply it replaces is left out of the prompt.
    assert_eq!(
        seed_turn("swipe", json!({}), json!({})),
        pairs(&[("System", "Main."), ("User", "Hi."), ("System", "PHI.")])
    );
}

/// A seed-layout preset of `main` (this text), World Info before, and the history.
fn lore_preset(main: &str) -> stpreset::CompiledPreset {
    Preset::from_json(
        json!({"prompts": [
            {"identifier": "main", "content": main},
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}],
            "prompt_order": [{"character_id": 100001, "order": [
                {"identifier": "main", "enabled": true},
                {"identifier": "worldInfoBefore", "enabled": true},
                {"identifier": "chatHistory", "enabled": true}]}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile()
}

/// A swipe leaves the replaced reply out of World Info's scan too, while `{{lastMessage}}`
/// still reads it; a chat that ends with the user's message is kept, and said.
#[test]
fn a_seed_swipe_reads_the_reply_but_does_not_scan_it() {
    let p = lore_preset("Last: {{lastMessage}} | {{lastCharMessage}}");
    let c = ctx(json!({"generation_type": "swipe", "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."},
        {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "A dragon appears."}],
        "lorebooks": [{"name": "b", "entries": {"0": {"key": ["dragon"], "content": "Dragons breathe fire."}}}]}));
    let out = p.render(&c);
    let texts: Vec<String> = out.messages.iter().map(|m| m.text().into_owned()).collect();
    assert_eq!(
        texts,
        ["Last: A dragon appears. | A dragon appears.", "Hi."],
        "{texts:?}"
    );
    let mut c = c;
    c.items.pop();
    let out = p.render(&c);
    assert!(
        out.diagnostics
            .iter()
            .any(|d| d.kind == stpreset::DiagnosticKind::GenerationFallback)
    );
    assert_eq!(out.messages.last().unwrap().text(), "Hi.");
}

/// `quiet_skip_wi` in the seed layout: World Info at depth and the outlets are left out of a
/// quiet generation (ST's `skipWIAN`); World Info before the history stays.
#[test]
fn a_seed_quiet_generation_can_skip_world_info_at_depth() {
    let p = lore_preset("Main. [{{outlet::o}}]");
    let texts = |skip: bool| -> Vec<String> {
        let c = ctx(
            json!({"generation_type": "quiet", "quiet_prompt": "Summarize.",
            "quiet_skip_wi": skip, "items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "The rain falls."}],
            "lorebooks": [{"name": "b", "entries": {
                "0": {"key": ["rain"], "content": "Before.", "position": 0},
                "1": {"key": ["rain"], "content": "Deep.", "position": 4, "depth": 0},
                "2": {"key": ["rain"], "content": "Out.", "position": 7, "outletName": "o"}}}]}),
        );
        p.render(&c)
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect()
    };
    let with = texts(false).join("|");
    assert!(with.contains("Deep.") && with.contains("[Out.]"), "{with}");
    let without = texts(true).join("|");
    assert!(
        !without.contains("Deep.") && without.contains("[]"),
        "{without}"
    );
    assert!(
        without.contains("Before.") && without.ends_with("Summarize."),
        "{without}"
    );
}

/// Issue 49 (SPEC §18.2): in the seed layout the preset file's `names_behavior` is ignored (the
/// output stays as it was), and a mode the host sets in `preset_settings` prefixes the chat
/// as that mode says.
#[test]
fn seed_names_follow_the_hosts_names_behavior() {
    let p = Preset::from_json(
        json!({"names_behavior": 2, "prompts": [
            {"identifier": "chatHistory", "marker": true}],
            "prompt_order": [{"character_id": 100001, "order": [
                {"identifier": "chatHistory", "enabled": true}]}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    let texts = |extra: Value| -> Vec<String> {
        let mut v = json!({"user": "Alice", "char": "Sera", "items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello.", "name": "Kaede"},
            {"tag": "DIALOGUE_HISTORY", "role": "system", "text": "It rains."}]});
        if let (Value::Object(v), Value::Object(e)) = (&mut v, extra) {
            v.extend(e);
        }
        p.render(&ctx(v))
            .messages
            .iter()
            .map(|m| m.text().into_owned())
            .collect()
    };
    // The file's 2 is ignored: only the item's own name prefixes it (SPEC §16).
    assert_eq!(texts(json!({})), ["Hi.", "Kaede: Hello.", "It rains."]);
    let mode = |n: i64| json!({"preset_settings": {"names_behavior": n}});
    assert_eq!(texts(mode(2)), ["Alice: Hi.", "Kaede: Hello.", "It rains."]);
    assert_eq!(texts(mode(-1)), ["Hi.", "Hello.", "It rains."]);
    assert_eq!(texts(mode(1)), ["Hi.", "Hello.", "It rains."]);
    // 0: only in a group chat, and never the user's messages.
    assert_eq!(texts(mode(0)), ["Hi.", "Hello.", "It rains."]);
    let mut group = mode(0);
    group["group"] = json!(["Sera", "Kaede"]);
    assert_eq!(texts(group), ["Hi.", "Kaede: Hello.", "Sera: It rains."]);
    let with_rules = Preset::from_json(
        json!({"prompts": [
            {"identifier": "main", "role": "system", "content": "Be kind."},
            {"identifier": "chatHistory", "marker": true}],
            "prompt_order": [{"character_id": 100001, "order": [
                {"identifier": "main", "enabled": true},
                {"identifier": "chatHistory", "enabled": true}]}]})
        .to_string()
        .as_bytes(),
    )
    .unwrap()
    .compile();
    // 1: no prefix; each chat message names its speaker instead, cleaned as ST's sanitizeName,
    // and the request carries the names (other modes and no mode name no message).
    let named = |extra: Value| {
        let mut v = json!({"user": "Alice Liddell", "char": "Sera", "items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi."},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello.", "name": "Kaede"},
            {"tag": "DIALOGUE_HISTORY", "role": "system", "text": "It rains."}]});
        if let (Value::Object(v), Value::Object(e)) = (&mut v, extra) {
            v.extend(e);
        }
        let c = ctx(v);
        let r = with_rules.render(&c);
        let names: Vec<Option<String>> = (0..r.messages.len())
            .map(|i| r.message_name(i).map(str::to_owned))
            .collect();
        let (body, _) = r.to_request(&c.provider_options);
        let sent: Vec<Value> = body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m.get("name").cloned().unwrap_or(Value::Null))
            .collect();
        (names, sent)
    };
    let (names, sent) = named(mode(1));
    let some = |s: &str| Some(s.to_owned());
    assert_eq!(
        names,
        [None, some("Alice_Liddell"), some("Kaede"), some("Sera")]
    );
    assert_eq!(
        sent,
        [
            Value::Null,
            json!("Alice_Liddell"),
            json!("Kaede"),
            json!("Sera")
        ]
    );
    for other in [json!({}), mode(0), mode(2), mode(-1)] {
        let (names, sent) = named(other);
        assert!(names.iter().all(Option::is_none), "{names:?}");
        assert!(sent.iter().all(Value::is_null), "{sent:?}");
    }
}

/// A SillyTavern chat file's swipes feed `{{lastSwipeId}}` / `{{currentSwipeId}}` (counted,
/// their texts never built); a message without them has none.
#[test]
fn a_chat_files_swipes_reach_the_swipe_macros() {
    let chat = br#"{"user_name": "Alice", "character_name": "Sera"}
{"name": "Alice", "is_user": true, "mes": "Hi."}
{"name": "Sera", "is_user": false, "mes": "B", "swipes": ["A", "B", {"odd": [1]}], "swipe_id": 1}"#;
    let ctx = Context::from_st_chat(chat).unwrap();
    assert_eq!((ctx.items[0].swipes, ctx.items[0].swipe_id), (None, None));
    assert_eq!(
        (ctx.items[1].swipes, ctx.items[1].swipe_id),
        (Some(3), Some(1))
    );
    let out = stpreset::expand("{{lastSwipeId}}|{{currentSwipeId}}|{{lastMessageId}}", &ctx);
    assert_eq!(out.text, "3|2|1");
}

/// A history text the layout leaves as it is comes back as the item's own text (so a binding
/// hands the caller's string back): in a normal turn and in a swipe, whose copy of the chat
/// lacks the reply; a text the layout changes (a name macro, a carriage return) is a copy.
#[test]
fn unchanged_history_texts_are_the_items_own() {
    let p = Preset::from_json(gen_preset(json!({})).to_string().as_bytes())
        .unwrap()
        .compile();
    for generation in ["normal", "swipe"] {
        let mut c = gen_ctx(generation, json!({}));
        for (role, text) in [
            (stpreset::Role::User, "Where is {{char}}?"),
            (stpreset::Role::Model, "Here.\r\nStill here."),
            (stpreset::Role::User, "Good."),
            (stpreset::Role::Model, "Reply."),
        ] {
            c.items.push(stpreset::ContextItem::new(
                Some(stpreset::Tag::DialogueHistory),
                role,
                text,
            ));
        }
        let out = p.render(&c);
        let mut items = stpreset::passthrough::Passthrough::new(&c);
        let found: Vec<(String, Option<usize>)> = out
            .messages
            .iter()
            .map(|m| (m.text().into_owned(), items.item_of(&m.parts()[0])))
            .collect();
        let mut want = vec![
            ("Main.".to_string(), None),
            ("[Start a new Chat]".to_string(), None),
            ("Hi.".to_string(), Some(0)),
            ("Hello there".to_string(), Some(1)),
            ("Where is Sera?".to_string(), None),
            ("Here.\nStill here.".to_string(), None),
            ("Good.".to_string(), Some(4)),
            ("Reply.".to_string(), Some(5)),
            ("PHI.".to_string(), None),
        ];
        if generation == "swipe" {
            want.remove(7);
        }
        assert_eq!(found, want, "{generation}");
    }
}

/// The SillyTavern layout keeps every prompt, history message and example without counting
/// them when they fit by their byte lengths: the same render as a counter that counts every
/// one (o200k behind a host counter, which promises no byte bound), at every window from one
/// too small for the prompts to more than enough.
#[test]
fn a_render_that_fits_by_bytes_renders_as_one_counted_message_by_message() {
    use stpreset::tokens::{Counter, Tokenizer};
    // Prompts of many bytes to the token, so that a window can hold one by its count and not
    // by its bytes.
    let long = |what: &str| {
        format!(
            "{what}: {}",
            "keep the scene vivid and grounded. ".repeat(12)
        )
    };
    let p = preset(
        json!([
            {"identifier": "main", "content": long("Main"), "role": "system"},
            {"identifier": "nsfw", "content": long("Aux"), "role": "system"},
            {"identifier": "dialogueExamples", "marker": true},
            {"identifier": "chatHistory", "marker": true},
            {"identifier": "jailbreak", "content": long("PHI"), "role": "system"}
        ]),
        json!([{"identifier": "main", "enabled": true}, {"identifier": "nsfw", "enabled": true},
               {"identifier": "dialogueExamples", "enabled": true},
               {"identifier": "chatHistory", "enabled": true},
               {"identifier": "jailbreak", "enabled": true}]),
    );
    let p = Preset::from_json(p.to_string().as_bytes())
        .unwrap()
        .compile();
    let history: Vec<Value> = (0..30)
        .map(|i| {
            let role = if i % 2 == 0 { "user" } else { "model" };
            json!({"tag": "DIALOGUE_HISTORY", "role": role, "text": format!("line {i}: the rain 🌧 on the shrine's roof, again")})
        })
        .collect();
    let exact = Counter::Custom(Counter::Builtin(Tokenizer::O200k).for_model(""));
    let (mut trimmed, mut overflowed) = (0, 0);
    for window in (1..4000).step_by(7) {
        let base = ctx(
            json!({"layout": "sillytavern", "tokenizer": "o200k", "reserve_tokens": 0,
            "max_context_tokens": window, "items": history,
            "mes_examples": "<START>\n{{user}}: Hello?\n{{char}}: Welcome, traveller."}),
        );
        let mut counted = base.clone();
        counted.options.budget.counter = exact.clone();
        let (a, b) = (p.render(&base), p.render(&counted));
        assert_eq!(a.to_json(), b.to_json(), "window {window}");
        trimmed += usize::from(
            a.diagnostics
                .iter()
                .any(|d| d.kind == stpreset::DiagnosticKind::HistoryTrimmed),
        );
        overflowed += usize::from(
            a.diagnostics
                .iter()
                .any(|d| d.kind == stpreset::DiagnosticKind::ContextOverflow),
        );
    }
    // Every side of the bounds was walked: windows too small for the prompts, windows that
    // trim the history and windows that keep all.
    assert!(
        overflowed > 0 && trimmed > overflowed && trimmed < 500,
        "{overflowed} {trimmed}"
    );
}
