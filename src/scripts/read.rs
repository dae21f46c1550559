//! SPEC §13.1: reading `extensions.regex_scripts` leniently. Scripts never make an import fail;
//! an entry that cannot be read is ignored with one `RegexScriptInvalid`.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::diagnostic::{Diagnostic, DiagnosticKind};

/// Whose list a script comes from (issue 39): SillyTavern runs the global scripts, then the
/// preset's, then the character's (`getRegexScripts`), each source with its own permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ScriptSource {
    /// The host's own scripts (ST's global scripts): they always run.
    Global,
    /// The preset's `extensions.regex_scripts`.
    #[default]
    Preset,
    /// The character card's `extensions.regex_scripts` (ST's scoped scripts).
    Character,
}

impl ScriptSource {
    /// What diagnostics call the list: `regex script 2 "x"` is the preset's.
    fn owner(self) -> &'static str {
        match self {
            ScriptSource::Global => "global ",
            ScriptSource::Preset => "",
            ScriptSource::Character => "the card's ",
        }
    }
}

/// How a script's `findRegex` is expanded before it is read (SPEC §13.5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Substitute {
    /// Used as written.
    None,
    /// Expanded as a template.
    Raw,
    /// Expanded, each outermost macro's output escaped for a pattern.
    Escaped,
}

/// One imported regex script (SPEC §13.1), its fields as read.
///
/// ```
/// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}], "extensions": {"regex_scripts": [
///     {"scriptName": "strip", "findRegex": "/<plan>.*?<\\/plan>/g", "placement": [2], "promptOnly": true}
/// ]}}"#).unwrap();
/// let s = &p.regex_scripts()[0];
/// assert_eq!((s.name.as_str(), s.prompt_only, s.placement.as_slice()), ("strip", true, &[2][..]));
/// ```
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[non_exhaustive]
pub struct RegexScript {
    /// 0-based position in its source's list (diagnostics say `script`).
    pub position: usize,
    /// Whose list it is in.
    pub source: ScriptSource,
    /// `id`, when it is a string.
    pub id: String,
    /// `scriptName`, when it is a string.
    pub name: String,
    /// The pattern as written (`/body/flags` or a bare body).
    pub find_regex: String,
    /// The replacement template.
    pub replace_string: String,
    /// Strings removed from every captured value.
    pub trim_strings: Vec<String>,
    /// The integral placements (1 user input, 2 model output, 5 world info run here).
    pub placement: Vec<i64>,
    /// Never runs.
    pub disabled: bool,
    /// Runs only in the display pass.
    pub markdown_only: bool,
    /// Runs only in the prompt pass.
    pub prompt_only: bool,
    /// Also runs when a message is edited.
    pub run_on_edit: bool,
    /// How `find_regex` is expanded.
    pub substitute: Substitute,
    /// Skip at depths below this (a number ≥ −1).
    pub min_depth: Option<f64>,
    /// Skip at depths above this (a number ≥ 0).
    pub max_depth: Option<f64>,
}

impl RegexScript {
    /// `regex script N "NAME": `, the start of every diagnostic about it (SPEC §13.8).
    pub(crate) fn label(&self) -> String {
        label(self.source, self.position, &self.name)
    }

    /// Whether the script is one a pass can select at all: enabled with a pattern.
    pub(crate) fn live(&self) -> bool {
        !self.disabled && !self.find_regex.is_empty()
    }
}

pub(crate) fn label(source: ScriptSource, position: usize, name: &str) -> String {
    let name = crate::diagnostic::excerpt(name);
    format!(
        "{}regex script {} \"{name}\": ",
        source.owner(),
        position + 1
    )
}

/// Reads the list; returns the valid entries and one diagnostic per ignored one.
pub(crate) fn read(extensions: Option<&RawValue>) -> (Vec<RegexScript>, Vec<Diagnostic>) {
    let Some(raw) = extensions else {
        return (Vec::new(), Vec::new());
    };
    #[derive(serde::Deserialize)]
    struct Extensions<'a> {
        #[serde(borrow, default)]
        regex_scripts: Option<&'a RawValue>,
    }
    let list = match serde_json::from_str::<Extensions<'_>>(raw.get()) {
        Ok(Extensions {
            regex_scripts: Some(list),
        }) => list,
        _ => return (Vec::new(), Vec::new()),
    };
    read_list(list, ScriptSource::Preset)
}

/// Reads one source's list of scripts (a JSON list; `null` is none): the valid entries and
/// one diagnostic per ignored one.
pub(crate) fn read_list(
    list: &RawValue,
    source: ScriptSource,
) -> (Vec<RegexScript>, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    if list.get() == "null" {
        return (Vec::new(), diags);
    }
    let Ok(entries) = serde_json::from_str::<Vec<&RawValue>>(list.get()) else {
        let what = match source {
            ScriptSource::Global => "the global `regex_scripts`",
            ScriptSource::Preset => "`extensions.regex_scripts`",
            ScriptSource::Character => "the card's `extensions.regex_scripts`",
        };
        diags.push(invalid(
            source,
            None,
            "",
            &format!("{what} is not a list: no scripts"),
        ));
        return (Vec::new(), diags);
    };
    let mut scripts = Vec::with_capacity(entries.len());
    for (position, entry) in entries.into_iter().enumerate() {
        // An entry nested past serde_json's recursion limit is ignored like any other
        // unreadable entry.
        let value: Value = serde_json::from_str(entry.get()).unwrap_or(Value::Null);
        match entry_of(position, &value) {
            Ok(s) => scripts.push(RegexScript { source, ..s }),
            Err(why) => {
                let name = value
                    .get("scriptName")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                diags.push(invalid(source, Some(position), name, &why));
            }
        }
    }
    (scripts, diags)
}

fn invalid(source: ScriptSource, position: Option<usize>, name: &str, why: &str) -> Diagnostic {
    let head = position.map_or_else(|| "regex scripts: ".to_string(), |p| label(source, p, name));
    Diagnostic::new(
        DiagnosticKind::RegexScriptInvalid,
        None,
        format!("{head}{why}; the entry is ignored"),
    )
    .for_script(position)
}

fn entry_of(position: usize, v: &Value) -> Result<RegexScript, String> {
    let Value::Object(map) = v else {
        return Err("the entry is not an object".into());
    };
    let field = |k: &str| map.get(k).filter(|v| !v.is_null());
    let text = |k: &str| -> Result<String, String> {
        match field(k) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(_) => Err(format!("`{k}` is not a string")),
        }
    };
    let find_regex = text("findRegex")?;
    let replace_string = text("replaceString")?;
    let trim_strings = match field("trimStrings") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .map(|t| t.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or("`trimStrings` is not a list of strings")?,
        Some(_) => return Err("`trimStrings` is not a list of strings".into()),
    };
    let placement = match field("placement") {
        None => Vec::new(),
        Some(Value::Array(list)) => list
            .iter()
            .filter_map(Value::as_f64)
            .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
            .map(|f| f as i64)
            .collect(),
        Some(_) => return Err("`placement` is not a list".into()),
    };
    let plain = |k: &str| {
        map.get(k)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let flag = |k: &str| map.get(k).is_some_and(truthy);
    Ok(RegexScript {
        position,
        source: ScriptSource::Preset,
        id: plain("id"),
        name: plain("scriptName"),
        find_regex,
        replace_string,
        trim_strings,
        placement,
        disabled: flag("disabled"),
        markdown_only: flag("markdownOnly"),
        prompt_only: flag("promptOnly"),
        run_on_edit: flag("runOnEdit"),
        substitute: substitute(map.get("substituteRegex")),
        min_depth: depth(map.get("minDepth")),
        max_depth: depth(map.get("maxDepth")),
    })
}

/// JavaScript truthiness.
fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn substitute(v: Option<&Value>) -> Substitute {
    let n = match v {
        Some(Value::Bool(true)) => Some(1.0),
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) if !s.trim().is_empty() => number_text(s),
        _ => None,
    };
    match n {
        Some(1.0) => Substitute::Raw,
        Some(2.0) => Substitute::Escaped,
        _ => Substitute::None,
    }
}

fn depth(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        Value::String(s) if s.trim().is_empty() => Some(0.0),
        Value::String(s) => number_text(s),
        _ => None,
    }
}

/// "Reading as a number" (SPEC §13.1): trimmed, an optional sign, digits with an optional
/// fraction (`1.`, `.5`), as JavaScript's `Number` reads decimal text. Hex and exponents are
/// deliberately not numbers here (SPEC §13.9.9).
fn number_text(s: &str) -> Option<f64> {
    let t = s.trim_matches(|c: char| c.is_whitespace());
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (int, frac) = body.split_once('.').unwrap_or((body, ""));
    let digits = |d: &str| d.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !digits(int) || !digits(frac) {
        return None;
    }
    t.parse::<f64>().ok().filter(|f| f.is_finite())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(entry: &str) -> Result<RegexScript, String> {
        let raw = format!(r#"{{"regex_scripts": [{entry}]}}"#);
        let raw: Box<RawValue> = serde_json::from_str(&raw).unwrap();
        let (mut s, d) = read(Some(&raw));
        match s.pop() {
            Some(s) => Ok(s),
            None => Err(d[0].message.clone()),
        }
    }

    #[test]
    fn fields_read_as_the_table_says() {
        let s = one(
            r#"{"findRegex": "/a/", "placement": [2, 2.0, "1", 5.5], "disabled": "false",
            "substituteRegex": " 2 ", "minDepth": " 2.5 ", "maxDepth": "deep"}"#,
        )
        .unwrap();
        assert_eq!(s.placement, vec![2, 2]);
        assert!(s.disabled);
        assert_eq!(s.substitute, Substitute::Escaped);
        assert_eq!((s.min_depth, s.max_depth), (Some(2.5), None));
        let s = one(
            r#"{"findRegex": null, "minDepth": "", "maxDepth": true, "substituteRegex": true}"#,
        )
        .unwrap();
        assert_eq!(
            (s.find_regex.as_str(), s.min_depth, s.max_depth),
            ("", Some(0.0), Some(1.0))
        );
        assert_eq!(s.substitute, Substitute::Raw);
        for hex in [r#""0x5""#, r#""1e1""#, "[1]", "{}"] {
            assert_eq!(
                one(&format!(r#"{{"minDepth": {hex}}}"#)).unwrap().min_depth,
                None
            );
        }
        assert_eq!(number_text("1."), Some(1.0));
        assert_eq!(number_text(".5"), Some(0.5));
        assert_eq!(number_text("."), None);
    }

    #[test]
    fn bad_entries_are_named() {
        assert!(one("5").unwrap_err().contains("regex script 1"));
        assert!(
            one(r#"{"findRegex": 5}"#)
                .unwrap_err()
                .contains("findRegex")
        );
        assert!(
            one(r#"{"trimStrings": "a"}"#)
                .unwrap_err()
                .contains("trimStrings")
        );
        assert!(
            one(r#"{"trimStrings": [1]}"#)
                .unwrap_err()
                .contains("trimStrings")
        );
        assert!(
            one(r#"{"placement": 2}"#)
                .unwrap_err()
                .contains("placement")
        );
        let raw: Box<RawValue> = serde_json::from_str(r#"{"regex_scripts": {}}"#).unwrap();
        let (s, d) = read(Some(&raw));
        assert!(s.is_empty() && d.len() == 1 && d[0].script.is_none());
    }
}
