//! What assembly produces: messages, each remembering where it came from.

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use crate::context::{Role, Tag};

/// One message for a model provider. Flattening concatenates `parts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Message {
    /// Who speaks.
    pub role: Role,
    /// The text, in parts: merged depth injections add `\n[System: ...]` parts to history items.
    pub parts: Vec<String>,
    /// What produced the message.
    pub source: Source,
}

impl Message {
    /// The message's text: its parts concatenated.
    pub fn text(&self) -> String {
        self.parts.concat()
    }

    /// A message from its parts (for hosts that build or budget their own lists).
    pub fn with_parts(role: Role, parts: Vec<String>, source: Source) -> Message {
        Message {
            role,
            parts,
            source,
        }
    }

    pub(crate) fn new(role: Role, text: String, source: Source) -> Message {
        Message {
            role,
            parts: vec![text],
            source,
        }
    }
}

/// What produced a message.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Source {
    /// A preset node (custom node, `main`, or the persona/scenario markers), by identifier.
    Node(String),
    /// A host item, by tag (`None` when untagged).
    Tag(Option<Tag>),
    /// The separator after trailing example dialogue.
    SampleSeparator,
    /// Depth injections joined into one message (separate injection mode): the source of each
    /// joined text, in order (nodes, and tail items by tag).
    Injection(Vec<Source>),
}

impl Serialize for Source {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        match self {
            Source::Node(id) => m.serialize_entry("node", id)?,
            Source::Tag(tag) => m.serialize_entry("tag", tag)?,
            Source::SampleSeparator => m.serialize_entry("tag", "SAMPLE_SEPARATOR")?,
            Source::Injection(parts) => m.serialize_entry("injection", parts)?,
        }
        m.end()
    }
}
