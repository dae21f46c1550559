//! The previewer's JSON API as plain functions of a request body: what `POST /api/render`,
//! `/api/audit`, `/api/request` and `/api/preview` answer. The documents are the library's (the
//! same bytes as `stpreset render --format json`, `audit --format json`, `render --shape`); this
//! module reads the request, applies it, and splices documents into the page's one answer.
//! Nothing here knows about HTTP beyond a status code, so it is tested without a server.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::value::RawValue;
use stpreset::{CompiledPreset, Context, Diagnostic, Preset, Rendered, Shape, Tag};

use crate::cli::MAX_INPUT;

/// Largest request body: a preset and a context at the CLI's input limit each, and room for
/// the options (toggles name nodes, so they are bounded by the preset's size).
pub(crate) const MAX_BODY: usize = 2 * MAX_INPUT + (MAX_INPUT / 2);

/// Most regex scripts whose effect on the history is told script by script: each costs one
/// prompt pass more (SPEC §13 bounds each pass); past it the page says which messages changed.
const MAX_ATTRIBUTED_SCRIPTS: usize = 16;

/// Most diagnostics of each list in a preview: a page cannot show 400,000 of them (a 2 MiB
/// preset of `{{x}}` makes that many), and the answer would be hundreds of megabytes. The
/// count of the others is in `omitted`; `/api/render` and `/api/audit` keep every one, as the
/// CLI's JSON does.
const MAX_PREVIEW_DIAGNOSTICS: usize = 500;

/// Most history messages a preview lists as changed by the regex scripts, and the characters
/// of each text (before, after) it carries: what the page shows.
const MAX_REGEX_MESSAGES: usize = 200;
const MAX_REGEX_TEXT: usize = 2000;

/// An answer: a status code and a JSON body.
#[derive(Debug)]
pub(crate) struct Answer {
    pub status: u16,
    pub body: String,
}

impl Answer {
    fn ok(body: String) -> Answer {
        Answer { status: 200, body }
    }

    /// `{"error": {"kind", "message"}}`: every refusal has this shape, whatever refused it.
    pub(crate) fn error(status: u16, kind: &str, message: &str) -> Answer {
        let body = serde_json::json!({"error": {"kind": kind, "message": message}}).to_string();
        Answer { status, body }
    }
}

/// What a `POST` carries. Unknown fields are refused so that a typo (`"toogles"`) is an error,
/// not an option silently ignored.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Request<'a> {
    /// The preset file's JSON, as it is (its bytes are what the library imports).
    #[serde(borrow)]
    preset: &'a RawValue,
    /// The context file's JSON (SPEC §9); absent or `null`: the empty context, as the CLI
    /// without `--context`.
    #[serde(borrow, default)]
    context: Option<&'a RawValue>,
    /// Node identifier → enabled, applied before compiling (the prompt manager's switches).
    #[serde(default)]
    toggles: BTreeMap<String, bool>,
    /// The provider request's shape; overrides the context's `provider_options.shape`, as
    /// `render --shape` does.
    #[serde(default, deserialize_with = "shape_name")]
    shape: Option<Shape>,
    /// `render --layout`: `"seed"` or `"sillytavern"` (SPEC §17.1); overrides the context's.
    #[serde(default)]
    layout: Option<LayoutName>,
    /// `render --generation`: the kind of turn (SPEC §18.1); overrides the context's
    /// `generation_type`.
    #[serde(default)]
    generation: Option<stpreset::lore::GenerationType>,
    /// `render --chat`: a SillyTavern chat file's text (`.jsonl`, SPEC §17.5) as the history.
    #[serde(default)]
    chat: Option<String>,
    /// `render --allow-regex`: the preset's regex scripts may run on the history.
    #[serde(default)]
    allow_regex: bool,
    /// Preview only: name the scripts that changed each history message (one more prompt pass
    /// per script, so only when asked: the page asks while its Regex tab is open).
    #[serde(default)]
    regex_by_script: bool,
    /// `/api/switch` only: the switches to check against the author's constraints, after
    /// `toggles` (`stpreset::switch`).
    #[serde(default)]
    switch: BTreeMap<String, bool>,
}

#[derive(Deserialize, Clone, Copy)]
#[serde(rename_all = "lowercase")]
enum LayoutName {
    Seed,
    Sillytavern,
}

/// A shape by one of [`Shape::NAMES`] (`gemini` is `google`), as the context and the CLI read it.
fn shape_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Shape>, D::Error> {
    let Some(name) = Option::<String>::deserialize(d)? else {
        return Ok(None);
    };
    name.parse().map(Some).map_err(serde::de::Error::custom)
}

/// Which document a `POST` asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Endpoint {
    /// `render --format json`.
    Render,
    /// `audit --format json` (after the toggles).
    Audit,
    /// `render --shape S --format json`; a shape is required, from the body or the context.
    Request,
    /// Everything the page shows, in one answer.
    Preview,
    /// What switching `switch` does under the author's constraints (`stpreset::switch`).
    Switch,
}

/// A request read and applied: the preset (toggled), the context, the provider options.
struct Loaded {
    preset: Preset,
    ctx: Context,
    provider: stpreset::ProviderOptions,
    regex_by_script: bool,
    switch: BTreeMap<String, bool>,
}

fn load(body: &[u8]) -> Result<Loaded, Answer> {
    if body.len() > MAX_BODY {
        return Err(too_large("request body", MAX_BODY));
    }
    let request: Request<'_> = serde_json::from_slice(body)
        .map_err(|e| Answer::error(400, "request", &format!("request body: {e}")))?;
    let preset_bytes = request.preset.get().as_bytes();
    if preset_bytes.len() > MAX_INPUT {
        return Err(too_large("preset", MAX_INPUT));
    }
    let mut preset = Preset::from_json(preset_bytes).map_err(|e| {
        let body = serde_json::json!({"error": {
            "kind": "preset", "preset_error": e.kind(), "message": format!("preset: {e}"),
        }});
        Answer {
            status: 422,
            body: body.to_string(),
        }
    })?;
    let mut ctx = match request.context {
        Some(raw) if raw.get().len() > MAX_INPUT => return Err(too_large("context", MAX_INPUT)),
        Some(raw) => Context::from_json(raw.get().as_bytes())
            .map_err(|e| Answer::error(422, "context", &format!("context: {e}")))?,
        None => Context::default(),
    };
    ctx.allow_preset_regex |= request.allow_regex;
    match request.layout {
        Some(LayoutName::Seed) => ctx.layout = stpreset::Layout::Seed,
        Some(LayoutName::Sillytavern) => ctx.layout = stpreset::Layout::SillyTavern,
        None => {}
    }
    if let Some(generation) = request.generation {
        ctx.lore
            .get_or_insert_with(Default::default)
            .generation_type = generation;
    }
    if let Some(chat) = &request.chat {
        ctx.apply_st_chat(chat.as_bytes())
            .map_err(|e| Answer::error(422, "chat", &format!("chat: {e}")))?;
    }
    toggle(&mut preset, &request.toggles)?;
    let mut provider = ctx.provider_options.clone();
    if let Some(shape) = request.shape {
        provider.shape = Some(shape);
    }
    Ok(Loaded {
        preset,
        ctx,
        provider,
        regex_by_script: request.regex_by_script,
        switch: request.switch,
    })
}

/// Applies `toggles` (through the library's index of the nodes: a toggle per node stays
/// linear).
fn toggle(preset: &mut Preset, toggles: &BTreeMap<String, bool>) -> Result<(), Answer> {
    let toggles = toggles.iter().map(|(id, on)| (id.as_str(), *on));
    preset.set_enabled_all(toggles).map_err(|id| {
        let shown = stpreset::diagnostic::terminal_line(id);
        Answer::error(
            422,
            "toggles",
            &format!("toggles: the preset has no node `{shown}`"),
        )
    })
}

fn too_large(what: &str, max: usize) -> Answer {
    Answer::error(
        413,
        "too_large",
        &format!("{what}: input is over the limit of {max} bytes"),
    )
}

/// Answers a `POST` to `endpoint` with `body`.
pub(crate) fn answer(endpoint: Endpoint, body: &[u8]) -> Answer {
    let Loaded {
        preset,
        ctx,
        provider,
        regex_by_script,
        switch,
    } = match load(body) {
        Ok(loaded) => loaded,
        Err(refused) => return refused,
    };
    match endpoint {
        // The audit reads the preset alone: nothing to render.
        Endpoint::Audit => return Answer::ok(preset.audit_json()),
        Endpoint::Switch => return switched(&preset, &switch),
        Endpoint::Request if provider.shape.is_none() => {
            return Answer::error(
                422,
                "shape",
                "shape: a request needs a shape (`openai`, `anthropic` or `google`), in the body or the context's `provider_options`",
            );
        }
        _ => {}
    }
    let compiled = preset.compile();
    let rendered = compiled.render(&ctx);
    Answer::ok(match endpoint {
        Endpoint::Request => rendered.to_request_json(&provider),
        Endpoint::Preview => {
            let shown = Shown {
                preset: &preset,
                compiled: &compiled,
                ctx: &ctx,
                provider: &provider,
                regex_by_script,
            };
            preview(&shown, rendered)
        }
        // (The audit and the switch were answered above.)
        Endpoint::Render | Endpoint::Audit | Endpoint::Switch => rendered.to_json(),
    })
}

/// `{"switched", "refused", "resolution"}`: the switches checked as the store checks a
/// toggle. Allowed: `switched` is what to apply (the asked switches and what the author's
/// directives resolve), with its warnings. Refused: `refused` is `{node, issues}`, and
/// `resolution` what resolving would switch (`null` when even that is refused), for the page
/// to offer.
fn switched(preset: &Preset, switch: &BTreeMap<String, bool>) -> Answer {
    use stpreset::switch::{Resolve, SwitchError};
    let asked: Vec<(&str, bool)> = switch.iter().map(|(id, on)| (id.as_str(), *on)).collect();
    let doc = match preset.plan_switch(&asked, Resolve::Refuse) {
        Ok(done) => serde_json::json!({"switched": done, "refused": null, "resolution": null}),
        Err(SwitchError::Refused { node, issues }) => {
            let resolution = preset.plan_switch(&asked, Resolve::Resolve).ok();
            serde_json::json!({"switched": null, "refused": {"node": node, "issues": issues},
                "resolution": resolution})
        }
        Err(e) => {
            let shown = stpreset::diagnostic::terminal_line(&e.to_string()).into_owned();
            return Answer::error(422, "switch", &format!("switch: {shown}"));
        }
    };
    Answer::ok(doc.to_string())
}

/// What a preview is made from.
struct Shown<'a> {
    preset: &'a Preset,
    compiled: &'a CompiledPreset,
    ctx: &'a Context,
    provider: &'a stpreset::ProviderOptions,
    regex_by_script: bool,
}

/// `{"audit", "nodes", "omitted", "regex", "render", "request", "settings", "sources",
/// "tokens"}`, keys in byte order. `render`, `request` and `audit` are the CLI's documents
/// with their diagnostics cut to [`MAX_PREVIEW_DIAGNOSTICS`] each (`omitted` counts the rest).
fn preview(shown: &Shown<'_>, mut rendered: Rendered<'_>) -> String {
    let Shown {
        preset,
        compiled,
        ctx,
        provider,
        regex_by_script,
    } = *shown;
    let mut audit = preset.audit();
    let omitted_audit = audit.len().saturating_sub(MAX_PREVIEW_DIAGNOSTICS);
    audit.truncate(MAX_PREVIEW_DIAGNOSTICS);
    let omitted_render = rendered
        .diagnostics
        .len()
        .saturating_sub(MAX_PREVIEW_DIAGNOSTICS);
    rendered.diagnostics.truncate(MAX_PREVIEW_DIAGNOSTICS);
    let rendered = &rendered;
    let audit_doc = {
        let mut out = Vec::new();
        // Writing to a Vec cannot fail.
        let _ = preset.write_audit_json(&audit, &mut out);
        String::from_utf8_lossy(&out).trim_end().to_string()
    };
    let request = provider
        .shape
        .is_some()
        .then(|| rendered.to_request_json(provider));
    // A request's own diagnostics are about the request, not a node's line.
    let sources = sources(preset, rendered.diagnostics.iter().chain(&audit));
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        r#"{{"audit":{audit_doc},"lore":{},"nodes":{},"omitted":{{"audit":{omitted_audit},"render":{omitted_render}}},"outline":{},"regex":{},"render":{},"request":{},"settings":{},"sources":{sources},"tokens":{}}}"#,
        lore(rendered, ctx),
        preset.nodes_json(),
        preset.outline().to_json(),
        regex(preset, compiled, ctx, regex_by_script),
        rendered.to_json(),
        request.as_deref().unwrap_or("null"),
        preset.settings().to_json(),
        tokens(rendered, ctx),
    );
    out
}

/// Most activated lore entries a preview lists, and the characters of each text it carries.
const MAX_LORE_ENTRIES: usize = 500;
const MAX_LORE_TEXT: usize = 2000;

/// `{"entries": [{"name", "book", "comment", "keys", "position", "depth", "order", "content",
/// "content_omitted"}], "omitted"}`: the render's activated World Info entries one by one, in
/// activation order, each text cut to its start (a 230 KB book section is hundreds of
/// entries, not one text).
fn lore(rendered: &Rendered<'_>, ctx: &Context) -> String {
    let books = ctx.lore.as_ref().map_or(&[][..], |l| &l.books[..]);
    let all = stpreset::activation::activated_entries(books, rendered.activated_lore());
    let omitted = all.len().saturating_sub(MAX_LORE_ENTRIES);
    let entries: Vec<serde_json::Value> = all
        .into_iter()
        .take(MAX_LORE_ENTRIES)
        .map(|e| {
            let (content, content_omitted) = cut(e.content, MAX_LORE_TEXT);
            let keys: Vec<&str> = e.keys.iter().take(50).copied().collect();
            serde_json::json!({"name": e.name, "book": e.book, "comment": cut(e.comment, 200).0,
                "keys": keys, "position": e.position, "depth": e.depth, "order": e.order,
                "content": content, "content_omitted": content_omitted})
        })
        .collect();
    serde_json::json!({"entries": entries, "omitted": omitted}).to_string()
}

/// The first `max` characters of `text`, and how many are left out.
fn cut(text: &str, max: usize) -> (&str, usize) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], text[at..].chars().count()),
        None => (text, 0),
    }
}

/// The content of every node a diagnostic points into (the first node of an identifier, as
/// on import), so the page can show the line it names. Each node's text appears once, so this
/// is at most the preset's size.
fn sources<'d>(preset: &Preset, diags: impl Iterator<Item = &'d Diagnostic>) -> String {
    let mut by_id: HashMap<&str, &str> = HashMap::new();
    for n in preset.nodes() {
        by_id
            .entry(n.identifier.as_str())
            .or_insert(n.content.as_str());
    }
    let mut wanted: BTreeMap<&str, &str> = BTreeMap::new();
    for d in diags {
        if let (Some(node), Some(_)) = (&d.node, d.line)
            && let Some(content) = by_id.get(node.as_str())
        {
            wanted.insert(node, content);
        }
    }
    serde_json::to_string(&wanted).unwrap_or_else(|_| "{}".into())
}

/// `{"messages": [cost per message], "total", "max_context_tokens", "reserve_tokens"}`: the
/// costs of SPEC §12.4 under the context's counter, and the budget they are held against.
fn tokens(rendered: &Rendered<'_>, ctx: &Context) -> String {
    let costs = ctx.options.budget.costs(&rendered.messages, &ctx.model);
    let total = 3 + costs.iter().map(|&c| u64::from(c)).sum::<u64>();
    let effective = rendered.effective_options();
    serde_json::json!({
        "max_context_tokens": effective.max_context_tokens,
        "messages": costs,
        "reserve_tokens": effective.reserve_tokens,
        "total": total,
    })
    .to_string()
}

/// `{"allowed", "attributed", "messages", "scripts"}`: the preset's scripts (as imported), and
/// for each history message the prompt pass changed, its text before and after and the scripts
/// that changed it. A script is named when its prompt pass over the history, with every
/// earlier script in place, gives another text than the pass without it: the same walk as a
/// render, one script longer at a time.
fn regex(preset: &Preset, compiled: &CompiledPreset, ctx: &Context, by_script: bool) -> String {
    let scripts = preset.regex_scripts();
    let scripts_json = serde_json::to_string(scripts).unwrap_or_else(|_| "[]".into());
    let allowed = ctx.allow_preset_regex;
    let history: Vec<(usize, u32)> = {
        let positions: Vec<usize> = ctx
            .items
            .iter()
            .enumerate()
            .filter(|(_, i)| i.tag == Some(Tag::DialogueHistory))
            .map(|(n, _)| n)
            .collect();
        let len = positions.len();
        positions
            .into_iter()
            .enumerate()
            .map(|(k, n)| (n, (len - 1 - k) as u32))
            .collect()
    };
    let mut changed: Vec<(usize, u32, Option<String>)> = Vec::new();
    if allowed && !scripts.is_empty() {
        let pass = compiled.prompt_pass(ctx);
        for &(n, depth) in &history {
            let after = pass.items.get(n).cloned().flatten();
            if after.as_deref() != Some(ctx.items[n].text.as_str()) {
                changed.push((n, depth, after));
            }
        }
    }
    // The scripts a prompt pass over the history can run (SPEC §13.2.3).
    let candidates: Vec<usize> = scripts
        .iter()
        .filter(|s| {
            !s.disabled
                && !s.find_regex.is_empty()
                && s.prompt_only
                && s.placement.iter().any(|&p| p == 1 || p == 2)
        })
        .map(|s| s.position)
        .collect();
    let attributed = by_script && !changed.is_empty() && candidates.len() <= MAX_ATTRIBUTED_SCRIPTS;
    let mut by: Vec<Vec<usize>> = vec![Vec::new(); changed.len()];
    if attributed {
        let raw = preset.raw();
        let list = raw
            .get("extensions")
            .and_then(|e| e.get("regex_scripts"))
            .and_then(|l| l.as_array());
        if let Some(list) = list {
            let mut before: Vec<Option<String>> = changed
                .iter()
                .map(|(n, _, _)| Some(ctx.items[*n].text.clone()))
                .collect();
            for &k in &candidates {
                let Some(now) = pass_with_scripts_up_to(list, k, ctx) else {
                    continue;
                };
                for (j, (n, _, _)) in changed.iter().enumerate() {
                    let after = now.get(*n).cloned().flatten();
                    if after != before[j] {
                        by[j].push(k);
                        before[j] = after;
                    }
                }
            }
        }
    }
    // The page shows the start of each text: the answer carries that much, and how much is
    // left out, so it stays a constant size however long the scripts make a message.
    let messages: Vec<serde_json::Value> = changed
        .iter()
        .zip(&by)
        .take(MAX_REGEX_MESSAGES)
        .map(|((n, depth, after), by)| {
            let (before, before_omitted) = cut(&ctx.items[*n].text, MAX_REGEX_TEXT);
            let (after, after_omitted) = match after {
                Some(t) => {
                    let (t, omitted) = cut(t, MAX_REGEX_TEXT);
                    (Some(t), omitted)
                }
                None => (None, 0),
            };
            serde_json::json!({
                "after": after,
                "after_omitted": after_omitted,
                "before": before,
                "before_omitted": before_omitted,
                "depth": depth,
                "item": n,
                "scripts": attributed.then_some(by),
            })
        })
        .collect();
    let omitted = changed.len().saturating_sub(MAX_REGEX_MESSAGES);
    format!(
        r#"{{"allowed":{allowed},"attributed":{attributed},"messages":{},"omitted":{omitted},"scripts":{scripts_json}}}"#,
        serde_json::to_string(&messages).unwrap_or_else(|_| "[]".into())
    )
}

/// The prompt pass's items with the scripts after position `k` switched off: a preset of the
/// scripts alone (a script reads the context, never the nodes), so each step costs the scripts'
/// import and one pass, not the preset's compile.
fn pass_with_scripts_up_to(
    list: &[serde_json::Value],
    k: usize,
    ctx: &Context,
) -> Option<Vec<Option<String>>> {
    let list: Vec<serde_json::Value> = list
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let mut s = s.clone();
            if i > k
                && let Some(obj) = s.as_object_mut()
            {
                obj.insert("disabled".into(), true.into());
            }
            s
        })
        .collect();
    // One empty node: a preset needs a prompt, and an empty one renders nothing.
    let doc = serde_json::json!({
        "prompts": [{"identifier": "main", "content": ""}],
        "extensions": {"regex_scripts": list},
    });
    let preset = Preset::from_json(doc.to_string().as_bytes()).ok()?;
    Some(preset.compile().prompt_pass(ctx).items)
}

#[cfg(test)]
mod properties {
    //! Whatever a client sends, the answer is one JSON document with a known status.
    use super::*;
    use proptest::prelude::*;

    /// Template text from the pieces that matter to the parsers.
    fn text() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("{{".to_string()),
            Just("}}".to_string()),
            Just("::".to_string()),
            Just("{{x}}".to_string()),
            Just("{{setvar::a::1}}".to_string()),
            Just("{{#if a}}".to_string()),
            Just("{{/if}}".to_string()),
            Just("\\n".to_string()),
            Just("\\u0000".to_string()),
            Just("\\ud800".to_string()),
            Just("\\\"".to_string()),
            "[a-z<>&é ]{0,4}",
        ];
        prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    fn body() -> impl Strategy<Value = String> {
        let node = (text(), text(), any::<bool>(), 0..3i32).prop_map(|(id, content, on, depth)| {
            format!(
                r#"{{"identifier": "{id}", "content": "{content}", "enabled": {on}, "injection_position": {}, "injection_depth": {depth}}}"#,
                depth % 2
            )
        });
        let script = (text(), text()).prop_map(|(find, replace)| {
            format!(r#"{{"findRegex": "{find}", "replaceString": "{replace}", "placement": [1, 2], "promptOnly": true}}"#)
        });
        let item = (text(), any::<bool>()).prop_map(|(t, user)| {
            let role = if user { "user" } else { "model" };
            format!(r#"{{"tag": "DIALOGUE_HISTORY", "role": "{role}", "text": "{t}"}}"#)
        });
        (
            prop::collection::vec(node, 0..6),
            prop::collection::vec(script, 0..3),
            prop::collection::vec(item, 0..4),
            prop::collection::vec((text(), any::<bool>()), 0..3),
            prop_oneof![
                Just("null"),
                Just(r#""openai""#),
                Just(r#""google""#),
                Just(r#""anthropic""#)
            ],
            any::<(bool, bool)>(),
        )
            .prop_map(|(nodes, scripts, items, toggles, shape, (allow, by))| {
                // The request's own strings must be Unicode (serde refuses a lone surrogate
                // there with a 400); the page sends back identifiers the import repaired.
                let toggles: Vec<String> = toggles
                    .iter()
                    .map(|(id, on)| format!(r#""{}": {on}"#, id.replace("\\ud800", "\\ufffd")))
                    .collect();
                format!(
                    r#"{{"preset": {{"prompts": [{}], "extensions": {{"regex_scripts": [{}]}}}},
                        "context": {{"items": [{}]}}, "toggles": {{{}}}, "shape": {shape},
                        "allow_regex": {allow}, "regex_by_script": {by}, "switch": {{{}}}}}"#,
                    nodes.join(","),
                    scripts.join(","),
                    items.join(","),
                    toggles.join(","),
                    toggles.join(","),
                )
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(150))]

        #[test]
        fn every_body_gets_one_json_answer(body in body(), endpoint in 0..5usize) {
            let endpoint = [Endpoint::Render, Endpoint::Audit, Endpoint::Request, Endpoint::Preview,
                Endpoint::Switch][endpoint];
            let a = answer(endpoint, body.as_bytes());
            // The bodies are well-formed: only the library may refuse them.
            prop_assert!([200, 422].contains(&a.status), "{} {}", a.status, a.body);
            let v: serde_json::Value = serde_json::from_str(&a.body).expect("JSON");
            prop_assert_eq!(a.status == 200, v.get("error").is_none(), "{}", a.body);
        }

        #[test]
        fn any_bytes_get_an_error_not_a_panic(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
            let a = answer(Endpoint::Preview, &bytes);
            prop_assert!([200, 400, 413, 422].contains(&a.status));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(preset: &str, extra: &str) -> Vec<u8> {
        format!(r#"{{"preset": {preset}{extra}}}"#).into_bytes()
    }

    const PRESET: &str = r#"{"prompts": [
        {"identifier": "main", "name": "Main", "content": "Hi {{user}}."},
        {"identifier": "chatHistory", "marker": true},
        {"identifier": "jb", "name": "JB", "content": "Stay {{x}}."}]}"#;

    fn json(answer: &Answer) -> serde_json::Value {
        serde_json::from_str(&answer.body).unwrap()
    }

    #[test]
    fn render_is_the_library_document() {
        let ctx = r#", "context": {"user": "Alice"}"#;
        let a = answer(Endpoint::Render, &body(PRESET, ctx));
        assert_eq!(a.status, 200);
        let preset = Preset::from_json(PRESET.as_bytes()).unwrap();
        let mut c = Context::default();
        c.user = "Alice".into();
        assert_eq!(a.body, preset.compile().render(&c).to_json());
    }

    #[test]
    fn the_body_in_either_layout_is_the_library_document() {
        let ctx = r#", "context": {"user": "Alice", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#;
        let preset = Preset::from_json(PRESET.as_bytes()).unwrap().compile();
        let mut c = Context::from_json(br#"{"user": "Alice", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#).unwrap();
        let mut options = c.provider_options.clone();
        options.shape = Some(Shape::OpenAi);
        for (layout, want) in [
            ("seed", stpreset::Layout::Seed),
            ("sillytavern", stpreset::Layout::SillyTavern),
        ] {
            let extra = format!(r#"{ctx}, "shape": "openai", "layout": "{layout}""#);
            let a = answer(Endpoint::Request, &body(PRESET, &extra));
            assert_eq!(a.status, 200);
            c.layout = want;
            assert_eq!(
                a.body,
                preset.render(&c).to_request_json(&options),
                "{layout}"
            );
        }
        // The layouts differ: ST's order has no `jb` (no 100001 list: ST's default order).
        let seed = answer(
            Endpoint::Request,
            &body(PRESET, &format!(r#"{ctx}, "shape": "openai""#)),
        );
        let st = answer(
            Endpoint::Request,
            &body(
                PRESET,
                &format!(r#"{ctx}, "shape": "openai", "layout": "sillytavern""#),
            ),
        );
        assert_ne!(seed.body, st.body);
    }

    #[test]
    fn the_turn_picker_is_the_contexts_generation_type() {
        let ctx = r#""context": {"user": "Alice", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}"#;
        let preset = Preset::from_json(PRESET.as_bytes()).unwrap().compile();
        for generation in ["impersonate", "quiet", "continue"] {
            let a = answer(
                Endpoint::Render,
                &body(PRESET, &format!(r#", {ctx}, "generation": "{generation}""#)),
            );
            assert_eq!(a.status, 200, "{}", a.body);
            let c = Context::from_json(
                format!(
                    r#"{{"user": "Alice", "generation_type": "{generation}", "items": [{{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}}]}}"#
                )
                .as_bytes(),
            )
            .unwrap();
            assert_eq!(a.body, preset.render(&c).to_json(), "{generation}");
        }
        let bad = answer(
            Endpoint::Render,
            &body(PRESET, &format!(r#", {ctx}, "generation": "sideways""#)),
        );
        assert_eq!(bad.status, 400, "{}", bad.body);
    }

    #[test]
    fn a_sillytavern_chat_file_is_the_history() {
        let chat = r#"{}\n{\"name\": \"Sera\", \"mes\": \"Hello.\"}\n{\"name\": \"Alice\", \"is_user\": true, \"mes\": \"Hi.\"}"#;
        let extra = format!(r#", "chat": "{chat}", "layout": "sillytavern""#);
        let a = answer(Endpoint::Render, &body(PRESET, &extra));
        assert_eq!(a.status, 200, "{}", a.body);
        let v = json(&a);
        let texts: Vec<_> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["parts"][0].as_str().unwrap().to_string())
            .collect();
        assert!(
            texts.ends_with(&["Hello.".to_string(), "Hi.".to_string()]),
            "{texts:?}"
        );
        let a = answer(Endpoint::Render, &body(PRESET, r#", "chat": "nope""#));
        assert_eq!(
            (a.status, json(&a)["error"]["kind"].as_str()),
            (422, Some("chat"))
        );
    }

    #[test]
    fn toggles_switch_nodes_and_unknown_ones_are_refused() {
        let a = answer(
            Endpoint::Render,
            &body(PRESET, r#", "toggles": {"jb": false}"#),
        );
        let v = json(&a);
        let sources: Vec<_> = v["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["source"]["node"].clone())
            .collect();
        assert_eq!(sources, [serde_json::json!("main")]);
        let a = answer(
            Endpoint::Render,
            &body(PRESET, r#", "toggles": {"nope": true}"#),
        );
        assert_eq!(
            (a.status, json(&a)["error"]["kind"].as_str()),
            (422, Some("toggles"))
        );
    }

    #[test]
    fn switches_are_checked_as_the_store_checks_them() {
        const STYLES: &str = r#"{"prompts": [
            {"identifier": "h", "name": "=== Style ===", "content": ""},
            {"identifier": "terse", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}T"},
            {"identifier": "lush", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}L", "enabled": false}]}"#;
        let v = json(&answer(
            Endpoint::Switch,
            &body(STYLES, r#", "switch": {"lush": true}"#),
        ));
        assert_eq!(v["refused"]["node"], "lush");
        assert_eq!(
            v["refused"]["issues"][0]["others"],
            serde_json::json!(["terse"])
        );
        assert_eq!(
            v["resolution"]["changes"][1],
            serde_json::json!({"identifier": "terse", "enabled": false})
        );
        // After the page's own toggles: with `terse` off, `lush` goes on freely.
        let v = json(&answer(
            Endpoint::Switch,
            &body(
                STYLES,
                r#", "toggles": {"terse": false}, "switch": {"lush": true}"#,
            ),
        ));
        assert_eq!(v["refused"], serde_json::Value::Null);
        assert_eq!(v["switched"]["changes"][0]["identifier"], "lush");
        let a = answer(
            Endpoint::Switch,
            &body(STYLES, r#", "switch": {"nope": true}"#),
        );
        assert_eq!(
            (a.status, json(&a)["error"]["kind"].as_str()),
            (422, Some("switch"))
        );
        // The preview carries the outline with the toggles applied.
        let v = json(&answer(
            Endpoint::Preview,
            &body(STYLES, r#", "toggles": {"terse": false}"#),
        ));
        assert_eq!(v["outline"]["sections"][0]["title"], "Style");
        assert_eq!(v["outline"]["sections"][0]["enabled"], 0);
    }

    #[test]
    fn the_preview_lists_activated_lore_entries_one_by_one() {
        let ctx = r#", "context": {"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain and snow"}],
            "lorebooks": [{"name": "w", "entries": {
                "0": {"uid": 0, "key": ["rain"], "comment": "Rain", "content": "It rains.", "order": 2},
                "1": {"uid": 1, "key": ["snow"], "comment": "Snow", "content": "It snows.", "position": 4, "depth": 2},
                "2": {"uid": 2, "key": ["sun"], "content": "Sunny."}}}]}"#;
        let preset = r#"{"prompts": [{"identifier": "worldInfoBefore", "marker": true}, {"identifier": "chatHistory", "marker": true}]}"#;
        for layout in ["seed", "sillytavern"] {
            let extra = format!(r#"{ctx}, "layout": "{layout}""#);
            let v = json(&answer(Endpoint::Preview, &body(preset, &extra)));
            let entries = v["lore"]["entries"].as_array().unwrap();
            let names: Vec<&str> = entries
                .iter()
                .map(|e| e["comment"].as_str().unwrap())
                .collect();
            assert_eq!(names.len(), 2, "{layout}: {v}");
            assert!(
                names.contains(&"Rain") && names.contains(&"Snow"),
                "{layout}"
            );
            let snow = entries.iter().find(|e| e["comment"] == "Snow").unwrap();
            assert_eq!(
                (snow["position"].as_i64(), snow["depth"].as_u64()),
                (Some(4), Some(2))
            );
            assert_eq!(snow["content"], "It snows.");
        }
    }

    #[test]
    fn audit_counts_after_toggles() {
        let a = answer(
            Endpoint::Audit,
            &body(PRESET, r#", "toggles": {"jb": false}"#),
        );
        let v = json(&a);
        assert_eq!(
            (v["nodes"].as_u64(), v["enabled"].as_u64()),
            (Some(3), Some(2))
        );
        assert_eq!(v["diagnostics"][0]["kind"], "UnknownMacro");
    }

    #[test]
    fn request_needs_a_shape_and_uses_the_given_one() {
        let a = answer(Endpoint::Request, &body(PRESET, ""));
        assert_eq!(
            (a.status, json(&a)["error"]["kind"].as_str()),
            (422, Some("shape"))
        );
        let a = answer(Endpoint::Request, &body(PRESET, r#", "shape": "google""#));
        assert_eq!(a.status, 200);
        assert!(json(&a)["request"]["contents"].is_array());
    }

    #[test]
    fn bad_bodies_are_errors_with_a_kind() {
        for (bytes, status, kind) in [
            (&b"not json"[..], 400, "request"),
            (br#"{"context": {}}"#, 400, "request"),
            (br#"{"preset": {}, "toogles": {}}"#, 400, "request"),
            (br#"{"preset": {}, "shape": "bard"}"#, 400, "request"),
            (br#"{"preset": []}"#, 422, "preset"),
            (
                br#"{"preset": {"prompts": [{"identifier": "a"}]}, "context": {"usr": 1}}"#,
                422,
                "context",
            ),
        ] {
            let a = answer(Endpoint::Preview, bytes);
            assert_eq!(a.status, status, "{}", a.body);
            assert_eq!(json(&a)["error"]["kind"], kind, "{}", a.body);
        }
        let a = answer(Endpoint::Preview, br#"{"preset": []}"#);
        assert_eq!(json(&a)["error"]["preset_error"], "NotAPreset");
    }

    #[test]
    fn inputs_over_the_cli_limits_are_refused() {
        let big = format!(r#""{}""#, "x".repeat(MAX_INPUT));
        let a = answer(
            Endpoint::Render,
            &body(PRESET, &format!(r#", "context": {big}"#)),
        );
        assert_eq!(
            (a.status, json(&a)["error"]["kind"].as_str()),
            (413, Some("too_large"))
        );
        let preset = format!(r#"{{"prompts": [], "x": {big}}}"#);
        let a = answer(Endpoint::Render, &body(&preset, ""));
        assert_eq!(a.status, 413);
        let a = answer(Endpoint::Render, &vec![b' '; MAX_BODY + 1]);
        assert_eq!(a.status, 413);
    }

    #[test]
    fn preview_splices_the_documents_and_counts_tokens() {
        let ctx = r#", "context": {"tokenizer": "words", "max_context_tokens": 100}"#;
        let a = answer(Endpoint::Preview, &body(PRESET, ctx));
        assert_eq!(a.status, 200, "{}", a.body);
        let v = json(&a);
        assert_eq!(v["render"]["messages"].as_array().unwrap().len(), 2);
        assert_eq!(v["request"], serde_json::Value::Null);
        assert_eq!(v["nodes"][2]["identifier"], "jb");
        // "Hi ." and "Stay ." are 2 words each: 4 + 1 + 2 apiece, and 3 for the reply.
        assert_eq!(v["tokens"]["messages"], serde_json::json!([7, 7]));
        assert_eq!(v["tokens"]["total"], 17);
        assert_eq!(v["render"]["prompt_tokens"], 17);
        assert_eq!(v["tokens"]["max_context_tokens"], 100);
        // `{{x}}` is diagnosed in node jb: its source travels for the page's snippet.
        assert_eq!(v["sources"], serde_json::json!({"jb": "Stay {{x}}."}));
        let a = answer(Endpoint::Preview, &body(PRESET, r#", "shape": "openai""#));
        assert!(json(&a)["request"]["request"]["messages"].is_array());
    }

    #[test]
    fn a_preview_shows_at_most_500_diagnostics_of_a_list_and_counts_the_rest() {
        let preset = format!(
            r#"{{"prompts": [{{"identifier": "main", "content": "{}"}}]}}"#,
            "{{x}}".repeat(600)
        );
        let v = json(&answer(Endpoint::Preview, &body(&preset, "")));
        assert_eq!(v["render"]["diagnostics"].as_array().unwrap().len(), 500);
        assert_eq!(v["audit"]["diagnostics"].as_array().unwrap().len(), 500);
        assert_eq!(
            v["omitted"],
            serde_json::json!({"audit": 100, "render": 100})
        );
        // The documents of their own keep every one, as the CLI's JSON does.
        let v = json(&answer(Endpoint::Render, &body(&preset, "")));
        assert_eq!(v["diagnostics"].as_array().unwrap().len(), 600);
    }

    #[test]
    fn the_regex_report_carries_the_start_of_each_text_and_at_most_200_messages() {
        let preset = r#"{"prompts": [{"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [{"scriptName": "grow", "findRegex": "/a/g",
                "replaceString": "ééééé", "placement": [1], "promptOnly": true}]}}"#;
        let item = format!(
            r#"{{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "{}"}}"#,
            "a".repeat(3000)
        );
        let items = vec![item; 250].join(",");
        let extra = format!(r#", "context": {{"items": [{items}]}}, "allow_regex": true"#);
        let v = json(&answer(Endpoint::Preview, &body(preset, &extra)));
        let r = &v["regex"];
        assert_eq!(r["messages"].as_array().unwrap().len(), 200);
        assert_eq!(r["omitted"], 50);
        let m = &r["messages"][0];
        assert_eq!(m["before"].as_str().unwrap().chars().count(), 2000);
        assert_eq!(m["before_omitted"], 1000);
        assert_eq!(m["after"].as_str().unwrap().chars().count(), 2000);
        assert_eq!(m["after_omitted"], 5 * 3000 - 2000);
    }

    #[test]
    fn a_toggle_reaches_every_node_of_its_identifier() {
        let preset = r#"{"prompts": [{"identifier": "a", "content": "one"},
            {"identifier": "b", "content": "two"}],
            "prompt_order": [{"character_id": 100001, "order": [
                {"identifier": "a", "enabled": true}, {"identifier": "b", "enabled": true},
                {"identifier": "a", "enabled": true}]}]}"#;
        let v = json(&answer(Endpoint::Preview, &body(preset, "")));
        let on = |v: &serde_json::Value| -> Vec<bool> {
            let nodes = v["nodes"].as_array().unwrap();
            nodes
                .iter()
                .map(|n| n["enabled"].as_bool().unwrap())
                .collect()
        };
        let all = on(&v);
        assert!(all.iter().all(|&e| e), "{all:?}");
        let v = json(&answer(
            Endpoint::Preview,
            &body(preset, r#", "toggles": {"a": false}"#),
        ));
        let ids: Vec<_> = v["nodes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n["identifier"].clone())
            .collect();
        let off: Vec<_> = ids
            .iter()
            .zip(on(&v))
            .filter(|(_, e)| !e)
            .map(|(i, _)| i.clone())
            .collect();
        assert!(!off.is_empty() && off.iter().all(|i| i == "a"), "{off:?}");
        assert_eq!(off.len(), ids.iter().filter(|i| *i == "a").count());
    }

    #[test]
    fn regex_names_the_scripts_that_changed_each_history_message() {
        let preset = r#"{"prompts": [{"identifier": "chatHistory", "marker": true}],
            "extensions": {"regex_scripts": [
                {"scriptName": "cats", "findRegex": "/cat/g", "replaceString": "dog", "placement": [1, 2], "promptOnly": true},
                {"scriptName": "never", "findRegex": "/zebra/g", "replaceString": "x", "placement": [1], "promptOnly": true},
                {"scriptName": "dogs", "findRegex": "/dog/g", "replaceString": "wolf", "placement": [2], "promptOnly": true}]}}"#;
        let ctx = r#", "context": {"items": [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "a cat"},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "a cat and a dog"},
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "nothing"}]}"#;
        let a = answer(Endpoint::Preview, &body(preset, ctx));
        let v = json(&a);
        assert_eq!(v["regex"]["allowed"], false);
        assert_eq!(v["regex"]["messages"], serde_json::json!([]));
        let a = answer(
            Endpoint::Preview,
            &body(preset, &format!(r#"{ctx}, "allow_regex": true"#)),
        );
        let v = json(&a);
        // Changed messages, but the scripts are named only when asked.
        assert_eq!(v["regex"]["attributed"], false);
        assert_eq!(
            v["regex"]["messages"][1]["scripts"],
            serde_json::Value::Null
        );
        let asked = format!(r#"{ctx}, "allow_regex": true, "regex_by_script": true"#);
        let v = json(&answer(Endpoint::Preview, &body(preset, &asked)));
        assert_eq!(v["regex"]["scripts"].as_array().unwrap().len(), 3);
        assert_eq!(
            v["regex"]["messages"],
            serde_json::json!([
                {"after": "a dog", "after_omitted": 0, "before": "a cat", "before_omitted": 0,
                 "depth": 2, "item": 0, "scripts": [0]},
                {"after": "a wolf and a wolf", "after_omitted": 0, "before": "a cat and a dog",
                 "before_omitted": 0, "depth": 1, "item": 1, "scripts": [0, 2]},
            ])
        );
    }
}
