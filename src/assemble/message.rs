//! What assembly produces: messages, each remembering where it came from.
//!
//! A message's text borrows the host's: chat history and unchanged host items pass through a
//! render without a copy (`Cow::Borrowed`), so a render's cost follows the preset's text, not
//! the length of the history.

use std::borrow::Cow;
use std::sync::Arc;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::context::{Role, Tag};

/// A message's parts; one inline, so the common single-part message allocates nothing.
/// Hand-written rather than `SmallVec`: `SmallVec` reaches its item type through an
/// associated type, which would make `Message<'a>` (and every render result) invariant in
/// `'a`, so a result could not be passed where a shorter borrow is expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Parts<'a> {
    One(Cow<'a, str>),
    // Boxed, not a `Vec`: 16 bytes fit beside `One`'s niche, so `Parts` takes 24 bytes and a
    // message 56, not 32 and 72. Every render writes and reads a message per history item;
    // a fifth less memory to move showed in 200-message renders. Few messages have several
    // parts, and they seldom change.
    Many(Box<[Cow<'a, str>]>),
}

impl<'a> Parts<'a> {
    #[inline]
    pub fn as_slice(&self) -> &[Cow<'a, str>] {
        match self {
            Parts::One(one) => std::slice::from_ref(one),
            Parts::Many(many) => many,
        }
    }

    pub fn as_mut_slice(&mut self) -> &mut [Cow<'a, str>] {
        match self {
            Parts::One(one) => std::slice::from_mut(one),
            Parts::Many(many) => many,
        }
    }

    /// Adds a part. Copies the boxed parts: made for the one merged injection a history item
    /// takes (`inject`), not for building a message part by part (`Message::with_parts`).
    pub fn push(&mut self, part: Cow<'a, str>) {
        match self {
            Parts::One(one) => {
                let first = std::mem::take(one);
                *self = Parts::Many(Box::new([first, part]));
            }
            Parts::Many(many) => {
                let mut all = std::mem::take(many).into_vec();
                all.push(part);
                *many = all.into_boxed_slice();
            }
        }
    }

    /// Keeps the first `len` parts (a single part stays: a message without parts is dropped
    /// by whoever cut it to none).
    pub fn truncate(&mut self, len: usize) {
        if let Parts::Many(many) = self
            && len < many.len()
        {
            let mut kept = std::mem::take(many).into_vec();
            kept.truncate(len);
            *many = kept.into_boxed_slice();
        }
    }
}

/// `Message::item` of a message that is no item as given (a plain `u32`, not an `Option`,
/// keeps a message at 56 bytes).
const NO_ITEM: u32 = u32::MAX;

/// One message for a model provider. Flattening concatenates its parts; the parts borrow
/// from the rendered context where they are its text unchanged.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct Message<'a> {
    // Fields in byte order of their names: the JSON keys are sorted (SPEC §16).
    /// The text, in parts: merged depth injections add `\n[System: ...]` parts to history items.
    #[serde(serialize_with = "parts_seq")]
    parts: Parts<'a>,
    /// Who speaks.
    pub role: Role,
    /// What produced the message.
    pub source: Source,
    /// The context item whose text is the one part, borrowed ([`Message::item`]).
    #[serde(skip)]
    item: u32,
}

/// Equal in what they say (parts, role, source): [`Message::item`] is where the text was
/// found, not part of the message.
impl PartialEq for Message<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.parts == other.parts && self.role == other.role && self.source == other.source
    }
}

impl Eq for Message<'_> {}

fn parts_seq<S: Serializer>(parts: &Parts<'_>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(parts.as_slice())
}

impl<'a> Message<'a> {
    /// The message's text: its parts concatenated (borrowed when there is one part).
    ///
    /// ```
    /// use stpreset::{Message, Role, Source};
    /// let m = Message::with_parts(Role::User, ["hi", " there"], Source::Tag(None));
    /// assert_eq!(m.text(), "hi there");
    /// let none = Message::with_parts(Role::User, Vec::<String>::new(), Source::Tag(None));
    /// assert!(none.parts().is_empty() && none.text().is_empty());
    /// ```
    pub fn text(&self) -> Cow<'_, str> {
        match self.parts() {
            [one] => Cow::Borrowed(one),
            parts => Cow::Owned(parts.concat()),
        }
    }

    /// The text's parts, in order.
    #[inline]
    pub fn parts(&self) -> &[Cow<'a, str>] {
        self.parts.as_slice()
    }

    /// The text's length in bytes (all parts).
    #[inline]
    pub fn len(&self) -> usize {
        self.parts().iter().map(|p| p.len()).sum()
    }

    /// Whether every part is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.parts().iter().all(|p| p.is_empty())
    }

    /// A message from its parts (for hosts that build or budget their own lists).
    pub fn with_parts<P: Into<Cow<'a, str>>>(
        role: Role,
        parts: impl IntoIterator<Item = P>,
        source: Source,
    ) -> Message<'a> {
        let mut parts: Vec<Cow<'a, str>> = parts.into_iter().map(Into::into).collect();
        let parts = match parts.len() {
            1 => Parts::One(parts.pop().unwrap_or_default()),
            _ => Parts::Many(parts.into_boxed_slice()),
        };
        Message {
            role,
            parts,
            source,
            item: NO_ITEM,
        }
    }

    /// The index of the context item whose text is this message's one part, unchanged and
    /// borrowed from the rendered context (chat history passes through so): a front end that
    /// holds the item's text can hand it back instead of a copy. `None` for any other message,
    /// and once its parts change.
    ///
    /// ```
    /// use stpreset::{Context, ContextItem, Preset, Role, Tag};
    /// let p = Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"},
    ///     {"identifier": "chatHistory", "marker": true}]}"#).unwrap();
    /// let mut ctx = Context::default();
    /// ctx.items.push(ContextItem::new(Some(Tag::DialogueHistory), Role::User, "hello"));
    /// let out = p.compile().render(&ctx);
    /// assert_eq!(out.messages.iter().map(|m| m.item()).collect::<Vec<_>>(), [None, Some(0)]);
    /// ```
    #[inline]
    pub fn item(&self) -> Option<usize> {
        (self.item != NO_ITEM).then_some(self.item as usize)
    }

    /// The message with every part owned, free of the context it borrowed from.
    pub fn into_owned(self) -> Message<'static> {
        Message {
            item: NO_ITEM,
            role: self.role,
            parts: match self.parts {
                Parts::One(one) => Parts::One(Cow::Owned(one.into_owned())),
                Parts::Many(many) => Parts::Many(
                    many.into_iter()
                        .map(|p| Cow::Owned(p.into_owned()))
                        .collect(),
                ),
            },
            source: self.source,
        }
    }

    pub(crate) fn new(role: Role, text: impl Into<Cow<'a, str>>, source: Source) -> Message<'a> {
        Message {
            role,
            parts: Parts::One(text.into()),
            source,
            item: NO_ITEM,
        }
    }

    /// Context item `i` as a message: item `i` as given when `text`, borrowed, is its text.
    #[inline]
    pub(crate) fn of_item(role: Role, text: Cow<'a, str>, source: Source, i: usize) -> Message<'a> {
        let item = match text {
            Cow::Borrowed(_) => u32::try_from(i).unwrap_or(NO_ITEM),
            Cow::Owned(_) => NO_ITEM,
        };
        Message {
            role,
            parts: Parts::One(text),
            source,
            item,
        }
    }

    /// The parts to change: the message is no longer an item as given.
    pub(crate) fn parts_mut(&mut self) -> &mut Parts<'a> {
        self.item = NO_ITEM;
        &mut self.parts
    }
}

/// What produced a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A preset node (custom node, `main`, or the persona/scenario markers), by identifier
    /// (shared with the compiled preset, not copied per render).
    Node(Arc<str>),
    /// A host item, by tag (`None` when untagged).
    Tag(Option<Tag>),
    /// The separator after trailing example dialogue.
    SampleSeparator,
    /// Depth injections joined into one message (separate injection mode): the source of each
    /// joined text, in order (nodes, and tail items by tag).
    Injection(Vec<Source>),
    /// A preset setting (SPEC §14.6): a format's wrapping of a marker's contents, or a
    /// new-chat, example-chat, `send_if_empty` or group-nudge message, by key.
    Setting(&'static str),
    /// An example-dialogue line, by its position among the render's example lines (the
    /// SillyTavern layout, SPEC §17.1.3).
    Example(u32),
    /// SillyTavern's joined depth message of one depth, order and role (SPEC §17.1.3).
    Depth {
        /// Messages from the end.
        depth: u32,
        /// `injection_order` (100 for extension prompts).
        order: i64,
        /// Who speaks.
        role: Role,
    },
}

impl Source {
    /// SillyTavern's squash leaves its new-chat, example-chat and group-nudge prompts apart
    /// (SPEC §14.5): what [`ChatMessage::keep_apart`](crate::ChatMessage) says of a message.
    pub(crate) fn keeps_apart(&self) -> bool {
        matches!(
            self,
            Source::Setting(
                "new_chat_prompt"
                    | "new_group_chat_prompt"
                    | "new_example_chat_prompt"
                    | "group_nudge_prompt"
            )
        )
    }
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match self {
            Source::Node(id) => m.serialize_entry("node", &**id)?,
            Source::Tag(tag) => m.serialize_entry("tag", tag)?,
            Source::SampleSeparator => m.serialize_entry("tag", "SAMPLE_SEPARATOR")?,
            Source::Injection(parts) => m.serialize_entry("injection", parts)?,
            Source::Setting(key) => m.serialize_entry("setting", key)?,
            Source::Example(n) => m.serialize_entry("example", n)?,
            Source::Depth { depth, order, role } => m.serialize_entry(
                "injection",
                &serde_json::json!({"depth": depth, "order": order, "role": role}),
            )?,
        }
        m.end()
    }
}
