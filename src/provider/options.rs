//! `provider_options` (SPEC §12.0): read field by field, so that every refusal names its key.

use serde_json::{Map, Value};

/// Which request to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shape {
    /// OpenAI-compatible chat completions.
    #[default]
    OpenAi,
    /// Anthropic Messages API.
    Anthropic,
    /// Gemini `generateContent`.
    Google,
}

/// SillyTavern's prompt post-processing (SPEC §12.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PostProcessing {
    /// The list passes unchanged.
    #[default]
    None,
    /// Consecutive same-role messages merge.
    Merge,
    /// Merge; system messages after the first become user.
    Semi,
    /// Semi, plus placeholder user turns where a provider needs one.
    Strict,
    /// Everything in one user message, names prefixed.
    Single,
}

/// Anthropic prompt-cache lifetime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CacheTtl {
    /// `5m`.
    #[default]
    FiveMinutes,
    /// `1h`.
    OneHour,
}

impl CacheTtl {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CacheTtl::FiveMinutes => "5m",
            CacheTtl::OneHour => "1h",
        }
    }
}

/// How a rendered prompt becomes a provider request (SPEC §12.0's table).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProviderOptions {
    /// The request shape; `None` is `openai` (and the CLI prints a request only when set).
    pub shape: Option<Shape>,
    /// Post-processing mode.
    pub post_processing: PostProcessing,
    /// Join adjacent nameless system messages with one newline first.
    pub squash_system: bool,
    /// Anthropic `system` / Gemini `systemInstruction` from the leading system messages.
    pub use_system_prompt: bool,
    /// Anthropic: a trailing assistant turn to continue from.
    pub assistant_prefill: String,
    /// The user turn inserted where a provider needs one (never blank).
    pub placeholder: String,
    /// Anthropic: cache the system prompt.
    pub cache_system_prompt: bool,
    /// Anthropic: cache breakpoints at this depth (and two deeper).
    pub cache_at_depth: Option<u64>,
    /// Anthropic: cache lifetime.
    pub cache_ttl: CacheTtl,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            shape: None,
            post_processing: PostProcessing::None,
            squash_system: false,
            use_system_prompt: true,
            assistant_prefill: String::new(),
            placeholder: "[Start a new chat]".into(),
            cache_system_prompt: false,
            cache_at_depth: None,
            cache_ttl: CacheTtl::FiveMinutes,
        }
    }
}

impl ProviderOptions {
    /// Reads the context file's `provider_options` object. The error names the key,
    /// `(key, problem)`; an empty key when the value is no object at all.
    pub(crate) fn from_json(value: &Value) -> Result<ProviderOptions, (String, String)> {
        let mut o = ProviderOptions::default();
        let Value::Object(map) = value else {
            return Err((String::new(), "expected an object".into()));
        };
        read(map, &mut o).map(|()| o)
    }
}

fn read(map: &Map<String, Value>, o: &mut ProviderOptions) -> Result<(), (String, String)> {
    for (key, v) in map {
        let bad = |expected: &str| Err((key.clone(), format!("expected {expected}")));
        let choice = |options: &[&str]| -> Result<usize, (String, String)> {
            v.as_str()
                .and_then(|s| options.iter().position(|o| *o == s))
                .ok_or_else(|| {
                    let list: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
                    (key.clone(), format!("expected one of {}", list.join(", ")))
                })
        };
        let flag = || {
            v.as_bool()
                .ok_or_else(|| (key.clone(), "expected true or false".into()))
        };
        match key.as_str() {
            "shape" => {
                o.shape = Some(
                    [Shape::OpenAi, Shape::Anthropic, Shape::Google]
                        [choice(&["openai", "anthropic", "google"])?],
                )
            }
            "post_processing" => {
                use PostProcessing::*;
                let names = [
                    "none",
                    "merge",
                    "semi",
                    "strict",
                    "single",
                    "claude",
                    "merge_tools",
                    "semi_tools",
                    "strict_tools",
                ];
                let modes = [
                    None, Merge, Semi, Strict, Single, Merge, Merge, Semi, Strict,
                ];
                o.post_processing = modes[choice(&names)?];
            }
            "squash_system" => o.squash_system = flag()?,
            "use_system_prompt" => o.use_system_prompt = flag()?,
            "cache_system_prompt" => o.cache_system_prompt = flag()?,
            "assistant_prefill" => match v.as_str() {
                Some(s) => o.assistant_prefill = s.to_string(),
                None => return bad("a string"),
            },
            "placeholder" => match v.as_str() {
                Some(s) if !s.trim().is_empty() => o.placeholder = s.to_string(),
                _ => return bad("a non-blank string"),
            },
            "cache_at_depth" => match v {
                Value::Null => o.cache_at_depth = None,
                _ => match v.as_u64() {
                    Some(d) => o.cache_at_depth = Some(d),
                    None => return bad("an integer from 0, or null"),
                },
            },
            "cache_ttl" => {
                o.cache_ttl = [CacheTtl::FiveMinutes, CacheTtl::OneHour][choice(&["5m", "1h"])?]
            }
            _ => return Err((key.clone(), "unknown provider option".into())),
        }
    }
    Ok(())
}
