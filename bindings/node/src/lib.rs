//! Node.js bindings (napi-rs). The native layer speaks JSON strings in the SPEC §9 contract —
//! the same documents the CLI prints, produced by the same library calls — and `index.js`
//! turns them into plain objects and typed errors. Crossing as JSON text keeps one contract
//! for every front end; `JSON.parse` is V8's fastest way to build the result objects.

use std::sync::Arc;

pub mod chat;
pub mod store;

// A render allocates and frees many small strings and vectors (parts, sources, variables);
// glibc's malloc took about a sixth of a NemoEngine render (consolidating and unlinking
// chunks). mimalloc's per-thread free lists cost a fraction of that.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use napi::bindgen_prelude::*;
use napi_derive::napi;

/// An error `index.js` turns into `PresetError` / `ContextError` / `TemplateError` with `kind`.
pub(crate) fn error(class: &str, kind: &str, message: impl std::fmt::Display) -> napi::Error {
    let info = serde_json::json!({"class": class, "kind": kind, "message": message.to_string()});
    napi::Error::new(Status::InvalidArg, info.to_string())
}

fn context(json: &str) -> Result<stpreset::Context> {
    stpreset::Context::from_json(json.as_bytes()).map_err(|e| error("ContextError", e.kind(), e))
}

/// A context as JSON text, or a chat the caller keeps (read where it is, not copied).
type ContextArg<'a> = Either<String, ClassInstance<'a, chat::Chat>>;

fn with_context<R>(arg: ContextArg<'_>, f: impl FnOnce(&stpreset::Context) -> R) -> Result<R> {
    match arg {
        Either::A(json) => Ok(f(&context(&json)?)),
        Either::B(chat) => {
            let busy = chat.enter()?;
            Ok(f(busy.chat().inner.context()))
        }
    }
}

/// A message's role as the context file spells it (`assistant` is `model`).
fn role(name: &str) -> Result<stpreset::Role> {
    name.parse().map_err(|e| error("ContextError", "Role", e))
}

/// The regex scripts (SPEC §13.1) as a JSON list of their fields as read.
fn scripts_json<'a>(
    scripts: impl IntoIterator<Item = &'a stpreset::scripts::RegexScript>,
) -> String {
    let list: Vec<&stpreset::scripts::RegexScript> = scripts.into_iter().collect();
    serde_json::to_string(&list).unwrap_or_default()
}

/// A copy of `preset` with the nodes `toggles_json` names switched on or off; an unknown
/// identifier is an error (kind `UnknownNode`) naming it.
fn toggled(
    preset: &stpreset::Preset,
    toggles_json: &str,
) -> std::result::Result<stpreset::Preset, (&'static str, String)> {
    let toggles: std::collections::BTreeMap<String, bool> =
        serde_json::from_str(toggles_json).map_err(|e| ("Toggles", format!("toggles: {e}")))?;
    let mut copy = preset.clone();
    copy.set_enabled_all(toggles.iter().map(|(id, on)| (id.as_str(), *on)))
        .map_err(|id| {
            (
                "UnknownNode",
                format!(
                    "the preset has no node {}",
                    stpreset::diagnostic::terminal_safe(id)
                ),
            )
        })?;
    Ok(copy)
}

/// An imported preset.
#[napi]
pub struct Preset {
    inner: stpreset::Preset,
}

#[napi]
impl Preset {
    /// Imports a preset file (text or bytes).
    #[napi(factory)]
    pub fn from_json(text: Either<String, Buffer>) -> Result<Preset> {
        let bytes: &[u8] = match &text {
            Either::A(s) => s.as_bytes(),
            Either::B(b) => b,
        };
        stpreset::Preset::from_json(bytes)
            .map(|inner| Preset { inner })
            .map_err(|e| error("PresetError", e.kind(), e))
    }

    /// Parses every enabled node once.
    #[napi]
    pub fn compile(&self) -> CompiledPreset {
        CompiledPreset {
            inner: Arc::new(self.inner.compile()),
        }
    }

    /// Compiles with nodes switched on or off first: `{"identifier": bool, ...}` as JSON.
    #[napi]
    pub fn compile_toggled(&self, toggles_json: String) -> Result<CompiledPreset> {
        toggled(&self.inner, &toggles_json)
            .map(|p| CompiledPreset {
                inner: Arc::new(p.compile()),
            })
            .map_err(|(kind, message)| error("PresetError", kind, message))
    }

    /// The nodes in walk order (`Preset::nodes_json`).
    #[napi]
    pub fn nodes_json(&self) -> String {
        self.inner.nodes_json()
    }

    /// The authors' sections, tooltips and exclusive groups (`Preset::outline`), as JSON.
    #[napi]
    pub fn outline_json(&self) -> String {
        self.inner.outline().to_json()
    }

    /// The preset's regex scripts (SPEC §13.1) as a JSON list: valid entries, each with its
    /// `position` in the file's list.
    #[napi]
    pub fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    /// The audit document (`{"nodes", "enabled", "diagnostics"}`) as JSON.
    #[napi]
    pub fn audit_json(&self) -> String {
        self.inner.audit_json()
    }

    /// The preset's settings (SPEC §14) as a JSON object of the keys it has.
    #[napi]
    pub fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }
}

/// A compiled preset: render it as often as you like.
#[napi]
pub struct CompiledPreset {
    pub(crate) inner: Arc<stpreset::CompiledPreset>,
}

#[napi]
impl CompiledPreset {
    /// Renders against a context file's JSON; returns the render document as JSON.
    #[napi]
    pub fn render_json(&self, context: ContextArg<'_>) -> Result<String> {
        with_context(context, |ctx| self.inner.render(ctx).to_json())
    }

    /// The settings it renders with (SPEC §14) as a JSON object.
    #[napi]
    pub fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }

    /// Renders against a context file's JSON and shapes the provider request its
    /// `provider_options` ask for over the preset's settings (SPEC §12.6, §14): `{"request",
    /// "diagnostics", "prompt_tokens", "effective", "variables", "globals"}` as JSON.
    #[napi]
    pub fn request_json(&self, context: ContextArg<'_>) -> Result<String> {
        with_context(context, |ctx| {
            self.inner
                .render(ctx)
                .to_request_json(&ctx.provider_options)
        })
    }

    /// Renders and returns only the provider request body (SPEC §12.3, §14.4) as UTF-8 JSON bytes,
    /// ready to POST. A Buffer crosses as one copy, where JS strings of the same text cost N-API
    /// several times the render (V8 decodes non-ASCII UTF-8 at about 4 ns a byte).
    #[napi]
    pub fn request_body(&self, context: ContextArg<'_>) -> Result<Buffer> {
        with_context(context, |ctx| {
            let (request, _) = self.inner.render(ctx).to_request(&ctx.provider_options);
            request.to_string().into_bytes().into()
        })
    }

    /// The regex scripts it runs (SPEC §13.1) as a JSON list.
    #[napi]
    pub fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    /// A new chat's first message (`stpreset::CompiledPreset::first_message`): `{"diagnostics",
    /// "item", "swipes"}` as JSON, or `null`.
    #[napi]
    pub fn first_message_json(&self, context: ContextArg<'_>) -> Result<String> {
        with_context(context, |ctx| {
            self.inner
                .first_message(ctx)
                .map_or_else(|| "null".to_string(), |f| f.to_json())
        })
    }

    /// A model reply or user message before the bot stores it (SPEC §13.7 store pass):
    /// `{"diagnostics", "text"}` as JSON.
    #[napi]
    pub fn store_message_json(
        &self,
        text: String,
        role_name: String,
        context: ContextArg<'_>,
    ) -> Result<String> {
        let role = role(&role_name)?;
        with_context(context, |ctx| {
            self.inner.store_message(&text, role, ctx).to_json()
        })
    }

    /// An edited message (SPEC §13.7 edit pass; `speaker` is `char` in trim strings):
    /// `{"diagnostics", "text"}` as JSON.
    #[napi]
    pub fn edit_message_json(
        &self,
        text: String,
        role_name: String,
        speaker: Option<String>,
        context: ContextArg<'_>,
    ) -> Result<String> {
        let role = role(&role_name)?;
        with_context(context, |ctx| {
            self.inner
                .edit_message(&text, role, speaker.as_deref(), ctx)
                .to_json()
        })
    }

    /// Text shown to people (SPEC §13.7 display pass; `depth` 0 = newest message), with its
    /// HTML as Markdown when `markdown` (`CompiledPreset::display_text`): `{"diagnostics",
    /// "text"}` as JSON.
    #[napi]
    pub fn display_json(
        &self,
        text: String,
        role_name: String,
        depth: Option<u32>,
        speaker: Option<String>,
        markdown: bool,
        context: ContextArg<'_>,
    ) -> Result<String> {
        let role = role(&role_name)?;
        with_context(context, |ctx| {
            let who = speaker.as_deref();
            match markdown {
                true => self.inner.display_text(&text, role, depth, who, ctx),
                false => self.inner.display_message(&text, role, depth, who, ctx),
            }
            .to_json()
        })
    }

    /// The prompt pass a render runs (SPEC §13.2.3), alone: `{"diagnostics", "items"}` as JSON,
    /// one item per context item (`null`: a lore item it dropped).
    #[napi]
    pub fn prompt_pass_json(&self, context: ContextArg<'_>) -> Result<String> {
        with_context(context, |ctx| {
            let out = self.inner.prompt_pass(ctx);
            // Keys in byte order, as the library's documents.
            format!(
                "{{\"diagnostics\":{},\"items\":{}}}",
                serde_json::to_string(&out.diagnostics).unwrap_or_default(),
                serde_json::to_string(&out.items).unwrap_or_default()
            )
        })
    }

    /// Renders a chat, encoded for `index.js` (texts the chat holds are referred to by
    /// index): returns the text and writes the layout into `layout` (see `chat::encode`).
    /// Only `index.js` calls it, and takes every render it completes (`ChatRender`): the
    /// chat then counts on `index.js` holding the messages of the items it sent.
    #[napi(ts_return_type = "string")]
    pub fn render_chat<'env>(
        &self,
        env: &'env Env,
        chat: &chat::Chat,
        mut layout: Uint32ArraySlice<'_>,
    ) -> Result<napi::JsString<'env>> {
        // SAFETY: the slice is the JS array's memory, which nothing else touches during this
        // synchronous call.
        chat::render(env, &self.inner, chat, unsafe { layout.as_mut() })
    }

    /// Renders a chat (with its remembered counts) and shapes its provider request: the body
    /// as UTF-8 JSON bytes and the rest of the request document as JSON (`index.js`'s
    /// `ChatRequest` parses it when first read). Its variables wait in the chat for
    /// `keep_last`, as a render's do.
    #[napi]
    pub fn request_chat(&self, chat: &chat::Chat) -> Result<chat::RequestParts> {
        chat::request(&self.inner, chat)
    }
}

/// A compiled template.
#[napi]
pub struct Template {
    inner: stpreset::Template,
}

#[napi]
impl Template {
    /// Compiles template text (text or UTF-8 bytes).
    #[napi(factory)]
    pub fn compile(
        source: Either<String, Buffer>,
        lone_surrogates: Option<u32>,
    ) -> Result<Template> {
        let inner = match &source {
            Either::A(s) => stpreset::Template::compile(s)
                .with_lone_surrogates(lone_surrogates.unwrap_or(0) as usize),
            Either::B(b) => stpreset::Template::from_bytes(b)
                .map_err(|e| error("TemplateError", e.kind(), e))?,
        };
        Ok(Template { inner })
    }

    /// Renders against a context file's JSON; returns `{"text", "diagnostics", "variables"}`.
    #[napi]
    pub fn render_json(&self, context: ContextArg<'_>) -> Result<String> {
        with_context(context, |ctx| self.inner.render(ctx).to_json())
    }
}

/// Loads a tokenizer's vocabulary now (`auto`: both `o200k` and `cl100k`; `approx` and `words`
/// load nothing), so the first budgeted render does not pay for it (0.3–0.4 s per vocabulary).
#[napi]
pub fn preload_tokenizer(name: String) -> Result<()> {
    let tokenizer: stpreset::tokens::Tokenizer = name
        .parse()
        .map_err(|e: String| napi::Error::new(Status::InvalidArg, e))?;
    tokenizer.preload();
    Ok(())
}

/// The `LoneSurrogate` note for `count` lone surrogates `index.js` replaced in `input`, as JSON.
#[napi]
pub fn lone_surrogates_json(input: String, count: u32) -> String {
    let d = stpreset::Diagnostic::lone_surrogates(&input, count as usize);
    serde_json::to_string(&d).unwrap_or_default()
}

/// Reads a character card (SPEC §15.1; PNG or JSON bytes, `png` forces PNG) into
/// `{"card", "context", "diagnostics", "items"}`; a card that does not read is a `CardError`.
#[napi]
pub fn read_card_json(bytes: Buffer, png: Option<bool>) -> Result<String> {
    let format = match png {
        Some(true) => stpreset::lore::CardFormat::Png,
        _ => stpreset::lore::CardFormat::Auto,
    };
    stpreset::Card::from_bytes(&bytes, format, &stpreset::Limits::default())
        .map(|card| card.to_json_document())
        .map_err(|e| error("CardError", e.kind(), e))
}

/// A SillyTavern chat file (`.jsonl`, SPEC §17.5) as context fields, JSON; a file that does
/// not read is a `ContextError` naming its line.
#[napi]
pub fn read_st_chat_json(bytes: Buffer) -> Result<String> {
    stpreset::stchat::st_chat_context(&bytes)
        .map(|v| v.to_string())
        .map_err(|e| error("ContextError", e.kind(), e))
}

/// The World Info activation a render of this context would place (SPEC §15.7), as JSON.
#[napi]
pub fn lore_json(context: ContextArg<'_>) -> Result<String> {
    with_context(context, |ctx| {
        stpreset::activation::WiResult::for_context(ctx).to_json()
    })
}
