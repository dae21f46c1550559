//! A bot's chat kept on the native side between turns, rendered into Python objects directly.
//!
//! Why: a 200-message context crossed as JSON every turn and came back as 200 new strings.
//! A `Chat` takes the context once; afterwards only the messages a bot adds cross. A render
//! hands back the caller's own history `str` objects (`stpreset::passthrough::Passthrough`) and the
//! previous turn's `str` objects for produced parts that did not change (`PartMemo`), so a
//! turn builds Python objects only for what is new.

use std::collections::HashMap;

use pyo3::intern;
use pyo3::prelude::*;
use std::hash::{BuildHasherDefault, Hasher};

use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyList, PyString, PyTuple, PyType};
use stpreset::{Source, json::RenderDetails, passthrough::PartMemo};

use crate::{Text, error};

fn context_error(e: stpreset::ContextError) -> PyErr {
    error("ContextError", e.kind(), e)
}

/// The context of SPEC §9 held natively between turns.
#[pyclass(module = "stpreset._native")]
pub struct Chat {
    inner: stpreset::Chat,
    /// Per item: the `str` a render hands back for its text (the caller's own when it is
    /// exactly the text the engine read).
    texts: Vec<Py<PyString>>,
    memo: PartMemo,
    /// The produced parts of the last render, numbered as `memo` numbers them.
    prev: Vec<Py<PyString>>,
    /// The last render's messages, by a hash of what built them.
    messages: ByHash<Kept>,
}

/// The `str` objects for `items`' texts: the caller's own where it equals the text read.
fn texts(
    py: Python<'_>,
    items: &[stpreset::ContextItem],
    given: Vec<Bound<'_, PyAny>>,
) -> Vec<Py<PyString>> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let own = given.get(i).and_then(|g| {
                let s = g.cast::<PyString>().ok()?;
                (*s.to_cow().ok()? == *item.text).then(|| s.clone().unbind())
            });
            own.unwrap_or_else(|| PyString::new(py, &item.text).unbind())
        })
        .collect()
}

#[pymethods]
impl Chat {
    /// A chat from a context file's JSON and the items' `text` values as given.
    #[new]
    fn new(py: Python<'_>, context_json: Text<'_>, given: Vec<Bound<'_, PyAny>>) -> PyResult<Chat> {
        let json = context_json.json()?;
        let inner = py
            .detach(|| stpreset::Chat::from_json(&json))
            .map_err(context_error)?;
        let texts = texts(py, &inner.context().items, given);
        Ok(Chat {
            inner,
            texts,
            memo: PartMemo::default(),
            prev: Vec::new(),
            messages: ByHash::default(),
        })
    }

    /// Replaces `delete` items from `start` (clamped) with a JSON list's; nothing changes when
    /// an item is refused.
    fn splice(
        &mut self,
        py: Python<'_>,
        start: usize,
        delete: usize,
        items_json: Text<'_>,
        given: Vec<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let items_json = items_json.json()?;
        let len = self.inner.len();
        let start = start.min(len);
        let end = start.saturating_add(delete).min(len);
        let added = given.len();
        self.inner
            .splice_json(start, end - start, &items_json)
            .map_err(context_error)?;
        let new = texts(
            py,
            &self.inner.context().items[start..start + added.min(self.inner.len() - start)],
            given,
        );
        self.texts.splice(start..end, new);
        Ok(())
    }

    /// The chat's macro callback (issue 39): `f(name, args)` for a macro the catalog and the
    /// context's `macros` lack, `str` or `None`; `None` removes it. Called with the GIL taken
    /// back during a render; an exception or another return type is a `HostMacroFailed`
    /// diagnostic naming it, and the macro stays literal.
    fn set_macro_fn(&mut self, f: Option<Py<PyAny>>) {
        let host = self.inner.host_mut();
        let Some(f) = f else {
            host.clear_macro_fn();
            return;
        };
        host.set_fallible_macro_fn(move |name, args| {
            Python::attach(|py| {
                let value = f
                    .call1(py, (name, args.to_vec()))
                    .map_err(|e| e.to_string())?;
                let value = value.bind(py);
                if value.is_none() {
                    return Ok(None);
                }
                value.extract::<String>().map(Some).map_err(|_| {
                    let kind = value.get_type().name().map(|n| n.to_string());
                    format!("returned {}, not str or None", kind.unwrap_or_default())
                })
            })
        });
    }

    /// Replaces the fields a JSON object has (any but `items`).
    fn set(&mut self, py: Python<'_>, fields_json: Text<'_>) -> PyResult<()> {
        let json = fields_json.json()?;
        py.detach(|| self.inner.set_json(&json))
            .map_err(context_error)
    }

    /// Carries a render's variables and globals into the next render.
    fn keep(&mut self, rest: &Rest) {
        self.inner
            .keep(rest.0.variables.clone(), rest.0.globals.clone());
    }

    /// The chat saved as a context file's JSON (`stpreset::Chat::to_json`).
    fn to_json(&self, py: Python<'_>) -> String {
        py.detach(|| self.inner.to_json())
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }
}

impl Chat {
    pub fn context(&self) -> &stpreset::Context {
        self.inner.context()
    }
}

/// Renders a chat and shapes its request: the body's bytes, and the rest of the request
/// document (the render's diagnostics with the request's own), read when asked for.
pub fn request<'py>(
    py: Python<'py>,
    preset: &stpreset::CompiledPreset,
    chat: &Chat,
) -> PyResult<(Bound<'py, PyBytes>, Rest)> {
    let inner = &chat.inner;
    let (body, rest) = py.detach(|| {
        let (body, rest) = preset
            .render_chat(inner)
            .into_request(&inner.context().provider_options);
        (body.to_string(), rest)
    });
    Ok((PyBytes::new(py, body.as_bytes()), Rest(rest)))
}

/// The rest of a render (diagnostics, variables, token count, options).
#[pyclass(frozen, module = "stpreset._native")]
pub struct Rest(RenderDetails);

#[pymethods]
impl Rest {
    /// `{"diagnostics", "effective", "globals", "prompt_tokens", "variables"}` as JSON.
    fn json(&self) -> String {
        self.0.to_json()
    }

    /// The `wi_state` alone as JSON (`None` without lore): what a bot reads every turn,
    /// without writing and parsing the variables beside it.
    fn wi_state_json(&self) -> Option<String> {
        self.0.wi_state.as_ref().map(|s| s.to_string())
    }
}

/// The package's immutable dict classes (`stpreset.Message`, `stpreset.FrozenDict`), given
/// once by `stpreset/__init__.py`: a message is a dict (read at dict speed) that refuses
/// changes, so a chat can hand the same object back next turn when the message did not change.
static CLASSES: PyOnceLock<(Py<PyType>, Py<PyType>)> = PyOnceLock::new();

/// Registers `stpreset.Message` and `stpreset.FrozenDict`.
#[pyfunction]
pub fn register(py: Python<'_>, message: Py<PyType>, frozen: Py<PyType>) {
    let _ = CLASSES.set(py, (message, frozen));
}

fn classes(py: Python<'_>) -> PyResult<&(Py<PyType>, Py<PyType>)> {
    CLASSES
        .get(py)
        .ok_or_else(|| pyo3::exceptions::PyRuntimeError::new_err("stpreset classes not registered"))
}

/// A message of the last render, with what built it (to check a reuse).
struct Kept {
    message: Py<PyAny>,
    /// The role as spelled: `ROLES`' index (3: a reply spelled `assistant`).
    code: usize,
    key: Key,
    parts: Vec<usize>,
    name: Option<String>,
}

/// A cheap hash of pointers and small numbers (FxHash's step): the values come from the
/// allocator, not from chat text, and a reuse is checked in full.
fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95)
}

/// A map whose keys are already hashes (see `mix`).
#[derive(Default)]
struct Same(u64);

impl Hasher for Same {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 = mix(self.0, u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

type ByHash<V> = HashMap<u64, V, BuildHasherDefault<Same>>;

/// Renders `chat`: the messages (a list of `stpreset.Message`), and the rest.
pub fn render<'py>(
    py: Python<'py>,
    preset: &stpreset::CompiledPreset,
    chat: &mut Chat,
) -> PyResult<(Bound<'py, PyList>, Rest)> {
    let inner = &chat.inner;
    // The token count is counted here too, with the GIL released.
    let (messages, rest, names, reply) = py.detach(|| {
        let rendered = preset.render_chat(inner);
        // As the render document writes them: a name where the layout gives one, a reply's
        // role spelled as the layout spells it (`assistant` in the SillyTavern layout).
        let names: Vec<Option<String>> = (0..rendered.messages.len())
            .map(|i| rendered.message_name(i).map(str::to_string))
            .collect();
        let reply = rendered.role_spelling(stpreset::Role::Model);
        let (messages, rest) = rendered.into_parts();
        (messages, rest, names, reply)
    });
    let mut items = inner.passthrough();
    let memo = &mut chat.memo;
    let mut next: Vec<Py<PyString>> = Vec::new();
    let (message_class, frozen_class) = classes(py)?;
    let mut kept: ByHash<Kept> = ByHash::default();
    let roles = [
        intern!(py, "system"),
        intern!(py, "user"),
        intern!(py, "model"),
        intern!(py, "assistant"),
    ];
    // One source dict per source: a 200-message history shares one.
    let mut sources: HashMap<Key, Bound<'py, PyAny>> = HashMap::new();
    let mut list = Vec::with_capacity(messages.len());
    let mut parts = Vec::new();
    for (m, name) in messages.iter().zip(&names) {
        parts.clear();
        for part in m.parts() {
            let s = match items.item_of(part) {
                Some(i) => chat.texts[i].bind(py).clone(),
                None => {
                    let s = match memo.part(part).and_then(|k| chat.prev.get(k as usize)) {
                        Some(s) => s.bind(py).clone(),
                        None => PyString::new(py, part),
                    };
                    next.push(s.clone().unbind());
                    s
                }
            };
            parts.push(s);
        }
        let code = match m.role {
            stpreset::Role::Model if reply == "assistant" => 3,
            role => role as usize,
        };
        let key = key(&m.source);
        let ptrs: Vec<usize> = parts.iter().map(|p| p.as_ptr() as usize).collect();
        let hash = ptrs.iter().fold(
            mix(code as u64, key.as_ref().map_or(0, Key::hash64)),
            |h, &p| mix(h, p as u64),
        );
        let reused = chat
            .messages
            .get(&hash)
            .filter(|old| {
                old.code == code
                    && Some(&old.key) == key.as_ref()
                    && old.parts == ptrs
                    && &old.name == name
            })
            .map(|old| old.message.clone_ref(py));
        let message = match reused {
            Some(old) => old,
            None => {
                let source = match key.as_ref().and_then(|k| sources.get(k)) {
                    Some(d) => d.clone(),
                    None => {
                        let d = frozen_class
                            .bind(py)
                            .call1((source_dict(py, &m.source)?,))?;
                        if let Some(k) = &key {
                            sources.insert(k.clone(), d.clone());
                        }
                        d
                    }
                };
                let fields = PyDict::new(py);
                // In the document's key order: `name` first.
                if let Some(name) = name {
                    fields.set_item(intern!(py, "name"), name)?;
                }
                fields.set_item(intern!(py, "parts"), PyTuple::new(py, &parts)?)?;
                fields.set_item(intern!(py, "role"), roles[code])?;
                fields.set_item(intern!(py, "source"), source)?;
                message_class.bind(py).call1((fields,))?.unbind()
            }
        };
        if let Some(key) = key {
            kept.insert(
                hash,
                Kept {
                    message: message.clone_ref(py),
                    code,
                    key,
                    parts: ptrs,
                    name: name.clone(),
                },
            );
        }
        list.push(message);
    }
    let list = PyList::new(py, list)?;
    memo.commit();
    chat.prev = next;
    chat.messages = kept;
    Ok((list, Rest(rest)))
}

/// What tells sources apart without writing them out (joined injections are not told apart:
/// their messages are built afresh).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Key {
    Node(std::sync::Arc<str>),
    Tag(Option<u8>),
    Setting(&'static str),
}

impl Key {
    /// For `mix`: a node by where its identifier lives (one `Arc` per node), else its value.
    fn hash64(&self) -> u64 {
        match self {
            Key::Node(id) => mix(1, std::sync::Arc::as_ptr(id) as *const u8 as u64),
            Key::Tag(t) => mix(2, t.map_or(0, |t| u64::from(t) + 1)),
            Key::Setting(k) => mix(3, k.as_ptr() as u64),
        }
    }
}

fn key(source: &Source) -> Option<Key> {
    match source {
        Source::Node(id) => Some(Key::Node(id.clone())),
        Source::Tag(tag) => Some(Key::Tag(tag.map(|t| t as u8))),
        Source::Setting(k) => Some(Key::Setting(k)),
        _ => None,
    }
}

fn source_dict<'py>(py: Python<'py>, source: &Source) -> PyResult<Bound<'py, PyDict>> {
    let json = serde_json::to_string(source).unwrap_or_default();
    let loads = py
        .import(intern!(py, "json"))?
        .getattr(intern!(py, "loads"))?;
    Ok(loads.call1((json,))?.cast_into::<PyDict>()?)
}
