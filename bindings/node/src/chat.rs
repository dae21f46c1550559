//! A bot's chat kept on the native side between turns, and a render of it encoded so that
//! JavaScript builds its messages from one string and one `Uint32Array`.
//!
//! Why: crossing a 200-message context as JSON every turn, and every history message back as a
//! new JS string, cost 13–95× the render itself. A `Chat` takes the context once; afterwards
//! only the messages a bot adds cross. A render refers to history texts by item index (the
//! JS wrapper holds the caller's own strings, `stpreset::passthrough::Passthrough` finds them), and what the
//! preset produced crosses as one string, Latin-1 or UTF-16 so that V8 copies it rather than
//! decoding UTF-8.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::sync::{Arc, OnceLock};

use twox_hash::XxHash3_128;

use napi::JsString;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use stpreset::{
    ContextItem, Message, Rendered, Source, Tag, json::RenderDetails, passthrough::PartMemo,
    passthrough::Passthrough,
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
    /// The last render's rest (variables and globals for `keep_last`), with its number.
    last: RefCell<Option<(u32, Last)>>,
    /// Renders so far (`index.js` counts them too).
    renders: std::cell::Cell<u32>,
    /// Per item: whether `index.js` holds its message (it was sent as [`ITEM`] in a render
    /// `index.js` took), so a run of such items crosses as one [`RUN`] entry.
    built: RefCell<Vec<bool>>,
    /// The source strings `index.js` holds.
    names: RefCell<Names>,
    /// How the last render spelt a reply's role ([`role_code`]): the messages `index.js`
    /// holds for items carry it, so a render that spells it otherwise sends every item again.
    reply: std::cell::Cell<u32>,
    /// This copy of the module ([`MODULE`]).
    module: usize,
    /// A render of this chat is running: its macro function may call back into JS, and JS
    /// must not change or render the chat then (napi hands out `&mut` without checking).
    busy: std::cell::Cell<bool>,
}

/// Marks a chat busy for a render; not busy again when dropped.
pub(crate) struct Busy<'c>(&'c Chat);

impl<'c> Busy<'c> {
    pub(crate) fn chat(&self) -> &'c Chat {
        self.0
    }
}

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0.busy.set(false);
    }
}

/// A mark per copy of the native module. Two copies of the package in one process (a package
/// duplicated in `node_modules`) each have their own allocator (mimalloc, per `.node` file):
/// one copy's chat handed to the other copy's preset through private fields would be grown
/// and freed by the wrong allocator, so a render refuses it ([`Chat::check`]).
static MODULE: u8 = 0;

fn this_module() -> usize {
    std::ptr::addr_of!(MODULE) as usize
}

/// A kept reference to the JS macro function: called with `(name, args)`, its return read
/// by type.
type MacroFnRef = FunctionRef<FnArgs<(String, Vec<String>)>, Unknown<'static>>;

#[napi]
impl Chat {
    /// A chat from a context file's JSON, items included.
    #[napi(constructor)]
    pub fn new(context_json: String) -> Result<Chat> {
        stpreset::Chat::from_json(context_json.as_bytes())
            .map(|inner| Chat {
                built: RefCell::new(vec![false; inner.len()]),
                reply: std::cell::Cell::new(2),
                inner,
                memo: RefCell::default(),
                last: RefCell::default(),
                renders: Default::default(),
                names: RefCell::default(),
                module: this_module(),
                busy: std::cell::Cell::new(false),
            })
            .map_err(context_error)
    }

    /// Replaces `delete_count` items from `start` with a JSON list's (as `Array.splice`);
    /// nothing changes when an item is refused.
    #[napi]
    pub fn splice(&mut self, start: u32, delete_count: u32, items_json: String) -> Result<()> {
        self.idle()?;
        let len = self.inner.len();
        let start = (start as usize).min(len);
        let end = start.saturating_add(delete_count as usize).min(len);
        self.inner
            .splice_json(start, end - start, items_json.as_bytes())
            .map_err(context_error)?;
        let added = self.inner.len() + (end - start) - len;
        self.built
            .get_mut()
            .splice(start..end, std::iter::repeat_n(false, added));
        Ok(())
    }

    /// Replaces the fields a JSON object has (any context field but `items`); nothing
    /// changes when one is refused.
    #[napi]
    pub fn set(&mut self, fields_json: String) -> Result<()> {
        self.idle()?;
        self.inner
            .set_json(fields_json.as_bytes())
            .map_err(context_error)
    }

    /// Carries the variables and globals of this chat's render number `render` into the next
    /// render, when it is the last one; `false` otherwise (`index.js` then sets them).
    /// The chat's macro callback (issue 39): `f(name, args)` for a macro the catalog and the
    /// context's `macros` lack, a string or `null`/`undefined`; `null` removes it. Renders
    /// are synchronous, on the JS thread that set it: the callback runs there, and is
    /// refused (`HostMacroFailed`) on any other thread, where calling into JS is undefined.
    /// A throw or another return type is a `HostMacroFailed` naming it.
    #[napi]
    pub fn set_macro_fn(&mut self, env: Env, f: Option<MacroFnRef>) -> Result<()> {
        self.idle()?;
        let host = self.inner.host_mut();
        let Some(f) = f else {
            host.clear_macro_fn();
            return Ok(());
        };
        // The env as a number: it is only turned back into an `Env` on its own thread.
        let raw = env.raw() as usize;
        let thread = std::thread::current().id();
        host.set_fallible_macro_fn(move |name, args| {
            if std::thread::current().id() != thread {
                return Err("called off the JS thread that set it".into());
            }
            let env = Env::from_raw(raw as napi::sys::napi_env);
            let f = f.borrow_back(&env).map_err(|e| e.reason.clone())?;
            let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
            let value = f
                // Two arguments, not one array: `FnArgs` spreads the tuple.
                .call(FnArgs::from((name.to_string(), args)))
                .map_err(|e| format!("threw {}", e.reason))?;
            match value.get_type().map_err(|e| e.reason.clone())? {
                ValueType::Null | ValueType::Undefined => Ok(None),
                ValueType::String => value
                    .coerce_to_string()
                    .and_then(|s| s.into_utf8())
                    .and_then(|s| s.into_owned())
                    .map(Some)
                    .map_err(|e| e.reason.clone()),
                other => Err(format!(
                    "returned {}, not a string or null",
                    other.to_string().to_lowercase()
                )),
            }
        });
        Ok(())
    }

    #[napi]
    pub fn keep_last(&mut self, render: u32) -> bool {
        if self.busy.get() {
            return false;
        }
        let last = self.last.borrow_mut().take();
        match last {
            Some((n, last)) if n == render => {
                self.inner
                    .keep(last.rest.variables.clone(), last.rest.globals.clone());
                *self.last.borrow_mut() = Some((n, last));
                true
            }
            other => {
                *self.last.borrow_mut() = other;
                false
            }
        }
    }

    /// Numbers a render (or request) `index.js` took, as `index.js` does, and keeps its rest
    /// for `keep_last` and the next render's comparison.
    fn took(&self, last: Last) -> u32 {
        let n = self.renders.get().wrapping_add(1);
        self.renders.set(n);
        *self.last.borrow_mut() = Some((n, last));
        n
    }

    /// Refuses a change while the chat renders (from its macro function).
    fn idle(&self) -> Result<()> {
        match self.busy.get() {
            true => Err(busy_error()),
            false => Ok(()),
        }
    }

    /// The chat, marked busy until the guard drops: refused when it is busy already (its
    /// macro function rendering it again) or made by another copy of the module.
    pub(crate) fn enter(&self) -> Result<Busy<'_>> {
        let chat = self.check()?;
        chat.idle()?;
        chat.busy.set(true);
        Ok(Busy(chat))
    }

    /// Refuses a chat made by another copy of this module (see [`MODULE`]).
    pub(crate) fn check(&self) -> Result<&Self> {
        if self.module == this_module() {
            Ok(self)
        } else {
            Err(error(
                "ContextError",
                "NotAnObject",
                "the chat was made by another copy of the stpreset package: use one copy",
            ))
        }
    }

    /// The chat saved as a context file's JSON (`stpreset::Chat::to_json`).
    #[napi]
    pub fn to_json(&self) -> String {
        self.inner.to_json()
    }

    /// How many items the chat has.
    #[napi(getter)]
    pub fn length(&self) -> u32 {
        self.inner.len() as u32
    }
}

fn busy_error() -> napi::Error {
    error(
        "ContextError",
        "ChatBusy",
        "the chat is rendering: its macro function cannot change or render it",
    )
}

/// Renders `chat` with `preset`: returns the text and writes the layout into `layout`
/// (see [`encode`]); the variables wait in the chat for `keep_last`.
pub(crate) fn render<'env>(
    env: &'env Env,
    preset: &stpreset::CompiledPreset,
    chat: &Chat,
    layout: &mut [u32],
) -> Result<JsString<'env>> {
    let busy = chat.enter()?;
    let chat = busy.chat();
    let mut memo = chat.memo.borrow_mut();
    let mut previous = chat.last.borrow_mut().take();
    let mut built = chat.built.borrow_mut();
    let mut names = chat.names.borrow_mut();
    let rendered = preset.render_chat(&chat.inner);
    let reply = role_code(
        stpreset::Role::Model,
        rendered.role_spelling(stpreset::Role::Model),
    );
    if chat.reply.replace(reply) != reply {
        built.iter_mut().for_each(|b| *b = false);
    }
    let (turn, last) = encode(
        &chat.inner,
        rendered,
        &mut memo,
        &built,
        &mut names,
        previous.as_mut().map(|(_, last)| last),
    );
    if turn.write(layout) {
        memo.commit();
        for &i in &turn.items {
            if let Some(b) = built.get_mut(i as usize) {
                *b = true;
            }
        }
        chat.took(last);
    } else {
        memo.abandon();
        // Names it added never reached `index.js`.
        names.stale = true;
        *chat.last.borrow_mut() = previous;
    }
    turn.text(env)
}

/// A chat's request for `index.js`: the body, the rest of the request document, and the
/// render's number (for `keep_last`).
#[napi(object)]
pub struct RequestParts {
    pub body: Buffer,
    /// `None`: the same as the chat's last render's or request's (whose JSON `index.js` kept).
    pub rest: Option<String>,
    /// The `wi_state` alone (absent without lore): what a bot reads every turn, without
    /// parsing the variables beside it.
    pub wi_state: Option<String>,
    pub render: u32,
}

/// Renders `chat` with `preset` and shapes the request its `provider_options` ask for: the
/// body as bytes (a bot POSTs them as they are) and the rest (`diagnostics` with the
/// request's own, `prompt_tokens`, `effective`, `variables`, `globals`, `wi_state`) as JSON,
/// what `request(context)` gives in one document. The rest waits in the chat for
/// `keep_last`, so keeping a request costs what keeping a render does.
pub(crate) fn request(preset: &stpreset::CompiledPreset, chat: &Chat) -> Result<RequestParts> {
    let busy = chat.enter()?;
    let chat = busy.chat();
    let (body, rest) = preset
        .render_chat(&chat.inner)
        .into_request(&chat.inner.context().provider_options);
    let wi_state = rest.wi_state.as_ref().map(|s| s.to_string());
    let mut last = Last::new(rest);
    let mut previous = chat.last.borrow_mut().take();
    let json = last.json_unless_same(previous.as_mut().map(|(_, p)| p));
    let n = chat.took(last);
    Ok(RequestParts {
        body: body.to_string().into_bytes().into(),
        rest: json,
        wi_state,
        render: n,
    })
}

/// A render encoded for `index.js`: the text (see [`encode`]) and its layout.
pub(crate) struct Turn {
    text: Text,
    layout: Vec<u32>,
    /// The items sent as [`ITEM`], whose messages `index.js` builds from this render.
    items: Vec<u32>,
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

/// A message's first entry when it is an item as it was given (its role, its tag as source,
/// its text as the one part); the item's index, role and source follow.
const ITEM: u32 = u32::MAX;

/// The first entry of consecutive messages that are consecutive items as given, whose
/// messages `index.js` already holds; the first item's index and the count follow. A
/// 200-message history crosses as one entry instead of 200.
const RUN: u32 = u32::MAX - 1;

/// Set on a message's role when a name follows it (its number in the names table): the
/// render document's `name` (the SillyTavern layout's example lines and named history).
const NAMED: u32 = 1 << 8;

/// A message's role for `index.js` (`ROLES` there): system, user, model, and a reply spelled
/// `assistant` (the SillyTavern layout, `Rendered::role_spelling`).
fn role_code(role: stpreset::Role, reply: &str) -> u32 {
    match role {
        stpreset::Role::Model if reply == "assistant" => 3,
        role => role as u32,
    }
}

/// The item `m` is, unchanged: one part that is the item's text (`Message::item`, checked
/// by address), the item's role, and its tag as source.
fn whole_item(m: &Message<'_>, items: &[ContextItem]) -> Option<u32> {
    let [Cow::Borrowed(part)] = m.parts() else {
        return None;
    };
    let i = m.item()?;
    let item = items.get(i)?;
    if !item.is_own_text(part) {
        return None;
    }
    (m.role == item.role && matches!(m.source, Source::Tag(tag) if tag == item.tag))
        .then_some(i as u32)
}

/// Set on the layout's first entry (the count of new names) when `index.js` must forget the
/// names it holds first.
const RESET_NAMES: u32 = 1 << 31;

/// The layout's last entry when the rest is the chat's last render's.
const SAME_REST: u32 = u32::MAX;

/// Source kinds in the layout (`index.js` has the same table).
const NODE: u32 = 0;
const TAG: u32 = 1;
const UNTAGGED: u32 = 2;
const SETTING: u32 = 3;
const JSON_SOURCE: u32 = 4;

/// The strings `index.js` holds for sources (node identifiers, tag names, setting keys, JSON
/// sources), numbered, kept between renders: a source crosses as its number, and `index.js`
/// keeps one frozen source object per number, instead of slicing and freezing a new one per
/// produced message every turn.
#[derive(Default)]
pub(crate) struct Names {
    index: HashMap<Box<str>, u32>,
    /// Per position among the last render's node-sourced messages: the identifier (kept
    /// alive here, so its address cannot be another's) and its number. A preset's messages
    /// come in the same order every turn: comparing addresses spares hashing each identifier.
    recent: Vec<(Arc<str>, u32)>,
    /// The tags numbered so far (few: a list beats hashing), each named once per generation
    /// rather than serialised every render.
    tags: Vec<(Tag, u32)>,
    /// Set when a render that may have added names was not taken: the next one starts over.
    stale: bool,
}

/// More names than this (JSON sources that change every turn, say): start over.
const NAMES: usize = 4096;

/// A render's view of the chat's [`Names`]: the names it adds, to send.
struct Table<'n> {
    names: &'n mut Names,
    /// Whether `index.js` must forget its names first.
    reset: bool,
    /// The next node-sourced message's position (`Names::recent`).
    at: usize,
    text: String,
    lens: Vec<u32>,
}

impl<'n> Table<'n> {
    fn new(names: &'n mut Names) -> Table<'n> {
        let reset = names.stale || names.index.len() > NAMES;
        if reset {
            names.index.clear();
            names.recent.clear();
            names.tags.clear();
            names.stale = false;
        }
        Table {
            names,
            reset,
            at: 0,
            text: String::new(),
            lens: Vec::new(),
        }
    }

    /// The number of `s`, by its text. (Not by address: a JSON source's string is freed at
    /// once, and the next one may be allocated where it was; a hostile review found every
    /// joined injection named after the first of its length.)
    fn intern(&mut self, s: &str) -> u32 {
        if let Some(&i) = self.names.index.get(s) {
            return i;
        }
        let i = self.names.index.len() as u32;
        self.names.index.insert(s.into(), i);
        self.text.push_str(s);
        self.lens.push(utf16_len(s));
        i
    }

    /// The number of a node identifier: the one at this position last render when it is the
    /// same identifier (by address), else by its text.
    fn node(&mut self, id: &Arc<str>) -> u32 {
        let at = self.at;
        self.at += 1;
        let recent = &self.names.recent;
        if let Some((last, i)) = recent.get(at)
            && Arc::ptr_eq(last, id)
        {
            return *i;
        }
        let i = self.intern(id);
        let recent = &mut self.names.recent;
        if let Some(slot) = recent.get_mut(at) {
            *slot = (Arc::clone(id), i);
        } else if at == recent.len() && at < NAMES {
            recent.push((Arc::clone(id), i));
        }
        i
    }

    fn tag(&mut self, tag: Tag) -> u32 {
        if let Some(&(_, i)) = self.names.tags.iter().find(|(t, _)| *t == tag) {
            return i;
        }
        let name = serde_json::to_value(tag)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        let i = self.intern(&name);
        self.names.tags.push((tag, i));
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

fn source(table: &mut Table<'_>, source: &Source) -> (u32, u32) {
    match source {
        Source::Node(id) => (NODE, table.node(id)),
        Source::Tag(None) => (UNTAGGED, 0),
        Source::Tag(Some(tag)) => (TAG, table.tag(*tag)),
        Source::Setting(key) => (SETTING, table.intern(key)),
        // The sample separator and joined injections: their JSON, as `render` gives it.
        other => (
            JSON_SOURCE,
            table.intern(&serde_json::to_string(other).unwrap_or_default()),
        ),
    }
}

/// Layout: `[T (new names; RESET_NAMES: forget the old ones first), len × T, M, per message:
/// [ITEM, item index,] role, source kind, source arg, (P, part × P unless ITEM); or per run
/// of messages: RUN, first item, count; R]`;
/// text: the new names, the new produced parts in order, then the rest's JSON (`R`
/// units; `SAME_REST`: the same as the chat's last render, whose JSON `index.js` kept), which
/// `index.js` parses when first read. Inline, not a native handle per turn: handles for large
/// rests waited for finalizers that Node runs only when the event loop turns (a synchronous
/// burst of turns grew by 80 KB a turn). A preset's diagnostics and variables seldom change
/// between turns, so comparing with the last render's ([`Last::same`]) usually saves the JSON.
fn encode(
    chat: &stpreset::Chat,
    rendered: Rendered<'_>,
    memo: &mut PartMemo,
    built: &[bool],
    names: &mut Names,
    previous: Option<&mut Last>,
) -> (Turn, Last) {
    // As the render document writes them: names where the layout gives them, a reply's
    // role as the layout spells it.
    let message_names: Vec<Option<String>> = (0..rendered.messages.len())
        .map(|i| rendered.message_name(i).map(str::to_string))
        .collect();
    let reply = rendered.role_spelling(stpreset::Role::Model);
    let (messages, rest) = rendered.into_parts();
    // For the parts of other messages (history items with injections merged into them).
    let mut items = chat.passthrough();
    let mut last = Last::new(rest);
    let mut produced = String::new();
    let mut body: Vec<u32> = Vec::with_capacity(messages.len() * 6 + 1);
    body.push(messages.len() as u32);
    let mut table = Table::new(names);
    let mut sent = Vec::new();
    // Where the open run's count is in `body`, and the item it expects next.
    let mut run: Option<(usize, u32)> = None;
    for (m, name) in messages.iter().zip(&message_names) {
        // A named message is built afresh: `index.js` keeps items' messages without names.
        let item = match name {
            Some(_) => None,
            None => whole_item(m, &chat.context().items),
        };
        match item {
            Some(i) if built.get(i as usize) == Some(&true) => match &mut run {
                Some((count, next)) if *next == i => {
                    body[*count] += 1;
                    *next += 1;
                }
                _ => {
                    body.extend_from_slice(&[RUN, i, 1]);
                    run = Some((body.len() - 1, i + 1));
                }
            },
            _ => {
                run = None;
                encode_message(
                    (m, (name.as_deref(), role_code(m.role, reply))),
                    item,
                    &mut table,
                    &mut items,
                    memo,
                    &mut produced,
                    &mut body,
                );
                sent.extend(item);
            }
        }
    }
    let (lens, table_text, reset) = (table.lens, table.text, table.reset);
    match last.json_unless_same(previous) {
        None => body.push(SAME_REST),
        Some(json) => {
            body.push(utf16_len(&json));
            produced.push_str(&json);
        }
    }
    let mut layout = Vec::with_capacity(1 + lens.len() + body.len());
    layout.push(lens.len() as u32 | if reset { RESET_NAMES } else { 0 });
    layout.extend_from_slice(&lens);
    layout.extend_from_slice(&body);
    let mut all = table_text;
    all.push_str(&produced);
    let text = if all.is_ascii() {
        Text::Latin1(all.into_bytes())
    } else {
        Text::Utf16(all.encode_utf16().collect())
    };
    (
        Turn {
            text,
            layout,
            items: sent,
        },
        last,
    )
}

/// A render's rest as the chat keeps it, with its maps' hash.
pub(crate) struct Last {
    rest: RenderDetails,
    maps: u128,
}

impl Last {
    fn new(rest: RenderDetails) -> Last {
        Last {
            maps: maps_hash(&rest),
            rest,
        }
    }

    /// Its JSON, or `None` when it is the same rest as `previous`'s, whose JSON `index.js`
    /// kept (a preset's findings and variables seldom change between turns).
    fn json_unless_same(&mut self, previous: Option<&mut Last>) -> Option<String> {
        match previous.is_some_and(|p| p.same(self)) {
            true => None,
            false => Some(self.rest.to_json()),
        }
    }

    /// Whether `other` is the same rest: the variables and globals by their hash, the rest by
    /// `==` (with the maps set aside, so a field added to `RenderDetails` is compared too).
    /// Comparing a large preset's maps byte for byte (NemoEngine: 47 KB in 125 variables) took
    /// about 19 µs a turn; hashing the new ones is one pass over memory just written.
    fn same(&mut self, other: &mut Last) -> bool {
        if self.maps != other.maps {
            return false;
        }
        let set_aside = |r: &mut RenderDetails| {
            (
                std::mem::take(&mut r.variables),
                std::mem::take(&mut r.globals),
            )
        };
        let (mine, theirs) = (set_aside(&mut self.rest), set_aside(&mut other.rest));
        let same = self.rest == other.rest;
        (self.rest.variables, self.rest.globals) = mine;
        (other.rest.variables, other.rest.globals) = theirs;
        same
    }
}

/// The variables and globals of `rest`, hashed: XXH3-128 under a seed drawn once per process
/// (from std's randomly keyed `RandomState`), so a preset cannot choose maps that collide;
/// every string is preceded by its length, so no two maps hash the same text.
fn maps_hash(rest: &RenderDetails) -> u128 {
    static SEED: OnceLock<u64> = OnceLock::new();
    let seed = *SEED.get_or_init(|| RandomState::new().hash_one(0u8));
    let mut h = XxHash3_128::with_seed(seed);
    for map in [&rest.variables, &rest.globals] {
        h.write(&(map.len() as u64).to_le_bytes());
        for (k, v) in map {
            h.write(&(k.len() as u64).to_le_bytes());
            h.write(k.as_bytes());
            h.write(&(v.len() as u64).to_le_bytes());
            h.write(v.as_bytes());
        }
    }
    h.finish_128()
}

/// One message's entries, with its name (if any) and its role's code ([`role_code`]); `item`:
/// the item it is as given ([`whole_item`]).
fn encode_message(
    (m, named): (&Message<'_>, (Option<&str>, u32)),
    item: Option<u32>,
    table: &mut Table<'_>,
    items: &mut Passthrough<'_>,
    memo: &mut PartMemo,
    produced: &mut String,
    body: &mut Vec<u32>,
) {
    let (name, role) = named;
    let (kind, arg) = source(table, &m.source);
    if let Some(i) = item {
        // Most of a history: `index.js` keeps one frozen message per item and hands it back
        // (building it from the role and source the first time).
        body.extend_from_slice(&[ITEM, i, role, kind, arg]);
        return;
    }
    match name {
        Some(name) => body.extend_from_slice(&[role | NAMED, table.intern(name)]),
        None => body.push(role),
    }
    body.extend_from_slice(&[kind, arg, m.parts().len() as u32]);
    for part in m.parts() {
        // Only a borrowed part can be an item's text.
        let item = match part {
            Cow::Borrowed(text) => items.item_of(text),
            Cow::Owned(_) => None,
        };
        match item {
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
