//! Checking one setting's value (SPEC §14.1): its kind (number, integer, bool, string, enum),
//! numeric strings, then its range. Values are read from the JSON text as written, so numbers
//! beyond f64 (`1e400`) or i64 are judged, never refused by the JSON reader.

use std::borrow::Cow;

use serde_json::Value;
use serde_json::value::RawValue;

use super::{PresetSettings, TABLE};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::number::{integer_text, json_integer, parse_number};
use crate::provider::{PostProcessing, ReasoningEffort, Verbosity};

/// A JSON value as a setting sees it: scalars as written, containers only named.
#[derive(Debug, Clone)]
pub(crate) enum Json<'a> {
    Null,
    Bool(bool),
    /// A number's lexeme.
    Number(Cow<'a, str>),
    Str(Cow<'a, str>),
    /// An array or an object.
    Other,
}

impl<'a> Json<'a> {
    pub fn from_value(v: &'a Value) -> Json<'a> {
        match v {
            Value::Null => Json::Null,
            Value::Bool(b) => Json::Bool(*b),
            Value::Number(n) => Json::Number(Cow::Owned(n.to_string())),
            Value::String(s) => Json::Str(Cow::Borrowed(s)),
            _ => Json::Other,
        }
    }

    /// From the raw text of a value serde_json has validated.
    pub fn from_raw(raw: &'a RawValue) -> Json<'a> {
        let text = raw.get();
        match text.as_bytes().first() {
            Some(b'n') => Json::Null,
            Some(b't') => Json::Bool(true),
            Some(b'f') => Json::Bool(false),
            // A validated string always reads back; `Other` would only make it "not a string".
            Some(b'"') => serde_json::from_str::<Cow<'a, str>>(text)
                .map(Json::Str)
                .unwrap_or(Json::Other),
            Some(b'[' | b'{') => Json::Other,
            _ => Json::Number(Cow::Borrowed(text)),
        }
    }
}

/// What a setting accepts. Ranges are inclusive and carry their text as the table writes it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Kind {
    Number(f64, f64, &'static str),
    Integer(i64, i64, &'static str),
    Bool,
    Str,
    Effort,
    Verbosity,
    Post,
}

/// A checked value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Val {
    Num(f64),
    Int(i64),
    Bool(bool),
    Str(String),
    Effort(ReasoningEffort),
    Verbosity(Verbosity),
    Post(PostProcessing),
}

/// `custom_prompt_post_processing` values, as presets write them, with their modes.
const POST: [(&str, PostProcessing); 8] = [
    ("", PostProcessing::None),
    ("merge", PostProcessing::Merge),
    ("merge_tools", PostProcessing::Merge),
    ("semi", PostProcessing::Semi),
    ("semi_tools", PostProcessing::Semi),
    ("strict", PostProcessing::Strict),
    ("strict_tools", PostProcessing::Strict),
    ("single", PostProcessing::Single),
];

fn one_of(values: impl IntoIterator<Item = &'static str>) -> String {
    let shown: Vec<&str> = values
        .into_iter()
        .map(|v| if v.is_empty() { "\"\"" } else { v })
        .collect();
    format!("expected one of {}", shown.join(", "))
}

impl Kind {
    /// Checks `v`; `Err` is the reason it is ignored (SPEC §14.1's wording).
    pub fn read(&self, v: &Json<'_>) -> Result<Val, String> {
        let range = |ok: bool, text: &str| {
            if ok {
                Ok(())
            } else {
                Err(format!("out of range {text}"))
            }
        };
        match (self, v) {
            (Kind::Number(lo, hi, text), v) => {
                let n = match v {
                    Json::Number(lexeme) => lexeme.parse::<f64>().ok(),
                    Json::Str(s) => parse_number(s).map(|n| n.as_f64()),
                    _ => None,
                }
                .ok_or("expected a number")?;
                range((*lo..=*hi).contains(&n), text)?;
                // `-0` is sent as 0, as SPEC §3.2 prints it.
                Ok(Val::Num(n + 0.0))
            }
            (Kind::Integer(lo, hi, text), v) => {
                let n = match v {
                    Json::Number(lexeme) => json_integer(lexeme),
                    Json::Str(s) => integer_text(s.trim()),
                    _ => None,
                }
                .ok_or("expected an integer")?;
                range((*lo..=*hi).contains(&n), text)?;
                Ok(Val::Int(n))
            }
            (Kind::Bool, Json::Bool(b)) => Ok(Val::Bool(*b)),
            (Kind::Bool, _) => Err("expected true or false".into()),
            (Kind::Str, Json::Str(s)) => Ok(Val::Str(s.to_string())),
            (Kind::Str, _) => Err("expected a string".into()),
            (Kind::Effort, v) => as_str(v)
                .and_then(ReasoningEffort::parse)
                .map(Val::Effort)
                .ok_or_else(|| one_of(ReasoningEffort::NAMES)),
            (Kind::Verbosity, v) => as_str(v)
                .and_then(Verbosity::parse)
                .map(Val::Verbosity)
                .ok_or_else(|| one_of(Verbosity::NAMES)),
            (Kind::Post, v) => as_str(v)
                .and_then(|s| POST.iter().find(|(name, _)| *name == s))
                .map(|(_, mode)| Val::Post(*mode))
                .ok_or_else(|| one_of(POST.map(|(name, _)| name))),
        }
    }
}

fn as_str<'a>(v: &'a Json<'_>) -> Option<&'a str> {
    match v {
        Json::Str(s) => Some(s),
        _ => None,
    }
}

/// A field type of [`PresetSettings`].
pub(crate) trait Typed: Sized {
    fn from_val(v: Val) -> Option<Self>;
    fn to_json(&self) -> Value;
}

macro_rules! typed {
    ($ty:ty, $variant:ident, $json:expr) => {
        impl Typed for $ty {
            fn from_val(v: Val) -> Option<Self> {
                match v {
                    Val::$variant(x) => Some(x),
                    _ => None,
                }
            }
            fn to_json(&self) -> Value {
                let f: fn(&$ty) -> Value = $json;
                f(self)
            }
        }
    };
}

typed!(f64, Num, |v| Value::from(*v));
typed!(i64, Int, |v| Value::from(*v));
typed!(bool, Bool, |v| Value::from(*v));
typed!(String, Str, |v| Value::from(v.as_str()));
typed!(ReasoningEffort, Effort, |v| Value::from(v.as_str()));
typed!(Verbosity, Verbosity, |v| Value::from(v.as_str()));
// `none` is written as presets write it: the empty string.
typed!(PostProcessing, Post, |v| Value::from(match v {
    PostProcessing::None => "",
    m => m.as_str(),
}));

/// SPEC §14.1 over a preset root's entries (the last of duplicate keys wins): SillyTavern's
/// migration, then each key of the table in order.
pub(crate) fn import(entries: &[(&str, Json<'_>)]) -> (PresetSettings, Vec<Diagnostic>) {
    let get = |key: &str| {
        entries
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    };
    let is_true = |key: &str| matches!(get(key), Some(Json::Bool(true)));
    let mut settings = PresetSettings::default();
    let mut diagnostics = Vec::new();
    for (key, kind) in TABLE {
        let migrated = match *key {
            "use_sysprompt"
                if is_true("claude_use_sysprompt") || is_true("use_makersuite_sysprompt") =>
            {
                Some(Val::Bool(true))
            }
            "names_behavior" if is_true("names_in_completion") => Some(Val::Int(1)),
            "custom_prompt_post_processing" if matches!(get(key), Some(Json::Str(s)) if s == "claude") => {
                Some(Val::Post(PostProcessing::Merge))
            }
            _ => None,
        };
        let value = match (migrated, get(key)) {
            (Some(v), _) => Some(v),
            (None, None | Some(Json::Null)) => None,
            (None, Some(v)) => match kind.read(v) {
                Ok(v) => Some(v),
                Err(reason) => {
                    diagnostics.push(Diagnostic::new(
                        DiagnosticKind::PresetSettingIgnored,
                        None,
                        format!("preset setting {key} ignored: {reason}"),
                    ));
                    None
                }
            },
        };
        settings.put(key, value);
    }
    (settings, diagnostics)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(kind: Kind, raw: &str) -> Result<Val, String> {
        let raw: Box<RawValue> = serde_json::from_str(raw).unwrap();
        kind.read(&Json::from_raw(&raw))
    }

    #[test]
    fn numbers_and_integers_from_text() {
        let temp = Kind::Number(0.0, 2.0, "0..=2");
        assert_eq!(check(temp, "0.7"), Ok(Val::Num(0.7)));
        assert_eq!(check(temp, "\" 0.7 \""), Ok(Val::Num(0.7)));
        assert_eq!(check(temp, "\"\\u2003 1\\n\""), Ok(Val::Num(1.0)));
        assert_eq!(check(temp, "\"7e-1\"").unwrap_err(), "expected a number");
        assert_eq!(check(temp, "1e400").unwrap_err(), "out of range 0..=2");
        // `-0` is 0, sign and all (it would be written `-0.0`).
        let Ok(Val::Num(zero)) = check(temp, "-0") else {
            panic!("-0 is a number")
        };
        assert!(zero.is_sign_positive());
        assert_eq!(check(temp, "true").unwrap_err(), "expected a number");
        let tokens = Kind::Integer(1, 2_000_000, "1..=2000000");
        assert_eq!(check(tokens, "\"  2048 \""), Ok(Val::Int(2048)));
        assert_eq!(check(tokens, "2048.0"), Ok(Val::Int(2048)));
        assert_eq!(check(tokens, "1e3"), Ok(Val::Int(1000)));
        assert_eq!(check(tokens, "\"1e3\"").unwrap_err(), "expected an integer");
        assert_eq!(check(tokens, "2.5").unwrap_err(), "expected an integer");
        assert_eq!(
            check(tokens, "1e400").unwrap_err(),
            "out of range 1..=2000000"
        );
        assert_eq!(
            check(tokens, "\"-99999999999999999999999\"").unwrap_err(),
            "out of range 1..=2000000"
        );
        let seed = Kind::Integer(-1, 2_147_483_647, "-1..=2147483647");
        assert_eq!(
            check(seed, "1e12").unwrap_err(),
            "out of range -1..=2147483647"
        );
        assert_eq!(check(seed, "2147483647"), Ok(Val::Int(2_147_483_647)));
    }

    #[test]
    fn enums_name_their_values() {
        assert_eq!(
            check(Kind::Post, "\"claude\"").unwrap_err(),
            "expected one of \"\", merge, merge_tools, semi, semi_tools, strict, strict_tools, single"
        );
        assert_eq!(
            check(Kind::Post, "\"\""),
            Ok(Val::Post(PostProcessing::None))
        );
        assert_eq!(
            check(Kind::Effort, "\"High\"").unwrap_err(),
            "expected one of auto, min, low, medium, high, max"
        );
        assert_eq!(
            check(Kind::Str, "[\"{0}\"]").unwrap_err(),
            "expected a string"
        );
        assert_eq!(
            check(Kind::Bool, "\"false\"").unwrap_err(),
            "expected true or false"
        );
    }

    #[test]
    fn migration_and_order() {
        let raw = |s: &'static str| {
            Json::from_raw(Box::leak(serde_json::from_str::<Box<RawValue>>(s).unwrap()))
        };
        let entries = [
            ("use_sysprompt", raw("\"false\"")),
            ("use_makersuite_sysprompt", raw("true")),
            ("names_in_completion", raw("true")),
            ("custom_prompt_post_processing", raw("\"claude\"")),
            ("temperature", raw("9")),
            ("temperature", raw("1")),
            ("stream_openai", raw("1")),
        ];
        let (s, d) = import(&entries);
        assert_eq!(s.use_sysprompt, Some(true));
        assert_eq!(s.names_behavior, Some(1));
        assert_eq!(s.custom_prompt_post_processing, Some(PostProcessing::Merge));
        assert_eq!(s.temperature, Some(1.0));
        let messages: Vec<&str> = d.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            ["preset setting stream_openai ignored: expected true or false"]
        );
    }
}
