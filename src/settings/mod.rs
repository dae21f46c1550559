//! Preset settings (SPEC §14): the author's sampling, reasoning, context size, format and
//! new-chat settings, read from the preset file's root (§14.1), edited by the context's
//! `preset_settings` (§14.3), and resolved against the context into what a render and its
//! request use ([`resolve`]).
//!
//! The §14.2 table is written once, in the `settings!` invocation below: the typed struct,
//! the key list in table order and the readers all come from it, so a new setting is one line.

mod read;
pub(crate) mod resolve;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use crate::diagnostic::Diagnostic;
use crate::provider::{PostProcessing, ReasoningEffort, Verbosity};
use read::Typed;
pub(crate) use read::{Json, Kind, Val, import};
pub use resolve::EffectiveOptions;

macro_rules! settings {
    ($($(#[doc = $doc:literal])* $key:ident: $ty:ty = $kind:expr;)*) => {
        /// A preset's settings (SPEC §14.2), one `Option` per key: `None` when the file does not
        /// have it, has `null`, or has a value that was ignored (with a `PresetSettingIgnored`
        /// warning). Numbers given as strings in the file are read as the numbers they denote.
        ///
        /// ```
        /// let p = stpreset::Preset::from_json(br#"{"temperature": " 0.7 ", "openai_max_context": "8192",
        ///     "top_k": 2.5, "prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
        /// assert_eq!(p.settings().temperature, Some(0.7));
        /// assert_eq!(p.settings().openai_max_context, Some(8192));
        /// assert_eq!(p.settings().top_k, None);
        /// assert_eq!(p.diagnostics()[0].message, "preset setting top_k ignored: expected an integer");
        /// ```
        #[derive(Debug, Clone, Default, PartialEq)]
        #[non_exhaustive]
        pub struct PresetSettings {
            $($(#[doc = $doc])* pub $key: Option<$ty>,)*
        }

        /// Every setting's key and kind, in the §14.2 table's order.
        pub(crate) const TABLE: &[(&str, Kind)] = &[$((stringify!($key), $kind),)*];

        impl PresetSettings {
            /// Sets (or, with `None`, clears) the setting `key`; false for an unknown key.
            fn put(&mut self, key: &str, value: Option<Val>) -> bool {
                match key {
                    $(stringify!($key) => self.$key = value.and_then(Typed::from_val),)*
                    _ => return false,
                }
                true
            }

            /// The present settings as JSON values, in table order.
            fn entries(&self) -> Vec<(&'static str, Value)> {
                let mut out = Vec::new();
                $(if let Some(v) = &self.$key {
                    out.push((stringify!($key), v.to_json()));
                })*
                out
            }
        }
    };
}

settings! {
    /// Sampling temperature, 0..=2 (capped per model when sent).
    temperature: f64 = Kind::Number(0.0, 2.0, "0..=2");
    /// Nucleus sampling, 0..=1.
    top_p: f64 = Kind::Number(0.0, 1.0, "0..=1");
    /// Top-k sampling, 0..=500 (Anthropic, Gemini).
    top_k: i64 = Kind::Integer(0, 500, "0..=500");
    /// OpenAI frequency penalty, -2..=2.
    frequency_penalty: f64 = Kind::Number(-2.0, 2.0, "-2..=2");
    /// OpenAI presence penalty, -2..=2.
    presence_penalty: f64 = Kind::Number(-2.0, 2.0, "-2..=2");
    /// Top-a sampling (not sent to the three shapes).
    top_a: f64 = Kind::Number(0.0, 1.0, "0..=1");
    /// Min-p sampling (not sent to the three shapes).
    min_p: f64 = Kind::Number(0.0, 1.0, "0..=1");
    /// Repetition penalty (not sent to the three shapes).
    repetition_penalty: f64 = Kind::Number(1.0, 2.0, "1..=2");
    /// The response's maximum tokens; also the budget's reserve (SPEC §14.5).
    openai_max_tokens: i64 = Kind::Integer(1, 2_000_000, "1..=2000000");
    /// The context window the author set: the default history budget (SPEC §14.5).
    openai_max_context: i64 = Kind::Integer(512, 2_000_000, "512..=2000000");
    /// SillyTavern UI only (not applied).
    max_context_unlocked: bool = Kind::Bool;
    /// The provider's sampling seed (-1: none).
    seed: i64 = Kind::Integer(-1, 2_147_483_647, "-1..=2147483647");
    /// Choices per request (host-only: not applied from the preset).
    n: i64 = Kind::Integer(1, 128, "1..=128");
    /// Streaming (host-only: not applied from the preset).
    stream_openai: bool = Kind::Bool;
    /// Reasoning effort.
    reasoning_effort: ReasoningEffort = Kind::Effort;
    /// Output verbosity.
    verbosity: Verbosity = Kind::Verbosity;
    /// Show the model's thoughts (host-only: not applied from the preset).
    show_thoughts: bool = Kind::Bool;
    /// Provider web search tools (not applied).
    enable_web_search: bool = Kind::Bool;
    /// Function calling (not applied).
    function_calling: bool = Kind::Bool;
    /// A logit-bias list kept in SillyTavern's user settings (not applied).
    bias_preset_selected: String = Kind::Str;
    /// Use the provider's system prompt field (after SillyTavern's migration).
    use_sysprompt: bool = Kind::Bool;
    /// Squash consecutive system messages.
    squash_system_messages: bool = Kind::Bool;
    /// Prompt post-processing (`""` is none; `*_tools` are their base mode).
    custom_prompt_post_processing: PostProcessing = Kind::Post;
    /// Anthropic prefill, rendered as a template.
    assistant_prefill: String = Kind::Str;
    /// Impersonation prefill (not applied).
    assistant_impersonation: String = Kind::Str;
    /// History names (not applied: the host writes names).
    names_behavior: i64 = Kind::Integer(-1, 2, "-1..=2");
    /// Wraps the personality (`{{personality}}`).
    personality_format: String = Kind::Str;
    /// Wraps the scenario (`{{scenario}}`).
    scenario_format: String = Kind::Str;
    /// Wraps World Info (`{0}`).
    wi_format: String = Kind::Str;
    /// Opens the chat history.
    new_chat_prompt: String = Kind::Str;
    /// Opens the chat history in a group chat.
    new_group_chat_prompt: String = Kind::Str;
    /// Opens the example dialogue.
    new_example_chat_prompt: String = Kind::Str;
    /// A user turn sent after a model turn, verbatim.
    send_if_empty: String = Kind::Str;
    /// Closes the chat history in a group chat.
    group_nudge_prompt: String = Kind::Str;
    /// Impersonation instruction (not applied).
    impersonation_prompt: String = Kind::Str;
    /// Continue generations (not applied).
    continue_prefill: bool = Kind::Bool;
    /// Continue generations (not applied).
    continue_postfix: String = Kind::Str;
    /// Continue generations (not applied).
    continue_nudge_prompt: String = Kind::Str;
}

/// The settings that are templates (SPEC §14.6), in table order.
pub(crate) const TEMPLATES: [&str; 8] = [
    "assistant_prefill",
    "personality_format",
    "scenario_format",
    "wi_format",
    "new_chat_prompt",
    "new_group_chat_prompt",
    "new_example_chat_prompt",
    "group_nudge_prompt",
];

impl PresetSettings {
    /// Reads the settings of a preset file's root object (SPEC §14.1): SillyTavern's migration
    /// first, then every key of the table checked in order; bad values are ignored with one
    /// `PresetSettingIgnored` warning each. Never fails.
    ///
    /// ```
    /// use serde_json::json;
    /// let (s, diagnostics) = stpreset::settings::PresetSettings::from_json(&json!({
    ///     "temperature": "hot", "seed": "42", "claude_use_sysprompt": true, "use_sysprompt": false}));
    /// assert_eq!((s.temperature, s.seed, s.use_sysprompt), (None, Some(42), Some(true)));
    /// assert_eq!(diagnostics[0].message, "preset setting temperature ignored: expected a number");
    /// ```
    pub fn from_json(root: &Value) -> (PresetSettings, Vec<Diagnostic>) {
        let entries: Vec<(&str, Json<'_>)> = match root {
            Value::Object(map) => map
                .iter()
                .map(|(k, v)| (k.as_str(), Json::from_value(v)))
                .collect(),
            _ => Vec::new(),
        };
        read::import(&entries)
    }

    /// Applies a context's `preset_settings` edit (already checked): each key's value replaces
    /// the preset's, `None` clears it.
    pub(crate) fn edit(&mut self, edits: &[(String, Option<Val>)]) {
        for (key, value) in edits {
            self.put(key, value.clone());
        }
    }

    /// Whether no setting is present.
    pub fn is_empty(&self) -> bool {
        self.entries().is_empty()
    }

    /// The setting `key` as its JSON value (`None`: absent or unknown key).
    ///
    /// ```
    /// let (s, _) = stpreset::settings::PresetSettings::from_json(&serde_json::json!({"openai_max_tokens": "300"}));
    /// assert_eq!(s.get("openai_max_tokens"), Some(serde_json::json!(300)));
    /// ```
    pub fn get(&self, key: &str) -> Option<Value> {
        self.entries()
            .into_iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v)
    }

    /// A template setting's text (SPEC §14.6).
    pub(crate) fn template(&self, key: &str) -> Option<&str> {
        match key {
            "assistant_prefill" => self.assistant_prefill.as_deref(),
            "personality_format" => self.personality_format.as_deref(),
            "scenario_format" => self.scenario_format.as_deref(),
            "wi_format" => self.wi_format.as_deref(),
            "new_chat_prompt" => self.new_chat_prompt.as_deref(),
            "new_group_chat_prompt" => self.new_group_chat_prompt.as_deref(),
            "new_example_chat_prompt" => self.new_example_chat_prompt.as_deref(),
            "group_nudge_prompt" => self.group_nudge_prompt.as_deref(),
            _ => None,
        }
    }
}

/// The present settings as one JSON object, keys sorted.
impl Serialize for PresetSettings {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut entries = self.entries();
        entries.sort_by(|a, b| a.0.cmp(b.0));
        let mut m = s.serialize_map(Some(entries.len()))?;
        for (k, v) in &entries {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

/// The context's `preset_settings` field (SPEC §14.3).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub enum PresetSettingsUse {
    /// Use the preset's settings (`true`, the default).
    #[default]
    Use,
    /// Use none of them (`false`): the preset contributes only its prompts.
    Ignore,
    /// Use them with these keys replaced (`null`: removed), checked when the context is read.
    Edit(SettingsEdit),
}

impl PresetSettingsUse {
    /// The `names_behavior` the host sets in its edits (not the preset file's): what the seed
    /// layout names chat messages by (SPEC §18.2).
    pub(crate) fn host_names_behavior(&self) -> Option<i64> {
        match self {
            PresetSettingsUse::Edit(edit) => {
                edit.0.iter().find_map(|(k, v)| match (k.as_str(), v) {
                    ("names_behavior", Some(read::Val::Int(n))) => Some(*n),
                    _ => None,
                })
            }
            _ => None,
        }
    }
}

/// A checked `preset_settings` object: keys and their new values (`None`: removed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SettingsEdit(pub(crate) Vec<(String, Option<Val>)>);

impl SettingsEdit {
    /// Checks one `preset_settings` key and value as SPEC §14.1 reads a preset's (numeric
    /// strings allowed, no migration); `Err` is the problem, for an error naming the key.
    ///
    /// ```
    /// let mut edit = stpreset::settings::SettingsEdit::default();
    /// edit.set("temperature", &serde_json::json!("0.5")).unwrap();
    /// assert!(edit.set("temprature", &serde_json::json!(1)).is_err());
    /// assert!(edit.set("top_k", &serde_json::json!(2.5)).is_err());
    /// ```
    pub fn set(&mut self, key: &str, value: &Value) -> Result<(), String> {
        let Some((key, kind)) = TABLE.iter().find(|(k, _)| *k == key) else {
            let keys: Vec<&str> = TABLE.iter().map(|(k, _)| *k).collect();
            return Err(format!(
                "unknown preset setting; the settings are {}",
                keys.join(", ")
            ));
        };
        let value = match value {
            Value::Null => None,
            v => Some(kind.read(&Json::from_value(v))?),
        };
        self.0.retain(|(k, _)| k != key);
        self.0.push((key.to_string(), value));
        Ok(())
    }
}
