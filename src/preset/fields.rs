//! Typed reads of preset JSON fields (SPEC §6 "Node fields"): strings, booleans and the
//! integer rules, each failing with an error that names the prompt and the field.

use serde_json::Value;

use super::PresetError;
use super::raw::Loose;
use crate::number::{integer_text, json_integer};

/// Where a field sits, for error messages: a prompt (by identifier or index) or a path.
pub(super) struct At<'a> {
    pub prompt: Label<'a>,
}

/// A prompt as messages name it: its identifier, or `#index` when it has none. Written out
/// only when a message needs it (import reads every prompt; few have errors).
#[derive(Clone, Copy)]
pub(super) enum Label<'a> {
    Named(&'a str),
    Index(usize),
}

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Named(id) => f.write_str(id),
            Label::Index(i) => write!(f, "#{i}"),
        }
    }
}

impl At<'_> {
    fn err(&self, field: &str, problem: impl Into<String>) -> PresetError {
        PresetError::Field {
            prompt: self.prompt.to_string(),
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    /// A string field; `null` or missing gives `None`.
    pub fn string(&self, v: Option<Loose>, field: &str) -> Result<Option<String>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Str(s)) => Ok(Some(s)),
            Some(other) => {
                Err(self.err(field, format!("expected a string, found {}", other.kind())))
            }
        }
    }

    /// A boolean field; `null` or missing gives `None`.
    pub fn boolean(&self, v: Option<Loose>, field: &str) -> Result<Option<bool>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.err(
                field,
                format!("expected true or false, found {}", other.kind()),
            )),
        }
    }

    /// An integer field: a JSON number with no fractional part, or a string of an optional sign
    /// and decimal digits with optional surrounding spaces; clamped to i32.
    pub fn integer(&self, v: Option<Loose>, field: &str) -> Result<Option<i32>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Number(n)) => json_integer(&n)
                .map(|v| Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
                .ok_or_else(|| self.err(field, format!("expected a whole number, found {n}"))),
            Some(Loose::Str(s)) => match integer_text(s.trim_matches(' ')) {
                Some(v) => Ok(Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)),
                None => Err(self.err(field, format!("expected a whole number, found \"{s}\""))),
            },
            Some(other) => Err(self.err(
                field,
                format!("expected a whole number, found {}", other.kind()),
            )),
        }
    }
}

/// A short name for a JSON value's type, for messages.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn int(v: Value) -> Result<Option<i32>, PresetError> {
        let loose: Loose = serde_json::from_value(v).unwrap();
        At {
            prompt: Label::Named("p"),
        }
        .integer(Some(loose), "f")
    }

    #[test]
    fn integer_rules() {
        assert_eq!(int(json!(2)).unwrap(), Some(2));
        assert_eq!(int(json!(2.0)).unwrap(), Some(2));
        assert_eq!(int(json!(1e12)).unwrap(), Some(i32::MAX));
        assert_eq!(int(json!(-1e12)).unwrap(), Some(i32::MIN));
        assert_eq!(int(json!(" 90 ")).unwrap(), Some(90));
        assert_eq!(int(json!("-7")).unwrap(), Some(-7));
        assert_eq!(int(json!("+7")).unwrap(), Some(7));
        assert_eq!(
            int(json!("99999999999999999999999")).unwrap(),
            Some(i32::MAX)
        );
        assert_eq!(int(json!(u64::MAX)).unwrap(), Some(i32::MAX));
        assert_eq!(int(Value::Null).unwrap(), None);
        for bad in [
            json!(2.5),
            json!("4.5"),
            json!("1e3"),
            json!(true),
            json!("x"),
            json!(""),
            json!([1]),
            json!("- 1"),
        ] {
            let e = int(bad.clone()).unwrap_err().to_string();
            assert!(e.contains("prompt p") && e.contains("`f`"), "{bad}: {e}");
        }
    }
}
