//! Python bindings (PyO3). The native module `stpreset._native` speaks SPEC §9 JSON text — the
//! documents the CLI prints, from the same library calls — and `stpreset/__init__.py` turns it
//! into dicts and typed exceptions. Rendering runs with the GIL released.

use std::sync::Arc;

mod chat;
mod store;

// A render allocates and frees many small strings and vectors (parts, sources, variables);
// glibc's malloc took about a sixth of a NemoEngine render (consolidating and unlinking
// chunks). mimalloc's per-thread free lists cost a fraction of that.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::borrow::Cow;

use pyo3::types::{PyBytes, PyString};

/// Raised as `ValueError(class, kind, message)`; the package re-raises it as its own class.
pub(crate) fn error(class: &str, kind: &str, message: impl std::fmt::Display) -> PyErr {
    PyValueError::new_err((class.to_string(), kind.to_string(), message.to_string()))
}

fn context(json: &[u8]) -> PyResult<stpreset::Context> {
    stpreset::Context::from_json(json).map_err(|e| error("ContextError", e.kind(), e))
}

/// A message's role as the context file spells it (`assistant` is `model`).
fn role(name: &str) -> PyResult<stpreset::Role> {
    name.parse().map_err(|e| error("ContextError", "Role", e))
}

/// A pass's JSON, with the notes for lone surrogates replaced in its text and speaker.
fn noted(mut out: stpreset::passes::Regexed, lone: usize, lone_speaker: usize) -> String {
    if lone_speaker > 0 {
        let note = stpreset::Diagnostic::lone_surrogates("the speaker", lone_speaker);
        out.diagnostics.insert(0, note);
    }
    if lone > 0 {
        let note = stpreset::Diagnostic::lone_surrogates("the message", lone);
        out.diagnostics.insert(0, note);
    }
    out.to_json()
}

/// A speaker name as Rust text (see `repaired`).
fn speaker_text(speaker: Option<&Bound<'_, PyString>>) -> PyResult<(Option<String>, usize)> {
    match speaker {
        None => Ok((None, 0)),
        Some(s) => repaired(s).map(|(t, n)| (Some(t.into_owned()), n)),
    }
}

/// The regex scripts (SPEC §13.1) as a JSON list of their fields as read.
fn scripts_json<'a>(
    scripts: impl IntoIterator<Item = &'a stpreset::scripts::RegexScript>,
) -> String {
    let list: Vec<&stpreset::scripts::RegexScript> = scripts.into_iter().collect();
    serde_json::to_string(&list).unwrap_or_default()
}

/// Text or bytes from Python. A `str` may hold lone surrogates (half an emoji), which Rust
/// strings cannot: they become U+FFFD with a `LoneSurrogate` note (issue 20).
#[derive(FromPyObject)]
pub(crate) enum Text<'py> {
    Str(Bound<'py, PyString>),
    Bytes(Vec<u8>),
}

impl Text<'_> {
    /// JSON text as bytes: lone surrogates as three bytes each (`surrogatepass`), which the
    /// engine's JSON readers replace and note.
    pub(crate) fn json(&self) -> PyResult<Cow<'_, [u8]>> {
        match self {
            Text::Bytes(b) => Ok(Cow::Borrowed(b)),
            Text::Str(s) => match s.to_cow() {
                Ok(Cow::Borrowed(t)) => Ok(Cow::Borrowed(t.as_bytes())),
                Ok(Cow::Owned(t)) => Ok(Cow::Owned(t.into_bytes())),
                Err(_) => Ok(Cow::Owned(
                    s.call_method1("encode", ("utf-8", "surrogatepass"))?
                        .extract::<Vec<u8>>()?,
                )),
            },
        }
    }
}

/// A `str` as Rust text and how many lone surrogates were replaced by U+FFFD.
fn repaired<'a>(s: &'a Bound<'_, PyString>) -> PyResult<(Cow<'a, str>, usize)> {
    if let Ok(t) = s.to_cow() {
        return Ok((t, 0));
    }
    let bytes: Vec<u8> = s
        .call_method1("encode", ("utf-16-le", "surrogatepass"))?
        .extract()?;
    let units = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]));
    let mut lone = 0;
    let text = char::decode_utf16(units)
        .map(|r| {
            r.unwrap_or_else(|_| {
                lone += 1;
                char::REPLACEMENT_CHARACTER
            })
        })
        .collect();
    Ok((Cow::Owned(text), lone))
}

/// A context: its JSON text (`str` or `bytes`), or a chat the caller keeps.
#[derive(FromPyObject)]
enum ContextArg<'py> {
    Chat(PyRef<'py, chat::Chat>),
    Text(Text<'py>),
}

impl ContextArg<'_> {
    /// Runs `f` over the context with the GIL released.
    fn with<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&stpreset::Context) -> R + Send,
    ) -> PyResult<R> {
        match self {
            ContextArg::Chat(chat) => {
                let ctx = chat.context();
                Ok(py.detach(|| f(ctx)))
            }
            ContextArg::Text(text) => {
                let json = text.json()?;
                py.detach(|| Ok(f(&context(&json)?)))
            }
        }
    }
}

/// An imported preset.
#[pyclass(frozen, module = "stpreset._native")]
struct Preset {
    inner: stpreset::Preset,
}

#[pymethods]
impl Preset {
    #[staticmethod]
    fn from_json(py: Python<'_>, text: Text<'_>) -> PyResult<Preset> {
        let bytes = text.json()?;
        py.detach(|| stpreset::Preset::from_json(&bytes))
            .map(|inner| Preset { inner })
            .map_err(|e| error("PresetError", e.kind(), e))
    }

    fn compile(&self, py: Python<'_>) -> CompiledPreset {
        let inner = py.detach(|| Arc::new(self.inner.compile()));
        CompiledPreset { inner }
    }

    /// Compiles with the nodes `toggles` names switched on or off first.
    fn compile_toggled(
        &self,
        py: Python<'_>,
        toggles: std::collections::BTreeMap<String, bool>,
    ) -> PyResult<CompiledPreset> {
        let mut copy = self.inner.clone();
        copy.set_enabled_all(toggles.iter().map(|(id, on)| (id.as_str(), *on)))
            .map_err(|id| {
                let msg = format!(
                    "the preset has no node {}",
                    stpreset::diagnostic::terminal_safe(id)
                );
                error("PresetError", "UnknownNode", msg)
            })?;
        let inner = py.detach(|| Arc::new(copy.compile()));
        Ok(CompiledPreset { inner })
    }

    /// The nodes in walk order (`Preset::nodes_json`).
    fn nodes_json(&self) -> String {
        self.inner.nodes_json()
    }

    /// The authors' sections, tooltips and exclusive groups (`Preset::outline`), as JSON.
    fn outline_json(&self) -> String {
        self.inner.outline().to_json()
    }

    /// The regex scripts as imported (SPEC §13.1), a JSON list.
    fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    fn audit_json(&self, py: Python<'_>) -> String {
        py.detach(|| self.inner.audit_json())
    }

    fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }
}

/// A compiled preset; renders from any thread.
#[pyclass(frozen, module = "stpreset._native")]
pub(crate) struct CompiledPreset {
    pub(crate) inner: Arc<stpreset::CompiledPreset>,
}

#[pymethods]
impl CompiledPreset {
    fn settings_json(&self) -> String {
        self.inner.settings().to_json()
    }

    fn render_json(&self, py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
        context.with(py, |ctx| self.inner.render(ctx).to_json())
    }

    /// Renders and shapes the request the context's `provider_options` ask for (SPEC §12.6).
    fn request_json(&self, py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
        context.with(py, |ctx| {
            self.inner
                .render(ctx)
                .to_request_json(&ctx.provider_options)
        })
    }

    /// Only the provider request body (SPEC §12.3) as UTF-8 JSON bytes, ready to POST: one
    /// copy out, no Python objects built.
    fn request_body<'py>(
        &self,
        py: Python<'py>,
        context: ContextArg<'_>,
    ) -> PyResult<Bound<'py, PyBytes>> {
        let body = context.with(py, |ctx| {
            let (request, _) = self.inner.render(ctx).to_request(&ctx.provider_options);
            request.to_string()
        })?;
        Ok(PyBytes::new(py, body.as_bytes()))
    }

    /// The regex scripts it runs (SPEC §13.1), a JSON list.
    fn regex_scripts_json(&self) -> String {
        scripts_json(self.inner.regex_scripts())
    }

    /// A new chat's first message (`stpreset::CompiledPreset::first_message`): `{"diagnostics",
    /// "item", "swipes"}` as JSON, or `null`.
    fn first_message_json(&self, py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
        context.with(py, |ctx| {
            self.inner
                .first_message(ctx)
                .map_or_else(|| "null".to_string(), |f| f.to_json())
        })
    }

    /// A reply or user message before the bot stores it (SPEC §13.7 store pass):
    /// `{"diagnostics", "text"}` as JSON.
    fn store_message_json(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        role_name: &str,
        context: ContextArg<'_>,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        let (text, lone) = repaired(&text)?;
        context.with(py, |ctx| {
            noted(self.inner.store_message(&text, role, ctx), lone, 0)
        })
    }

    /// An edited message (SPEC §13.7 edit pass): `{"diagnostics", "text"}` as JSON.
    #[pyo3(signature = (text, role_name, speaker, context))]
    fn edit_message_json(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        role_name: &str,
        speaker: Option<Bound<'_, PyString>>,
        context: ContextArg<'_>,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        let (text, lone) = repaired(&text)?;
        let (speaker, lone_speaker) = speaker_text(speaker.as_ref())?;
        context.with(py, |ctx| {
            let out = self
                .inner
                .edit_message(&text, role, speaker.as_deref(), ctx);
            noted(out, lone, lone_speaker)
        })
    }

    /// Text shown to people (the display pass), with its HTML as Markdown when `markdown`
    /// (`CompiledPreset::display_text`).
    #[pyo3(signature = (text, role_name, depth, speaker, markdown, context))]
    // The GIL token and the five arguments Python passes: one more than clippy's default.
    #[allow(clippy::too_many_arguments)]
    fn display_json(
        &self,
        py: Python<'_>,
        text: Bound<'_, PyString>,
        role_name: &str,
        depth: Option<u32>,
        speaker: Option<Bound<'_, PyString>>,
        markdown: bool,
        context: ContextArg<'_>,
    ) -> PyResult<String> {
        let role = role(role_name)?;
        let (text, lone) = repaired(&text)?;
        let (speaker, lone_speaker) = speaker_text(speaker.as_ref())?;
        context.with(py, |ctx| {
            let who = speaker.as_deref();
            let out = match markdown {
                true => self.inner.display_text(&text, role, depth, who, ctx),
                false => self.inner.display_message(&text, role, depth, who, ctx),
            };
            noted(out, lone, lone_speaker)
        })
    }

    /// The prompt pass a render runs (SPEC §13.2.3), alone: `{"diagnostics", "items"}` as JSON.
    fn prompt_pass_json(&self, py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
        context.with(py, |ctx| {
            let out = self.inner.prompt_pass(ctx);
            // Keys in byte order, as the library's documents.
            format!(
                "{{\"diagnostics\":{},\"items\":{}}}",
                serde_json::to_string(&out.diagnostics).unwrap_or_default(),
                serde_json::to_string(&out.items).unwrap_or_default()
            )
        })
    }

    /// Renders a chat (with its remembered counts) and shapes its provider request: the body
    /// as UTF-8 JSON bytes, and the rest of the request document (its diagnostics with the
    /// request's own), read when asked for and kept natively by `Chat.keep`.
    fn request_chat<'py>(
        &self,
        py: Python<'py>,
        chat: PyRef<'py, chat::Chat>,
    ) -> PyResult<(Bound<'py, PyBytes>, chat::Rest)> {
        chat::request(py, &self.inner, &chat)
    }

    /// Renders a chat: its messages as a list of dicts (history texts are the caller's own
    /// `str` objects), and the rest of the render, read when asked for.
    fn render_chat<'py>(
        &self,
        py: Python<'py>,
        mut chat: PyRefMut<'py, chat::Chat>,
    ) -> PyResult<(Bound<'py, pyo3::types::PyList>, chat::Rest)> {
        chat::render(py, &self.inner, &mut chat)
    }
}

/// A compiled template.
#[pyclass(frozen, module = "stpreset._native")]
struct Template {
    inner: stpreset::Template,
}

#[pymethods]
impl Template {
    #[new]
    fn new(py: Python<'_>, source: Text<'_>) -> PyResult<Template> {
        let inner = match &source {
            Text::Str(s) => {
                let (text, lone) = repaired(s)?;
                Ok(py.detach(|| stpreset::Template::compile(&text).with_lone_surrogates(lone)))
            }
            Text::Bytes(b) => py.detach(|| stpreset::Template::from_bytes(b)),
        };
        inner
            .map(|inner| Template { inner })
            .map_err(|e| error("TemplateError", e.kind(), e))
    }

    fn render_json(&self, py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
        context.with(py, |ctx| self.inner.render(ctx).to_json())
    }
}

/// Loads a tokenizer's vocabulary now (`auto`: both `o200k` and `cl100k`; `approx` and `words`
/// load nothing), with the GIL released, so the first budgeted render does not pay for it.
#[pyfunction]
fn preload_tokenizer(py: Python<'_>, name: &str) -> PyResult<()> {
    let tokenizer: stpreset::tokens::Tokenizer = name.parse().map_err(PyValueError::new_err)?;
    py.detach(|| tokenizer.preload());
    Ok(())
}

/// A SillyTavern chat file (`.jsonl`, SPEC §17.5) as context fields, JSON.
#[pyfunction]
fn read_st_chat_json(data: Vec<u8>) -> PyResult<String> {
    stpreset::stchat::st_chat_context(&data)
        .map(|v| v.to_string())
        .map_err(|e| error("ContextError", e.kind(), e))
}

/// Reads a character card (SPEC §15.1) into `{"card", "context", "diagnostics", "items"}`.
#[pyfunction]
fn read_card_json(py: Python<'_>, data: Vec<u8>, png: bool) -> PyResult<String> {
    let format = if png {
        stpreset::lore::CardFormat::Png
    } else {
        stpreset::lore::CardFormat::Auto
    };
    py.detach(|| stpreset::Card::from_bytes(&data, format, &stpreset::Limits::default()))
        .map(|card| card.to_json_document())
        .map_err(|e| error("CardError", e.kind(), e))
}

/// The World Info activation a render of this context would place (SPEC §15.7), as JSON.
#[pyfunction]
fn lore_json(py: Python<'_>, context: ContextArg<'_>) -> PyResult<String> {
    context.with(py, |ctx| {
        stpreset::activation::WiResult::for_context(ctx).to_json()
    })
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(preload_tokenizer, m)?)?;
    m.add_function(wrap_pyfunction!(read_card_json, m)?)?;
    m.add_function(wrap_pyfunction!(read_st_chat_json, m)?)?;
    m.add_function(wrap_pyfunction!(lore_json, m)?)?;
    m.add_class::<Preset>()?;
    m.add_class::<CompiledPreset>()?;
    m.add_class::<Template>()?;
    m.add_class::<chat::Chat>()?;
    m.add_class::<chat::Rest>()?;
    m.add_function(wrap_pyfunction!(chat::register, m)?)?;
    m.add_class::<store::PresetStore>()?;
    Ok(())
}
