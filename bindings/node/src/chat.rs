//! A bot's chat kept on the native side between turns, and a render of it encoded so that
//! JavaScript builds its messages from one string and one `Uint32Array`.
//!
//! Why: crossing a 200-message context as JSON every turn, and every history message back as a
//! new JS string, cost 13–95× the render itself. A `Chat` takes the context once; afterwards
//! only the messages a bot adds cross. A render refers to history texts by item index (the
//! JS wrapper holds the caller's own strings, `stpreset::Passthrough` finds them), and what the
//! preset produced crosses as one string, Latin-1 or UTF-16 so that V8 copies it rather than
//! decoding UTF-8.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};

use napi::JsString;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use stpreset::{
    Diagnostic, EffectiveOptions, Message, PartMemo, Passthrough, Rendered, Source, Tag,
};

use crate::error;

fn context_error(e: stpreset::ContextError) -> napi::Error {
    error("ContextError", e.kind(), e)
}

/// The context of SPEC §9 held natively between turns (`stpreset::Chat`).
#[napi]
pub struct Chat {
    pub(crate) inner: stpreset::Chat,
    /// The produced parts of the last render `index.js` took, to hand back unchanged ones.
    memo: RefCell<PartMemo>,
    /// The last render without its messages, until `index.js` takes it (`take_rest`).
    rest: RefCell<Option<Rest>>,
}

/// A render without its messages: what `index.js` reads lazily (the `render` document's other
/// fields, keys in the same order).
#[derive(serde::Serialize)]
pub struct Rest {
    diagnostics: Vec<Diagnostic>,
    effective: EffectiveOptions,
    globals: BTreeMap<String, String>,
    prompt_tokens: Option<u32>,
    variables: BTreeMap<String, String>,
}

#[napi]
impl Chat {
    /// A chat from a context file's JSON, items included.
    #[napi(constructor)]
    pub fn new(context_json: String) -> Result<Chat> {
        stpreset::Chat::from_json(context_json.as_bytes())
            .map(|inner| Chat {
                inner,
                memo: RefCell::default(),
                rest: RefCell::default(),
            })
            .map_err(context_error)
    }

    /// Replaces `delete_count` items from `start` with a JSON list's (as `Array.splice`);
    /// nothing changes when an item is refused.
    #[napi]
    pub fn splice(&mut self, start: u32, delete_count: u32, items_json: String) -> Result<()> {
        self.inner
            .splice_json(start as usize, delete_count as usize, items_json.as_bytes())
            .map_err(context_error)
    }

    /// Replaces the fields a JSON object has (any context field but `items`); nothing
    /// changes when one is refused.
    #[napi]
    pub fn set(&mut self, fields_json: String) -> Result<()> {
        self.inner
            .set_json(fields_json.as_bytes())
            .map_err(context_error)
    }

    /// The rest of the render just made (see `Rest`).
    #[napi(ts_return_type = "ExternalObject<unknown>")]
    pub fn take_rest(&self) -> Option<External<Rest>> {
        self.rest.borrow_mut().take().map(External::new)
    }

    /// Carries a render's variables and globals into the next render.
    #[napi]
    pub fn keep(&mut self, #[napi(ts_arg_type = "ExternalObject<unknown>")] rest: &External<Rest>) {
        self.inner
            .keep(rest.variables.clone(), rest.globals.clone());
    }

    /// How many items the chat has.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        self.inner.len() as u32
    }
}

/// `{"diagnostics", "effective", "globals", "messages": [], "prompt_tokens", "variables"}`.
#[napi]
pub fn rest_json(#[napi(ts_arg_type = "ExternalObject<unknown>")] rest: &External<Rest>) -> String {
    serde_json::to_string(&**rest).unwrap_or_default()
}

/// Renders `chat` with `preset`: returns the text and writes the layout into `layout`
/// (see [`encode`]); the rest waits in the chat for `take_rest`.
pub(crate) fn render<'env>(
    env: &'env Env,
    preset: &stpreset::CompiledPreset,
    chat: &Chat,
    layout: &mut [u32],
) -> Result<JsString<'env>> {
    let mut memo = chat.memo.borrow_mut();
    let (turn, rest) = encode(
        chat.inner.passthrough(),
        preset.render(chat.inner.context()),
        &mut memo,
    );
    if turn.write(layout) {
        memo.commit();
        *chat.rest.borrow_mut() = rest;
    } else {
        memo.abandon();
    }
    turn.text(env)
}

/// A render encoded for `index.js`: the text (see [`encode`]) and its layout.
pub(crate) struct Turn {
    text: Text,
    layout: Vec<u32>,
}

enum Text {
    Latin1(Vec<u8>),
    Utf16(Vec<u16>),
}

impl Turn {
    /// Writes the layout into `buf`, led by its length; when `buf` is too short, only the
    /// length (the caller retries with a longer one) and `false`.
    fn write(&self, buf: &mut [u32]) -> bool {
        let needed = self.layout.len() + 1;
        if let Some(first) = buf.first_mut() {
            *first = needed as u32;
        }
        match buf.get_mut(1..needed) {
            Some(rest) => {
                rest.copy_from_slice(&self.layout);
                true
            }
            None => false,
        }
    }

    /// The text as one JS string.
    fn text<'env>(&self, env: &'env Env) -> Result<JsString<'env>> {
        match &self.text {
            Text::Latin1(bytes) => env.create_string_latin1(bytes),
            Text::Utf16(units) => env.create_string_utf16(units),
        }
    }
}

/// A part with the high bit: produced text of this many UTF-16 units follows in `text`; with
/// the next bit: the previous render's produced part with this number (`PartMemo`); with
/// neither: the text of the chat item with this index.
const PRODUCED: u32 = 1 << 31;
const SAME: u32 = 1 << 30;

/// Source kinds in the layout (`index.js` has the same table).
const NODE: u32 = 0;
const TAG: u32 = 1;
const UNTAGGED: u32 = 2;
const SETTING: u32 = 3;
const JSON_SOURCE: u32 = 4;

/// Strings a render names (node identifiers, tags, settings), each once.
#[derive(Default)]
struct Table<'r> {
    index: HashMap<&'r str, u32>,
    /// Few distinct tags per render: a list beats hashing one per message.
    tags: Vec<(Tag, u32)>,
    text: String,
    lens: Vec<u32>,
}

impl<'r> Table<'r> {
    fn add(&mut self, s: &str) -> u32 {
        let i = self.lens.len() as u32;
        self.text.push_str(s);
        self.lens.push(utf16_len(s));
        i
    }

    fn intern(&mut self, s: &'r str) -> u32 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        let i = self.add(s);
        self.index.insert(s, i);
        i
    }

    fn tag(&mut self, tag: Tag) -> u32 {
        if let Some(&(_, i)) = self.tags.iter().find(|(t, _)| *t == tag) {
            return i;
        }
        let name = serde_json::to_value(tag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let i = self.add(&name);
        self.tags.push((tag, i));
        i
    }
}

fn utf16_len(s: &str) -> u32 {
    if s.is_ascii() {
        s.len() as u32
    } else {
        s.encode_utf16().count() as u32
    }
}

fn source<'r>(table: &mut Table<'r>, source: &'r Source) -> (u32, u32) {
    match source {
        Source::Node(id) => (NODE, table.intern(id)),
        Source::Tag(None) => (UNTAGGED, 0),
        Source::Tag(Some(tag)) => (TAG, table.tag(*tag)),
        Source::Setting(key) => (SETTING, table.intern(key)),
        // The sample separator and joined injections: their JSON, as `render` gives it.
        other => (
            JSON_SOURCE,
            table.add(&serde_json::to_string(other).unwrap_or_default()),
        ),
    }
}

/// A rest of at most this many bytes (estimated) crosses as JSON with the text, read when
/// asked for; a larger one (a preset that keeps long variables) waits in the chat for
/// `take_rest`, so a turn that never reads it never serializes it. The handle costs about
/// 3 µs a turn, the JSON of a small rest well under one.
const INLINE_REST: usize = 8 << 10;

/// The layout's last entry when the rest waits in the chat.
const REST_KEPT: u32 = u32::MAX;

impl Rest {
    /// An upper estimate of its JSON's length, without writing it.
    fn estimate(&self) -> usize {
        let map = |m: &BTreeMap<String, String>| -> usize {
            m.iter().map(|(k, v)| 8 + 2 * (k.len() + v.len())).sum()
        };
        let diags: usize = self
            .diagnostics
            .iter()
            .map(|d| 160 + 2 * (d.message.len() + d.node.as_ref().map_or(0, String::len)))
            .sum();
        512 + diags + map(&self.globals) + map(&self.variables)
    }
}

/// Layout: `[T, len × T, M, per message: role, source kind, source arg, P, part × P, R]`;
/// text: the table's strings, the new produced parts in order, then the rest's JSON (`R`
/// units) or nothing (`R` = `REST_KEPT`: the rest is returned to keep in the chat).
fn encode(
    mut items: Passthrough<'_>,
    rendered: Rendered<'_>,
    memo: &mut PartMemo,
) -> (Turn, Option<Rest>) {
    let mut produced = String::new();
    let mut body: Vec<u32> = Vec::with_capacity(rendered.messages.len() * 6 + 1);
    body.push(rendered.messages.len() as u32);
    let mut table = Table::default();
    for m in &rendered.messages {
        encode_message(m, &mut table, &mut items, memo, &mut produced, &mut body);
    }
    let (lens, table_text) = (table.lens, table.text);
    let rest = Rest {
        prompt_tokens: rendered.prompt_tokens(),
        effective: rendered.effective_options().clone(),
        diagnostics: rendered.diagnostics,
        globals: rendered.globals,
        variables: rendered.variables,
    };
    let rest = if rest.estimate() <= INLINE_REST {
        let json = serde_json::to_string(&rest).unwrap_or_default();
        body.push(utf16_len(&json));
        produced.push_str(&json);
        None
    } else {
        body.push(REST_KEPT);
        Some(rest)
    };
    let mut layout = Vec::with_capacity(1 + lens.len() + body.len());
    layout.push(lens.len() as u32);
    layout.extend_from_slice(&lens);
    layout.extend_from_slice(&body);
    let mut all = table_text;
    all.push_str(&produced);
    let text = if all.is_ascii() {
        Text::Latin1(all.into_bytes())
    } else {
        Text::Utf16(all.encode_utf16().collect())
    };
    (Turn { text, layout }, rest)
}

fn encode_message<'r>(
    m: &'r Message<'_>,
    table: &mut Table<'r>,
    items: &mut Passthrough<'_>,
    memo: &mut PartMemo,
    produced: &mut String,
    body: &mut Vec<u32>,
) {
    let (kind, arg) = source(table, &m.source);
    // Roles by declaration order: system, user, model (`ROLES` in index.js).
    body.extend_from_slice(&[m.role as u32, kind, arg, m.parts().len() as u32]);
    for part in m.parts() {
        match items.item_of(part) {
            Some(i) => body.push(i as u32),
            None => match memo.part(part) {
                Some(k) => body.push(SAME | k),
                None => {
                    produced.push_str(part);
                    body.push(PRODUCED | utf16_len(part));
                }
            },
        }
    }
}
