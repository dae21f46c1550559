//! One work budget per render (issue 38): the stages' limits are shares of one total, so a
//! hostile preset and a hostile book together cost what one of them may, and running out is
//! deterministic and reported once.

use serde_json::json;
use stpreset::{Context, DiagnosticKind, Limits, Preset, Template};

/// Four scripts that backtrack on every history item, a history of long runs of `a`, and a
/// book whose 130 `delayUntilRecursion` levels force a pass per level (the reviewer's
/// levels book, smaller).
fn hostile(regex: bool, book: bool, limits: impl FnOnce(&mut Limits)) -> Context {
    let mut entries = serde_json::Map::new();
    for i in 0..2000 {
        let mut e = json!({"uid": i, "key": distinct_keys(40), "content": format!("c{i}")});
        if i < 130 {
            e["delayUntilRecursion"] = json!(i + 1);
        }
        if i == 0 {
            e["constant"] = json!(true);
        }
        entries.insert(i.to_string(), e);
    }
    let items: Vec<_> = (0..40)
        .map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": if i % 2 == 0 {"user"} else {"model"}, "text": "a".repeat(300)}))
        .collect();
    let mut doc = json!({"user": "A", "char": "B", "items": items, "allow_preset_regex": regex});
    if book {
        doc["lorebooks"] = json!([{"name": "levels", "entries": entries}]);
    }
    let mut ctx = Context::from_json(doc.to_string().as_bytes()).unwrap();
    limits(&mut ctx.options.limits);
    ctx
}

fn preset() -> stpreset::CompiledPreset {
    let scripts: Vec<_> = (0..4)
        .map(|k| {
            json!({"scriptName": format!("s{k}"), "findRegex": "/(a|a)*\\d/g", "replaceString": "x",
            "placement": [1, 2], "promptOnly": true})
        })
        .collect();
    let doc = json!({"prompts": [{"identifier": "main", "content": "Main {{user}}"},
            {"identifier": "worldInfoBefore", "marker": true},
            {"identifier": "chatHistory", "marker": true}],
        "extensions": {"regex_scripts": scripts}});
    Preset::from_json(doc.to_string().as_bytes())
        .unwrap()
        .compile()
}

fn small(l: &mut Limits) {
    // Regex: 1.2 M steps (2.4 M units); World Info keys: 1 M steps (1 M units); the render:
    // 3 M units. Each fits alone, together they do not.
    l.regex_pass_steps = 1_200_000;
    l.lore_plain_steps = 1_000_000;
    l.render_work = 3_000_000;
}

fn kinds(out: &stpreset::Rendered<'_>, kind: DiagnosticKind) -> Vec<String> {
    out.diagnostics
        .iter()
        .filter(|d| d.kind == kind)
        .map(|d| d.message.to_string())
        .collect()
}

#[test]
fn each_stage_alone_stops_at_its_own_share() {
    let p = preset();
    let regex = hostile(true, false, small);
    let out = p.render(&regex);
    assert!(kinds(&out, DiagnosticKind::WorkLimit).is_empty());
    let pass = kinds(&out, DiagnosticKind::RegexLimit);
    assert!(
        pass.iter().any(|m| m.contains("1200000 matcher steps")),
        "{pass:?}"
    );

    // The book alone spends under 1 M steps: a share of 300 k stops it.
    let lore = hostile(false, true, |l| {
        small(l);
        l.lore_plain_steps = 300_000;
    });
    let out = p.render(&lore);
    assert!(
        kinds(&out, DiagnosticKind::WorkLimit).is_empty(),
        "{:#?}",
        out.diagnostics
    );
    let spent = kinds(&out, DiagnosticKind::LoreLimit);
    assert!(
        spent.iter().any(|m| m.contains("key-matching steps")),
        "{:#?}",
        out.diagnostics
    );
}

#[test]
fn stages_together_share_one_budget_and_stop_the_same_way_every_time() {
    let p = preset();
    let both = hostile(true, true, small);
    let out = p.render(&both);
    let work = kinds(&out, DiagnosticKind::WorkLimit);
    assert_eq!(work.len(), 1, "{:#?}", out.diagnostics);
    assert!(
        work[0].contains("3000000 units")
            && work[0].contains("regex scripts spent the most (80% of the budget, "),
        "{work:?}"
    );
    // The stage the meter stopped does not blame its own limit.
    assert!(
        kinds(&out, DiagnosticKind::LoreLimit)
            .iter()
            .all(|m| !m.contains("key-matching steps"))
    );
    // Deterministic: the same inputs are cut at the same place.
    assert_eq!(p.render(&both).to_json(), out.to_json());
    // The regex pass still ran in full (it comes first), so the history is the same as alone.
    let regex_only = hostile(true, false, small);
    let alone = p.render(&regex_only);
    let history = |o: &stpreset::Rendered<'_>| {
        o.messages
            .iter()
            .filter(|m| m.text().starts_with('a'))
            .count()
    };
    assert_eq!(history(&out), history(&alone));
    // A render after a cut one starts with a full budget.
    let after = p.render(&regex_only);
    assert!(kinds(&after, DiagnosticKind::WorkLimit).is_empty());
}

#[test]
fn template_bytes_are_charged_to_the_render() {
    let ctx = |render_work: u64| {
        let mut c = Context::from_json(
            json!({"globals": {"big": "b".repeat(10_000)}})
                .to_string()
                .as_bytes(),
        )
        .unwrap();
        c.options.limits.render_work = render_work;
        c
    };
    let t = Template::compile(&"{{setvar::x::{{getglobalvar::big}}}}".repeat(100));
    let full = t.render(&ctx(Limits::default().render_work));
    assert!(full.diagnostics.is_empty(), "{:#?}", full.diagnostics);
    // 1 MB produced, 100 kB allowed: one `WorkLimit`, no `LimitReached` for `work_bytes`.
    let cut = t.render(&ctx(100_000));
    let k: Vec<_> = cut.diagnostics.iter().map(|d| d.kind).collect();
    assert_eq!(k, [DiagnosticKind::WorkLimit], "{:#?}", cut.diagnostics);
    assert!(cut.diagnostics[0].message.contains("template evaluation"));
    assert_eq!(t.render(&ctx(100_000)).variables, cut.variables);
}

/// Chat text a user writes pays from its own share (`Limits::chat_work`): a history that makes
/// the preset's scripts backtrack stops at that share, and the rest of the render goes on with
/// the render's budget.
#[test]
fn chat_text_stops_at_its_share_and_the_rest_renders() {
    let p = preset();
    let ctx = hostile(true, false, |l| {
        l.chat_work = 200_000;
    });
    let out = p.render(&ctx);
    let work = kinds(&out, DiagnosticKind::WorkLimit);
    assert_eq!(work.len(), 1, "{:#?}", out.diagnostics);
    assert!(
        work[0].starts_with(
            "the work on chat text spent its share of the render's budget (200000 units"
        ),
        "{work:?}"
    );
    assert_eq!(out.messages[0].text(), "Main A");
    assert_eq!(p.render(&ctx).to_json(), out.to_json());
}

/// A host tunes the budget in the context file (`limits`); the other limits are not read
/// there, and a refusal names the field.
#[test]
fn the_context_sets_the_work_budget() {
    let ctx =
        Context::from_json(br#"{"limits": {"render_work": 5000000, "chat_work": 7}}"#).unwrap();
    assert_eq!(ctx.options.limits.render_work, 5_000_000);
    assert_eq!(ctx.options.limits.chat_work, 7);
    assert_eq!(
        ctx.options.limits.output_bytes,
        Limits::default().output_bytes
    );
    for (bad, field) in [
        (r#"{"limits": {"output_bytes": 1}}"#, "limits.output_bytes"),
        (r#"{"limits": {"render_work": -1}}"#, "limits.render_work"),
        (r#"{"limits": {"chat_work": "many"}}"#, "limits.chat_work"),
        (r#"{"limits": [1]}"#, "limits"),
    ] {
        let err = Context::from_json(bad.as_bytes()).unwrap_err().to_string();
        assert!(err.contains(field), "{bad}: {err}");
    }
    // A chat keeps it across `set_json`.
    let mut chat = stpreset::Chat::from_json(br#"{"limits": {"chat_work": 9}}"#).unwrap();
    chat.set_json(br#"{"user": "B"}"#).unwrap();
    assert_eq!(chat.context().options.limits.chat_work, 9);
}

/// `n` different keys that never match (`zq0`, `zq1`, …): repeated keys are kept once at
/// import, so the hostile books' keys differ.
fn distinct_keys(n: usize) -> Vec<String> {
    (0..n).map(|k| format!("zq{k}")).collect()
}
