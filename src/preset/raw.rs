//! The preset file as read from JSON, without building a `serde_json::Value` for the bulk of it:
//! prompts are read field by field into [`Loose`] values (their types are checked afterwards,
//! with messages that name the prompt), unused fields are skipped, and only the few small root
//! fields the importer reads (`prompt_order`, `context`, `sysprompt`, `post_history`) become
//! `Value`s. Duplicate keys behave like `serde_json::Value`: the last one wins.

use std::fmt;

use serde::Deserialize;
use serde::de::{self, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// A JSON value whose type is judged later: scalars are kept, containers only named.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Loose {
    Null,
    Bool(bool),
    /// A number as written (its value is judged by the integer rules, not by f64).
    Number(String),
    Str(String),
    /// An array or an object (skipped): its kind, for messages.
    Other(&'static str),
}

impl Loose {
    pub fn kind(&self) -> &'static str {
        match self {
            Loose::Null => "null",
            Loose::Bool(_) => "a boolean",
            Loose::Number(_) => "a number",
            Loose::Str(_) => "a string",
            Loose::Other(k) => k,
        }
    }
}

struct LooseVisitor;

impl<'de> Visitor<'de> for LooseVisitor {
    type Value = Loose;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Loose, E> {
        Ok(Loose::Null)
    }
    fn visit_none<E>(self) -> Result<Loose, E> {
        Ok(Loose::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Loose, E> {
        Ok(Loose::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Loose, E> {
        Ok(Loose::Number(v.to_string()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Loose, E> {
        Ok(Loose::Number(v.to_string()))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Loose, E> {
        Ok(Loose::Number(v.to_string()))
    }
    fn visit_str<E>(self, v: &str) -> Result<Loose, E> {
        Ok(Loose::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Loose, E> {
        Ok(Loose::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Loose, A::Error> {
        skip_seq(seq)?;
        Ok(Loose::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Loose, A::Error> {
        skip_map(map)?;
        Ok(Loose::Other("an object"))
    }
}

impl<'de> Deserialize<'de> for Loose {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Loose, D::Error> {
        d.deserialize_any(LooseVisitor)
    }
}

impl Loose {
    /// Reads an integer field from its raw JSON text. serde_json refuses numbers beyond f64
    /// (`1e309`: "number out of range") before a visitor sees them; SPEC §6 clamps integer
    /// fields instead, so numbers keep their written text here.
    fn integer_field(raw: &RawValue) -> Result<Loose, serde_json::Error> {
        let text = raw.get();
        if text.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            Ok(Loose::Number(text.to_string()))
        } else {
            serde_json::from_str(text)
        }
    }
}

/// The fields of one prompt that the importer reads (`None`: missing).
#[derive(Debug, Default)]
pub(super) struct RawPrompt {
    pub identifier: Option<Loose>,
    pub name: Option<Loose>,
    pub role: Option<Loose>,
    pub content: Option<Loose>,
    pub marker: Option<Loose>,
    pub enabled: Option<Loose>,
    pub injection_position: Option<Loose>,
    pub injection_depth: Option<Loose>,
    pub injection_order: Option<Loose>,
}

/// One entry of `prompts`: an object, or something else (an error the importer reports).
#[derive(Debug)]
pub(super) enum PromptEntry {
    Object(Box<RawPrompt>),
    Other(&'static str),
}

/// `prompts` itself.
#[derive(Debug)]
pub(super) enum Prompts {
    Array(Vec<PromptEntry>),
    Other(&'static str),
}

/// The whole file: the prompts, `prompt_order` (its lists kept as written: only the chosen one
/// is read), and the small root fields as `Value`s.
#[derive(Debug)]
pub(super) enum RawFile<'de> {
    Object {
        prompts: Option<Prompts>,
        prompt_order: Option<RawPromptOrder<'de>>,
        root: Map<String, Value>,
        /// The root keys SPEC §14.1 reads (settings and migration keys), as written.
        settings: Vec<(String, &'de RawValue)>,
        /// `extensions`, as written (its `regex_scripts`, SPEC §13.1).
        extensions: Option<&'de RawValue>,
        /// Which of [`KIND_KEYS`] the file has, and how many root keys: what another kind of
        /// SillyTavern file is recognised by (`other_kind`).
        marks: (Vec<&'static str>, usize),
    },
    NotObject(&'static str),
}

/// Root keys that tell SillyTavern's other exports apart (instruct, context and reasoning
/// templates, samplers, system prompts, chat-completion settings).
pub(super) const KIND_KEYS: [&str; 21] = [
    "instruct",
    "context",
    "input_sequence",
    "output_sequence",
    "story_string",
    "example_separator",
    "chat_start",
    "rep_pen",
    "rep_pen_range",
    "typical_p",
    "mirostat_mode",
    "tfs",
    "sampler_priority",
    "prefix",
    "suffix",
    "separator",
    "name",
    "content",
    "chat_completion_source",
    "openai_model",
    "openai_max_context",
];

/// Whether a root key is read as a setting (SPEC §14.1): a key of the table, or one of
/// SillyTavern's migration keys.
fn is_setting(key: &str) -> bool {
    crate::settings::TABLE.iter().any(|(k, _)| *k == key)
        || [
            "claude_use_sysprompt",
            "use_makersuite_sysprompt",
            "names_in_completion",
        ]
        .contains(&key)
}

/// The settings keys and `extensions` of a root object, as written.
#[cfg(feature = "store")]
type RootExtras<'de> = (Vec<(String, &'de RawValue)>, Option<&'de RawValue>);

/// Only the settings and `extensions` of a preset file (for presets the store kept: their
/// nodes are stored resolved, the rest is read again from the file).
#[cfg(feature = "store")]
pub(super) fn settings_only(text: &str) -> RootExtras<'_> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = RootExtras<'de>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a preset object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let (mut out, mut extensions) = (Vec::new(), None);
            while let Some(key) = map.next_key::<String>()? {
                if is_setting(&key) {
                    out.push((key, map.next_value()?));
                } else if key == "extensions" {
                    extensions = Some(map.next_value()?);
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok((out, extensions))
        }
    }
    struct Extras<'de>(RootExtras<'de>);
    impl<'de> Deserialize<'de> for Extras<'de> {
        fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            d.deserialize_map(V).map(Extras)
        }
    }
    serde_json::from_str::<Extras<'_>>(text).map_or_else(|_| (Vec::new(), None), |s| s.0)
}

/// Root fields kept as `Value`s.
const ROOT_FIELDS: [&str; 3] = ["context", "sysprompt", "post_history"];

/// The JSON kind of a value as written, named as in messages (a raw value starts at its first
/// byte: serde_json has validated it).
pub(super) fn raw_kind(raw: &RawValue) -> &'static str {
    match raw.get().as_bytes().first() {
        Some(b'[') => "an array",
        Some(b'{') => "an object",
        Some(b'"') => "a string",
        Some(b't' | b'f') => "a boolean",
        Some(b'n') => "null",
        _ => "a number",
    }
}

/// Reads past a container the importer does not look into (still validated as JSON).
fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

fn kind_of_scalar<E>(kind: &'static str) -> Result<&'static str, E> {
    Ok(kind)
}

/// Implements the scalar visits of a visitor whose only interesting case is a container.
macro_rules! scalars_are {
    ($ty:ty, $wrap:expr) => {
        fn visit_unit<E>(self) -> Result<$ty, E> {
            kind_of_scalar("null").map($wrap)
        }
        fn visit_bool<E>(self, _: bool) -> Result<$ty, E> {
            kind_of_scalar("a boolean").map($wrap)
        }
        fn visit_i64<E>(self, _: i64) -> Result<$ty, E> {
            kind_of_scalar("a number").map($wrap)
        }
        fn visit_u64<E>(self, _: u64) -> Result<$ty, E> {
            kind_of_scalar("a number").map($wrap)
        }
        fn visit_f64<E>(self, _: f64) -> Result<$ty, E> {
            kind_of_scalar("a number").map($wrap)
        }
        fn visit_str<E>(self, _: &str) -> Result<$ty, E> {
            kind_of_scalar("a string").map($wrap)
        }
    };
}

struct PromptVisitor;

impl<'de> Visitor<'de> for PromptVisitor {
    type Value = PromptEntry;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a prompt object")
    }
    scalars_are!(PromptEntry, PromptEntry::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<PromptEntry, A::Error> {
        skip_seq(seq)?;
        Ok(PromptEntry::Other("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<PromptEntry, A::Error> {
        let mut p = RawPrompt::default();
        while let Some(key) = map.next_key::<std::borrow::Cow<'_, str>>()? {
            let slot = match &*key {
                "identifier" => &mut p.identifier,
                "name" => &mut p.name,
                "role" => &mut p.role,
                "content" => &mut p.content,
                "marker" => &mut p.marker,
                "enabled" => &mut p.enabled,
                "injection_position" | "injection_depth" | "injection_order" => {
                    let raw = map.next_value::<&RawValue>()?;
                    let value = Loose::integer_field(raw).map_err(de::Error::custom)?;
                    let slot = match &*key {
                        "injection_position" => &mut p.injection_position,
                        "injection_depth" => &mut p.injection_depth,
                        _ => &mut p.injection_order,
                    };
                    *slot = Some(value);
                    continue;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                }
            };
            *slot = Some(map.next_value::<Loose>()?);
        }
        Ok(PromptEntry::Object(Box::new(p)))
    }
}

impl<'de> Deserialize<'de> for PromptEntry {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<PromptEntry, D::Error> {
        d.deserialize_any(PromptVisitor)
    }
}

struct PromptsVisitor;

impl<'de> Visitor<'de> for PromptsVisitor {
    type Value = Prompts;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of prompts")
    }
    scalars_are!(Prompts, Prompts::Other);
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Prompts, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(16));
        while let Some(p) = seq.next_element::<PromptEntry>()? {
            out.push(p);
        }
        Ok(Prompts::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Prompts, A::Error> {
        skip_map(map)?;
        Ok(Prompts::Other("an object"))
    }
}

impl<'de> Deserialize<'de> for Prompts {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Prompts, D::Error> {
        d.deserialize_any(PromptsVisitor)
    }
}

/// `prompt_order`: its entries, or what it is instead of an array.
#[derive(Debug)]
pub(super) enum RawPromptOrder<'de> {
    Array(Vec<RawOrderEntry<'de>>),
    Other(&'static str),
}

/// One `prompt_order` entry: the fields the importer reads, as written (the chosen `order` is
/// read later, the others never), or what it is instead of an object.
#[derive(Debug)]
pub(super) enum RawOrderEntry<'de> {
    Object {
        character_id: Option<&'de RawValue>,
        order: Option<&'de RawValue>,
    },
    Other(&'static str),
}

impl<'de> Deserialize<'de> for RawPromptOrder<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawPromptOrder<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a prompt order array")
            }
            scalars_are!(RawPromptOrder<'de>, RawPromptOrder::Other);
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(e) = seq.next_element()? {
                    out.push(e);
                }
                Ok(RawPromptOrder::Array(out))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
                skip_map(map)?;
                Ok(RawPromptOrder::Other("an object"))
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> Deserialize<'de> for RawOrderEntry<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawOrderEntry<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a prompt order entry")
            }
            scalars_are!(RawOrderEntry<'de>, RawOrderEntry::Other);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq)?;
                Ok(RawOrderEntry::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut character_id, mut order) = (None, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'_, str>>()? {
                    match &*key {
                        "character_id" => character_id = Some(map.next_value()?),
                        "order" => order = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(RawOrderEntry::Object {
                    character_id,
                    order,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// One item of an order list: an object's `identifier` and `enabled`, or what it is instead.
#[derive(Debug)]
pub(super) enum RawOrderItem {
    Object {
        identifier: Option<Loose>,
        enabled: Option<Loose>,
    },
    Other(&'static str),
}

impl<'de> Deserialize<'de> for RawOrderItem {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawOrderItem;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an order item")
            }
            scalars_are!(RawOrderItem, RawOrderItem::Other);
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                skip_seq(seq)?;
                Ok(RawOrderItem::Other("an array"))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let (mut identifier, mut enabled) = (None, None);
                while let Some(key) = map.next_key::<std::borrow::Cow<'_, str>>()? {
                    match &*key {
                        "identifier" => identifier = Some(map.next_value()?),
                        "enabled" => enabled = Some(map.next_value()?),
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(RawOrderItem::Object {
                    identifier,
                    enabled,
                })
            }
        }
        d.deserialize_any(V)
    }
}

struct FileVisitor;

impl<'de> Visitor<'de> for FileVisitor {
    type Value = RawFile<'de>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a preset object")
    }
    scalars_are!(RawFile<'de>, RawFile::NotObject);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<RawFile<'de>, A::Error> {
        skip_seq(seq)?;
        Ok(RawFile::NotObject("an array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RawFile<'de>, A::Error> {
        let mut prompts = None;
        let mut prompt_order = None;
        let mut root = Map::new();
        let mut settings = Vec::new();
        let mut extensions = None;
        let mut marks = (Vec::new(), 0usize);
        while let Some(key) = map.next_key::<String>()? {
            marks.1 += 1;
            if let Some(k) = KIND_KEYS.iter().find(|k| **k == key)
                && !marks.0.contains(k)
            {
                marks.0.push(*k);
            }
            if is_setting(&key) {
                settings.push((key, map.next_value()?));
            } else if key == "extensions" {
                extensions = Some(map.next_value()?);
            } else if key == "prompts" {
                // `null` means no prompts, like a missing field.
                prompts = map.next_value::<Option<Prompts>>()?;
            } else if key == "prompt_order" {
                prompt_order = Some(map.next_value()?);
            } else if ROOT_FIELDS.contains(&key.as_str()) {
                let v: Value = map.next_value()?;
                root.insert(key, v);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(RawFile::Object {
            prompts,
            prompt_order,
            root,
            settings,
            extensions,
            marks,
        })
    }
}

impl<'de> Deserialize<'de> for RawFile<'de> {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<RawFile<'de>, D::Error> {
        d.deserialize_any(FileVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_prompts_loosely_and_keeps_the_last_duplicate() {
        let f: RawFile = serde_json::from_str(
            r#"{"x": [1, {"y": 2}], "prompts": [{"identifier": "a", "marker": 1, "content": [1],
                "extra": {"deep": [1, 2]}, "enabled": null}, 3],
                "post_history": "p", "post_history": "q"}"#,
        )
        .unwrap();
        let RawFile::Object {
            prompts: Some(Prompts::Array(p)),
            root,
            ..
        } = f
        else {
            panic!("not read as an object with prompts");
        };
        let PromptEntry::Object(first) = &p[0] else {
            panic!()
        };
        assert_eq!(first.identifier, Some(Loose::Str("a".into())));
        assert_eq!(first.marker.as_ref().map(Loose::kind), Some("a number"));
        assert_eq!(first.content, Some(Loose::Other("an array")));
        assert_eq!(first.enabled, Some(Loose::Null));
        assert!(matches!(p[1], PromptEntry::Other("a number")));
        assert_eq!(root["post_history"], "q");
        assert!(!root.contains_key("x"));
        let f: RawFile = serde_json::from_str(r#""just a string""#).unwrap();
        assert!(matches!(f, RawFile::NotObject("a string")));
    }
}
