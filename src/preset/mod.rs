//! Preset import (SPEC §6): Prompt Manager presets, legacy text-completion presets and legacy
//! post-history fields, validated whole before anything is returned.

mod audit;
mod compiled;
mod fields;
mod legacy;
pub mod outline;
mod raw;
pub mod switch;

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};
use thiserror::Error;

use crate::diagnostic::{Diagnostic, DiagnosticKind, excerpt};
use crate::limits::Limits;
use crate::passes::Scripts;
use crate::scripts::RegexScript;
use crate::settings::{Json, PresetSettings};
use fields::{At, Label};
use raw::{
    Loose, PromptEntry, Prompts, RawFile, RawOrderEntry, RawOrderItem, RawPromptOrder, raw_kind,
};
use serde_json::value::RawValue;

pub use compiled::CompiledPreset;

/// A preset file that cannot be imported. Nothing is half-imported.
#[derive(Debug, Error, Clone, PartialEq, Eq, strum::IntoStaticStr)]
#[non_exhaustive]
pub enum PresetError {
    /// The file is larger than [`Limits::preset_bytes`].
    #[error("preset is {size} bytes, over the limit of {limit} bytes")]
    TooLarge {
        /// Size of the file.
        size: usize,
        /// The limit.
        limit: usize,
    },
    /// The file is not UTF-8.
    #[error("preset is not valid UTF-8 (byte {offset})")]
    Utf8 {
        /// First invalid byte.
        offset: usize,
    },
    /// The file is not JSON.
    #[error("preset is not valid JSON at line {line} column {column}: {message}")]
    Json {
        /// 1-based line.
        line: usize,
        /// 1-based column.
        column: usize,
        /// What the JSON parser said.
        message: String,
    },
    /// Valid JSON that is no preset.
    #[error("not a preset: {0}")]
    NotAPreset(String),
    /// A prompt field of the wrong type or value.
    #[error("prompt {prompt}: field `{field}`: {problem}")]
    Field {
        /// The prompt's identifier (or `#index` when it has none).
        prompt: String,
        /// The field.
        field: String,
        /// What is wrong.
        problem: String,
    },
    /// Any other part of the file of the wrong shape.
    #[error("`{path}`: {problem}")]
    Shape {
        /// Where in the file (`prompt_order[0].order`).
        path: String,
        /// What is wrong.
        problem: String,
    },
}

impl PresetError {
    /// The variant's name (`"TooLarge"`, `"Utf8"`, `"Json"`, `"NotAPreset"`, `"Field"`,
    /// `"Shape"`): the `kind` the language bindings give their errors.
    ///
    /// ```
    /// let e = stpreset::Preset::from_json(b"[]").unwrap_err();
    /// assert_eq!(e.kind(), "NotAPreset");
    /// ```
    pub fn kind(&self) -> &'static str {
        self.into()
    }

    /// A part of the file with the wrong JSON type.
    fn shape(path: impl Into<String>, expected: &str, found: &str) -> PresetError {
        PresetError::Shape {
            path: path.into(),
            problem: format!("expected {expected}, found {found}"),
        }
    }
}

/// One prompt node of a preset, with SPEC §6 defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PresetNode {
    /// Unique identifier within the preset (`main`, `chatHistory`, a UUID, ...).
    pub identifier: String,
    /// Display name.
    pub name: String,
    /// `system` (default), `user`, `assistant`, or anything a preset wrote.
    pub role: String,
    /// Template text.
    pub content: String,
    /// A marker stands for a block the host builds; it has no text of its own.
    pub marker: bool,
    /// Whether the node takes part in a render.
    pub enabled: bool,
    /// 0: placed by the walk; 1: injected into chat history at `injection_depth`.
    pub injection_position: i32,
    /// How many history items from the end (0 = the last).
    pub injection_depth: i32,
    /// Ordering among injections at the same depth (ascending).
    pub injection_order: i32,
}

impl PresetNode {
    fn custom(identifier: String, content: String, enabled: bool) -> PresetNode {
        PresetNode {
            name: identifier.clone(),
            identifier,
            role: "system".into(),
            content,
            marker: false,
            enabled,
            injection_position: 0,
            injection_depth: 4,
            injection_order: 100,
        }
    }

    fn marker(identifier: &str) -> PresetNode {
        PresetNode {
            marker: true,
            ..PresetNode::custom(identifier.to_string(), String::new(), true)
        }
    }

    /// A depth node is a custom (non-marker) node injected into chat history.
    pub fn is_depth(&self) -> bool {
        !self.marker && self.injection_position == 1
    }

    /// Whether the content holds only comments, `{{trim}}` and whitespace (parses it).
    pub fn is_comment_only(&self) -> bool {
        crate::syntax::parse(self.content.as_str().into(), &Limits::default())
            .0
            .comment_only
    }

    /// Whether the node is a marker in the walk. `main` is the anchor either way (SPEC §10).
    pub fn is_marker(&self) -> bool {
        self.marker && self.identifier != "main"
    }
}

/// An imported preset: its nodes in walk order, import diagnostics, and the whole file.
///
/// ```
/// let p = stpreset::Preset::from_json(br#"{"prompts": [
///     {"identifier": "main", "content": "Be {{char}}."},
///     {"identifier": "chatHistory", "marker": true}
/// ]}"#).unwrap();
/// assert_eq!(p.nodes().len(), 2);
/// assert!(p.raw().get("prompts").is_some());
/// ```
#[derive(Debug, Clone)]
pub struct Preset {
    nodes: Vec<PresetNode>,
    diagnostics: Vec<Diagnostic>,
    settings: PresetSettings,
    /// `extensions.regex_scripts`, as read (SPEC §13.1).
    scripts: Vec<RegexScript>,
    /// The file as imported (valid UTF-8 JSON); parsed again only when asked for.
    raw: std::sync::Arc<[u8]>,
    /// The limits it was imported with: `compile` and `audit` parse with them.
    limits: Limits,
    /// The switches `set_enabled` / `set_enabled_all` made, in order: the SillyTavern layout
    /// reads its own prompt list from `raw` and applies them there (SPEC §17.1.2).
    toggles: Vec<(String, bool)>,
    /// Lone UTF-16 surrogates the file held, read as U+FFFD (the `LoneSurrogate` note; the
    /// store keeps the count, since `raw` holds the repaired text). Only the store reads it.
    #[cfg_attr(not(feature = "store"), allow(dead_code))]
    pub(crate) lone_surrogates: usize,
}

impl Preset {
    /// Imports a preset file with the default limits.
    pub fn from_json(bytes: &[u8]) -> Result<Preset, PresetError> {
        Preset::from_json_with(bytes, &Limits::default())
    }

    /// Imports a preset file, refusing files over `limits.preset_bytes`. [`Preset::compile`]
    /// and [`Preset::audit`] parse its nodes with the same limits.
    pub fn from_json_with(bytes: &[u8], limits: &Limits) -> Result<Preset, PresetError> {
        // Editors on Windows save JSON with a byte-order mark; it is not part of the JSON.
        let bytes = bytes
            .strip_prefix(crate::context::UTF8_BOM)
            .unwrap_or(bytes);
        let limit = limits.clamped().preset_bytes;
        if bytes.len() > limit {
            return Err(PresetError::TooLarge {
                size: bytes.len(),
                limit,
            });
        }
        // One UTF-8 check of the whole file (the standard library's, word at a time) is cheaper
        // than serde_json's check of every string it reads from bytes; lone surrogates are
        // replaced first (the repaired text is as long as the file).
        let (text, lone_surrogates) =
            crate::surrogates::json_text(bytes).map_err(|offset| PresetError::Utf8 { offset })?;
        let text = &*text;
        let file: RawFile = serde_json::from_str(text).map_err(|e| PresetError::Json {
            line: e.line(),
            column: e.column(),
            message: json_message(&e),
        })?;
        let (prompts, prompt_order, root, settings, extensions, marks) = match file {
            RawFile::Object {
                prompts,
                prompt_order,
                root,
                settings,
                extensions,
                marks,
            } => (prompts, prompt_order, root, settings, extensions, marks),
            RawFile::NotObject(kind) => {
                return Err(PresetError::NotAPreset(format!(
                    "the file is {kind}, not an object"
                )));
            }
        };
        let root = &root;
        let mut diagnostics = Vec::new();
        if lone_surrogates > 0 {
            diagnostics.push(Diagnostic::lone_surrogates("the preset", lone_surrogates));
        }
        let mut nodes = match prompts {
            Some(Prompts::Array(prompts)) if !prompts.is_empty() => {
                prompt_manager(prompt_order, prompts, &mut diagnostics)?
            }
            None | Some(Prompts::Array(_)) => legacy_or_none(root, &marks)?,
            Some(Prompts::Other(kind)) => {
                return Err(PresetError::shape("prompts", "an array", kind));
            }
        };
        legacy::post_history(root, &mut nodes)?;
        let (settings, settings_diagnostics) = read_settings(&settings);
        diagnostics.extend(settings_diagnostics);
        let (scripts, script_diagnostics) = Scripts::import(extensions);
        diagnostics.extend(script_diagnostics);
        Ok(Preset {
            nodes,
            diagnostics,
            settings,
            scripts,
            raw: text.as_bytes().into(),
            limits: limits.clone(),
            toggles: Vec::new(),
            lone_surrogates,
        })
    }

    /// A preset as the store keeps it: nodes already resolved, and the original file.
    #[cfg(feature = "store")]
    pub(crate) fn from_stored(
        nodes: Vec<PresetNode>,
        raw: Box<[u8]>,
        lone_surrogates: usize,
    ) -> Preset {
        let text = std::str::from_utf8(&raw).unwrap_or_default();
        let (settings, extensions) = raw::settings_only(text);
        let mut diagnostics = Vec::new();
        if lone_surrogates > 0 {
            diagnostics.push(Diagnostic::lone_surrogates("the preset", lone_surrogates));
        }
        let (settings, settings_diagnostics) = read_settings(&settings);
        diagnostics.extend(settings_diagnostics);
        let (scripts, script_diagnostics) = Scripts::import(extensions);
        diagnostics.extend(script_diagnostics);
        // The stored switches, as the differences from the file's own: the SillyTavern layout
        // reads its list from the file and applies them there (SPEC §17.1.2).
        let toggles = match Preset::from_json(&raw) {
            Ok(file) if file.nodes.len() == nodes.len() => file
                .nodes
                .iter()
                .zip(&nodes)
                .filter(|(a, b)| a.identifier == b.identifier && a.enabled != b.enabled)
                .map(|(_, b)| (b.identifier.clone(), b.enabled))
                .collect(),
            _ => Vec::new(),
        };
        Preset {
            nodes,
            diagnostics,
            settings,
            scripts,
            raw: raw.into(),
            limits: Limits::default(),
            toggles,
            lone_surrogates,
        }
    }

    /// The imported nodes, in walk order (depth nodes included).
    pub fn nodes(&self) -> &[PresetNode] {
        &self.nodes
    }

    /// Its nodes as the author arranged them for people switching them: sections from
    /// header names, tooltips, badges and exclusive groups from `{{// @… }}` directives
    /// ([`outline`](crate::outline)), in walk order, with the switches as they are now.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [
    ///     {"identifier": "h", "name": "=== Style ===", "content": ""},
    ///     {"identifier": "a", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}Be terse."},
    ///     {"identifier": "b", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}Be lush."}]}"#).unwrap();
    /// let o = p.outline();
    /// assert_eq!(o.sections[0].title, "Style");
    /// assert_eq!((o.sections[0].enabled, o.sections[0].total), (2, 2));
    /// assert_eq!(o.groups[0].members, ["a", "b"]);
    /// assert_eq!(o.nodes[1].section, ["Style"]);
    /// ```
    pub fn outline(&self) -> outline::Outline {
        outline::Outline::of(&self.nodes)
    }

    /// What switching these nodes would do under their author's constraints
    /// ([`switch`](crate::switch)), without switching anything: the store checks a toggle
    /// this way inside its transaction.
    ///
    /// ```
    /// use stpreset::switch::{Resolve, SwitchError};
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [
    ///     {"identifier": "a", "content": "{{// @mutual-exclusive-group len}}Be terse."},
    ///     {"identifier": "b", "content": "{{// @mutual-exclusive-group len}}Be lush.", "enabled": false}]}"#).unwrap();
    /// assert!(matches!(p.plan_switch(&[("b", true)], Resolve::Refuse), Err(SwitchError::Refused { .. })));
    /// let done = p.plan_switch(&[("b", true)], Resolve::Resolve).unwrap();
    /// assert_eq!(done.changes[1].identifier, "a");
    /// assert!(!done.changes[1].enabled);
    /// ```
    pub fn plan_switch(
        &self,
        changes: &[(&str, bool)],
        how: switch::Resolve,
    ) -> Result<switch::Switched, switch::SwitchError> {
        switch::plan(&self.nodes, changes, how)
    }

    /// Switches nodes under their author's constraints ([`plan_switch`](Self::plan_switch)),
    /// all or none; [`set_enabled_all`](Self::set_enabled_all) switches without checking.
    ///
    /// ```
    /// use stpreset::switch::Resolve;
    /// let mut p = stpreset::Preset::from_json(br#"{"prompts": [
    ///     {"identifier": "a", "content": "{{// @mutual-exclusive-group len}}Be terse."},
    ///     {"identifier": "b", "content": "{{// @mutual-exclusive-group len}}Be lush.", "enabled": false}]}"#).unwrap();
    /// assert!(p.switch(&[("b", true)], Resolve::Refuse).is_err());
    /// assert!(p.nodes()[0].enabled, "nothing switched");
    /// p.switch(&[("b", true)], Resolve::Resolve).unwrap();
    /// assert_eq!((p.nodes()[0].enabled, p.nodes()[1].enabled), (false, true));
    /// ```
    pub fn switch(
        &mut self,
        changes: &[(&str, bool)],
        how: switch::Resolve,
    ) -> Result<switch::Switched, switch::SwitchError> {
        let done = self.plan_switch(changes, how)?;
        self.set_enabled_all(
            done.changes
                .iter()
                .map(|c| (c.identifier.as_str(), c.enabled)),
        )
        .map_err(|id| switch::SwitchError::UnknownNode(id.to_string()))?;
        Ok(done)
    }

    /// Switches the nodes with this identifier on or off (before compiling); returns whether
    /// there was one.
    ///
    /// ```
    /// let mut p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"},
    ///     {"identifier": "nsfw", "content": "Spicy", "enabled": false}]}"#).unwrap();
    /// assert!(p.set_enabled("nsfw", true) && !p.set_enabled("nope", true));
    /// assert_eq!(p.compile().render(&stpreset::Context::default()).messages.len(), 2);
    /// ```
    pub fn set_enabled(&mut self, identifier: &str, enabled: bool) -> bool {
        let mut found = false;
        for n in self.nodes.iter_mut().filter(|n| n.identifier == identifier) {
            n.enabled = enabled;
            found = true;
        }
        if found {
            self.toggles.push((identifier.to_string(), enabled));
        }
        found
    }

    /// Switches many nodes at once: every node of each identifier on or off, through one index
    /// of the nodes (a [`set_enabled`](Self::set_enabled) call per toggle looks at every node,
    /// which for a toggle per node is quadratic). An identifier the preset does not have is
    /// returned, and then nothing has changed.
    ///
    /// ```
    /// let mut p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"},
    ///     {"identifier": "nsfw", "content": "Spicy", "enabled": false}]}"#).unwrap();
    /// assert_eq!(p.set_enabled_all([("nsfw", true), ("nope", false)]), Err("nope"));
    /// assert!(!p.nodes()[1].enabled);
    /// assert_eq!(p.set_enabled_all([("nsfw", true), ("main", false)]), Ok(()));
    /// assert_eq!((p.nodes()[0].enabled, p.nodes()[1].enabled), (false, true));
    /// ```
    pub fn set_enabled_all<'a>(
        &mut self,
        toggles: impl IntoIterator<Item = (&'a str, bool)>,
    ) -> Result<(), &'a str> {
        let mut by_id: std::collections::HashMap<&str, Vec<usize>> =
            std::collections::HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            by_id.entry(n.identifier.as_str()).or_default().push(i);
        }
        let mut changes = Vec::new();
        let mut switched = Vec::new();
        for (id, on) in toggles {
            let at = by_id.get(id).ok_or(id)?;
            changes.extend(at.iter().map(|&i| (i, on)));
            switched.push((id.to_string(), on));
        }
        for (i, on) in changes {
            self.nodes[i].enabled = on;
        }
        self.toggles.extend(switched);
        Ok(())
    }

    /// The switches made since the file was read, in order: the `set_enabled` calls, and for a
    /// preset the store gives back, where its stored states differ from its file's.
    ///
    /// ```
    /// let mut p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// p.set_enabled("main", false);
    /// assert_eq!(p.toggles(), [("main".to_string(), false)]);
    /// ```
    pub fn toggles(&self) -> &[(String, bool)] {
        &self.toggles
    }

    /// Mutable access to the nodes (to toggle `enabled`, say) before compiling.
    pub fn nodes_mut(&mut self) -> &mut [PresetNode] {
        &mut self.nodes
    }

    /// Import diagnostics (`UnknownOrderReference`, `DuplicateIdentifier`, then
    /// `PresetSettingIgnored` in settings table order).
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The preset's settings (SPEC §14): sampling, reasoning, context size, formats and
    /// new-chat prompts, as the file gives them after SillyTavern's migration.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"temperature": 0.9, "openai_max_tokens": 300,
    ///     "prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// assert_eq!((p.settings().temperature, p.settings().openai_max_tokens), (Some(0.9), Some(300)));
    /// ```
    pub fn settings(&self) -> &PresetSettings {
        &self.settings
    }

    /// Mutable access to the settings (to change a value before compiling).
    pub fn settings_mut(&mut self) -> &mut PresetSettings {
        &mut self.settings
    }

    /// The whole file as parsed, including fields stpreset does not use (sampler settings,
    /// ...). Parsed on each call: importing does not keep a second copy of the tree.
    pub fn raw(&self) -> Value {
        // The bytes are valid JSON; `Null` only for a file nested deeper than serde_json's
        // recursion limit in a part the importer skips (it never builds a tree of those).
        serde_json::from_slice(&self.raw).unwrap_or(Value::Null)
    }

    /// The preset's regex scripts as imported (SPEC §13.1), valid entries only, each with its
    /// position in the file's list.
    pub fn regex_scripts(&self) -> &[RegexScript] {
        &self.scripts
    }

    /// The file's text exactly as imported.
    pub fn raw_json(&self) -> &str {
        std::str::from_utf8(&self.raw).unwrap_or_default()
    }
}

/// Longest prompt identifier accepted. Identifiers are repeated in every diagnostic and
/// message source of their node, so an unbounded one would multiply the output; real presets
/// use UUIDs and short names (58 bytes at most in the corpus).
pub(crate) const MAX_IDENTIFIER_BYTES: usize = 256;

/// SPEC §14.1 over the settings keys the reader kept.
fn read_settings(raw: &[(String, &RawValue)]) -> (PresetSettings, Vec<Diagnostic>) {
    let entries: Vec<(&str, Json<'_>)> = raw
        .iter()
        .map(|(k, v)| (k.as_str(), Json::from_raw(v)))
        .collect();
    crate::settings::import(&entries)
}

fn json_message(e: &serde_json::Error) -> String {
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

fn legacy_or_none(
    root: &Map<String, Value>,
    marks: &(Vec<&'static str>, usize),
) -> Result<Vec<PresetNode>, PresetError> {
    match legacy::story(root)? {
        Some(nodes) => Ok(nodes),
        None => Err(PresetError::NotAPreset(match other_kind(marks) {
            Some(kind) => format!(
                "this looks like {kind}; stpreset renders chat-completion presets (export one \
                 from SillyTavern's AI Response Configuration panel with a Chat Completion API \
                 selected: it has a `prompts` array)"
            ),
            None => "no non-empty `prompts` array and no legacy `context.story_string` with \
                     `sysprompt.content`"
                .into(),
        })),
    }
}

/// The other SillyTavern file a preset's reader was given (issue 39), by the keys only that
/// kind has: bots load the wrong export often, and "no `prompts` array" does not say what to
/// export instead.
fn other_kind((keys, count): &(Vec<&'static str>, usize)) -> Option<&'static str> {
    let has = |want: &[&str]| want.iter().all(|k| keys.contains(k));
    let any = |want: &[&str]| want.iter().any(|k| keys.contains(k));
    if has(&["instruct", "context"]) {
        Some("a SillyTavern master export (instruct and context templates) without a system prompt")
    } else if has(&["input_sequence", "output_sequence"]) {
        Some("a SillyTavern instruct template (text completion)")
    } else if has(&["story_string"]) || has(&["example_separator", "chat_start"]) {
        Some("a SillyTavern context template (text completion)")
    } else if any(&[
        "rep_pen",
        "rep_pen_range",
        "typical_p",
        "mirostat_mode",
        "tfs",
        "sampler_priority",
    ]) {
        Some("a SillyTavern text-completion sampler preset")
    } else if has(&["prefix", "suffix", "separator"]) {
        Some("a SillyTavern reasoning template")
    } else if any(&[
        "chat_completion_source",
        "openai_model",
        "openai_max_context",
    ]) {
        Some("chat-completion settings whose `prompts` list is missing or empty")
    } else if has(&["name", "content"]) && *count <= 3 {
        Some("a SillyTavern system prompt")
    } else {
        None
    }
}

fn import_diag(kind: DiagnosticKind, message: String) -> Diagnostic {
    Diagnostic::new(kind, None, message)
}

/// Reads and validates every prompt, then orders them by the chosen order list.
fn prompt_manager(
    prompt_order: Option<RawPromptOrder<'_>>,
    prompts: Vec<PromptEntry>,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<PresetNode>, PresetError> {
    // Every prompt is validated, also those the order list does not reference.
    let mut all = Vec::with_capacity(prompts.len());
    for (i, p) in prompts.into_iter().enumerate() {
        let p = match p {
            PromptEntry::Object(p) => *p,
            PromptEntry::Other(found) => {
                return Err(PresetError::shape(
                    format!("prompts[{i}]"),
                    "an object",
                    found,
                ));
            }
        };
        let id = At {
            prompt: Label::Index(i),
        }
        .string(p.identifier, "identifier")?;
        if let Some(id) = &id
            && id.len() > MAX_IDENTIFIER_BYTES
        {
            return Err(PresetError::Field {
                prompt: Label::Index(i).to_string(),
                field: "identifier".into(),
                problem: format!(
                    "{} bytes long, over the limit of {MAX_IDENTIFIER_BYTES} bytes",
                    id.len()
                ),
            });
        }
        let named = id.is_some();
        let identifier = id.unwrap_or_else(|| format!("prompt_{i}"));
        let at = At {
            prompt: if named {
                Label::Named(&identifier)
            } else {
                Label::Index(i)
            },
        };
        let marker = at.boolean(p.marker, "marker")?.unwrap_or(false);
        let position = at
            .integer(p.injection_position, "injection_position")?
            .unwrap_or(0);
        if position != 0 && position != 1 {
            return Err(PresetError::Field {
                prompt: at.prompt.to_string(),
                field: "injection_position".into(),
                problem: format!("must be 0 or 1, found {position}"),
            });
        }
        let node = PresetNode {
            name: at
                .string(p.name, "name")?
                .unwrap_or_else(|| identifier.clone()),
            role: at
                .string(p.role, "role")?
                .unwrap_or_else(|| "system".into()),
            content: at.string(p.content, "content")?.unwrap_or_default(),
            marker,
            enabled: at.boolean(p.enabled, "enabled")?.unwrap_or(true),
            injection_position: position,
            injection_depth: at
                .integer(p.injection_depth, "injection_depth")?
                .unwrap_or(4),
            injection_order: at
                .integer(p.injection_order, "injection_order")?
                .unwrap_or(100),
            identifier,
        };
        all.push(node);
    }
    // The first prompt with an identifier wins (NemoEngine 5.9.1 has two `main`).
    // Identifiers come from the file: randomly keyed SipHash, so no chosen collisions. The maps
    // borrow the identifiers; nodes move out once the picks are known.
    let mut first: HashMap<&str, usize> = HashMap::with_capacity(all.len());
    let mut unique = vec![false; all.len()];
    for (i, node) in all.iter().enumerate() {
        if let std::collections::hash_map::Entry::Vacant(e) = first.entry(&node.identifier) {
            e.insert(i);
            unique[i] = true;
        } else {
            diags.push(import_diag(
                DiagnosticKind::DuplicateIdentifier,
                format!(
                    "prompt identifier `{}` appears more than once: the first prompt is used",
                    node.identifier
                ),
            ));
        }
    }
    let Some(order) = order_list(prompt_order)? else {
        drop(first);
        return Ok(all
            .into_iter()
            .zip(unique)
            .filter_map(|(n, u)| u.then_some(n))
            .collect());
    };
    let mut used = HashSet::with_capacity(order.len());
    let mut picks = Vec::with_capacity(order.len());
    for (identifier, enabled) in &order {
        if !used.insert(identifier.as_str()) {
            diags.push(import_diag(
                DiagnosticKind::DuplicateIdentifier,
                format!(
                    "`{}` is listed twice in the order list: the first entry is used",
                    excerpt(identifier)
                ),
            ));
            continue;
        }
        match first.get(identifier.as_str()) {
            Some(&i) => picks.push((i, *enabled)),
            None => diags.push(import_diag(
                DiagnosticKind::UnknownOrderReference,
                format!(
                    "the order list names `{}`, which no prompt has: skipped",
                    excerpt(identifier)
                ),
            )),
        }
    }
    drop(first);
    // Each index is picked at most once (`used`), so every `take` finds its node.
    let mut slots: Vec<Option<PresetNode>> = all.into_iter().map(Some).collect();
    Ok(picks
        .into_iter()
        .filter_map(|(i, enabled)| {
            let mut node = slots[i].take()?;
            node.enabled = enabled;
            Some(node)
        })
        .collect())
}

/// The order list of `character_id` 100001, else 100000: `(identifier, enabled)` pairs.
/// `None` when neither has an array `order`. Every entry's shape is checked; only the chosen
/// list's items are read.
fn order_list(
    prompt_order: Option<RawPromptOrder<'_>>,
) -> Result<Option<Vec<(String, bool)>>, PresetError> {
    // serde_json validated the whole file, so re-reading a part of it cannot fail; an error
    // here would still be reported, never unwrapped.
    let reread = |e: serde_json::Error| PresetError::NotAPreset(format!("prompt_order: {e}"));
    let entries = match prompt_order {
        None | Some(RawPromptOrder::Other("null")) => return Ok(None),
        Some(RawPromptOrder::Array(entries)) => entries,
        Some(RawPromptOrder::Other(other)) => {
            return Err(PresetError::shape("prompt_order", "an array", other));
        }
    };
    let mut lists: [Option<(usize, &RawValue)>; 2] = [None, None];
    for (i, e) in entries.iter().enumerate() {
        let (character_id, order) = match e {
            RawOrderEntry::Object {
                character_id,
                order,
            } => (character_id, order),
            RawOrderEntry::Other(found) => {
                return Err(PresetError::shape(
                    format!("prompt_order[{i}]"),
                    "an object",
                    found,
                ));
            }
        };
        // As `serde_json::Value::as_i64` would read it: integers only (no `100001.0`), and
        // strings that parse as one after trimming.
        let id = match character_id.map(|r| (raw_kind(r), r)) {
            Some(("a number", r)) => r.get().parse::<i64>().ok(),
            Some(("a string", r)) => serde_json::from_str::<String>(r.get())
                .map_err(reread)?
                .trim()
                .parse::<i64>()
                .ok(),
            _ => None,
        };
        let order = match order.map(|r| (raw_kind(r), r)) {
            None | Some(("null", _)) => None,
            Some(("an array", r)) => Some(r),
            Some((other, _)) => {
                return Err(PresetError::shape(
                    format!("prompt_order[{i}].order"),
                    "an array",
                    other,
                ));
            }
        };
        let slot = match id {
            Some(100001) => 0,
            Some(100000) => 1,
            _ => continue,
        };
        if let (Some(order), None) = (order, lists[slot]) {
            lists[slot] = Some((i, order));
        }
    }
    let Some((i, order)) = lists[0].or(lists[1]) else {
        return Ok(None);
    };
    let items: Vec<RawOrderItem> = serde_json::from_str(order.get()).map_err(reread)?;
    let mut out = Vec::with_capacity(items.len());
    for (j, item) in items.into_iter().enumerate() {
        let path = || format!("prompt_order[{i}].order[{j}]");
        let (identifier, enabled) = match item {
            RawOrderItem::Object {
                identifier,
                enabled,
            } => (identifier, enabled),
            RawOrderItem::Other(found) => {
                return Err(PresetError::shape(path(), "an object", found));
            }
        };
        let identifier = match identifier {
            Some(Loose::Str(s)) => s,
            other => {
                return Err(PresetError::shape(
                    format!("{}.identifier", path()),
                    "a string",
                    other.as_ref().map_or("nothing", Loose::kind),
                ));
            }
        };
        let enabled = match enabled {
            None | Some(Loose::Null) => true,
            Some(Loose::Bool(b)) => b,
            Some(other) => {
                return Err(PresetError::shape(
                    format!("{}.enabled", path()),
                    "true or false",
                    other.kind(),
                ));
            }
        };
        out.push((identifier, enabled));
    }
    Ok(Some(out))
}
