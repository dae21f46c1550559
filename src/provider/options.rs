//! `provider_options` (SPEC §12.0, §14.3): read field by field, so that every refusal names its
//! key. Most options are tri-state: a context that does not give one lets the preset's setting
//! apply (SPEC §14.5); `null` means "the default, whatever the preset says".

use serde_json::Value;

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

impl Shape {
    /// Every name a context, the CLI, `serve` and the packages accept, canonical first:
    /// `gemini` is another name for `google` (the provider and the README say Gemini; SPEC
    /// §12 says `google`).
    pub const NAMES: [(&'static str, Shape); 4] = [
        ("openai", Shape::OpenAi),
        ("anthropic", Shape::Anthropic),
        ("google", Shape::Google),
        ("gemini", Shape::Google),
    ];
}

impl std::str::FromStr for Shape {
    type Err = String;

    /// The shape of one of [`Shape::NAMES`]; the error lists them (every front end says the
    /// same).
    ///
    /// ```
    /// use stpreset::Shape;
    /// assert_eq!("gemini".parse(), Ok(Shape::Google));
    /// assert!("Google".parse::<Shape>().unwrap_err().contains("\"gemini\""));
    /// ```
    fn from_str(name: &str) -> Result<Shape, String> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|&(_, s)| s)
            .ok_or_else(|| one_of(&Self::NAMES.map(|(n, _)| n)))
    }
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

/// Reasoning effort (SPEC §14.4): how hard a reasoning model thinks. `Auto` sends nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReasoningEffort {
    /// The provider's default (no field is sent).
    #[default]
    Auto,
    /// The least the model allows.
    Min,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
    /// The most the model allows.
    Max,
}

impl ReasoningEffort {
    /// The values as presets write them, in order.
    pub(crate) const NAMES: [&'static str; 6] = ["auto", "min", "low", "medium", "high", "max"];
    const ALL: [ReasoningEffort; 6] = [
        ReasoningEffort::Auto,
        ReasoningEffort::Min,
        ReasoningEffort::Low,
        ReasoningEffort::Medium,
        ReasoningEffort::High,
        ReasoningEffort::Max,
    ];

    /// The value as presets write it.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub(crate) fn parse(s: &str) -> Option<ReasoningEffort> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Output verbosity (SPEC §14.4). `Auto` sends nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Verbosity {
    /// The provider's default (no field is sent).
    #[default]
    Auto,
    /// Low.
    Low,
    /// Medium.
    Medium,
    /// High.
    High,
}

impl Verbosity {
    /// The values as presets write them, in order.
    pub(crate) const NAMES: [&'static str; 4] = ["auto", "low", "medium", "high"];
    const ALL: [Verbosity; 4] = [
        Verbosity::Auto,
        Verbosity::Low,
        Verbosity::Medium,
        Verbosity::High,
    ];

    /// The value as presets write it.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    pub(crate) fn parse(s: &str) -> Option<Verbosity> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

impl PostProcessing {
    /// The mode's name (`none`, `merge`, `semi`, `strict`, `single`).
    pub fn as_str(self) -> &'static str {
        match self {
            PostProcessing::None => "none",
            PostProcessing::Merge => "merge",
            PostProcessing::Semi => "semi",
            PostProcessing::Strict => "strict",
            PostProcessing::Single => "single",
        }
    }
}

/// An option as the context gives it (SPEC §14.3): not given, so the preset's setting applies;
/// `null`, so the default applies whatever the preset says; or a value, which wins.
///
/// ```
/// use stpreset::provider::Tri;
/// let preset = Some(&0.7);
/// assert_eq!(Tri::Unset.or(preset), Some(&0.7));
/// assert_eq!(Tri::Null.or(preset), None);
/// assert_eq!(Tri::from(1.0).or(preset), Some(&1.0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Tri<T> {
    /// Not given: the preset's setting, else the default.
    #[default]
    Unset,
    /// Given as `null`: the default, whatever the preset says.
    Null,
    /// Given: this value.
    Value(T),
}

impl<T> Tri<T> {
    /// The value, if one was given.
    pub fn value(&self) -> Option<&T> {
        match self {
            Tri::Value(v) => Some(v),
            _ => None,
        }
    }

    /// The value that applies over `preset`: the context's value, else (when unset) the
    /// preset's; `null` gives `None`.
    pub fn or<'a>(&'a self, preset: Option<&'a T>) -> Option<&'a T> {
        match self {
            Tri::Unset => preset,
            Tri::Null => None,
            Tri::Value(v) => Some(v),
        }
    }
}

impl<T> From<T> for Tri<T> {
    fn from(v: T) -> Self {
        Tri::Value(v)
    }
}

impl From<&str> for Tri<String> {
    fn from(v: &str) -> Self {
        Tri::Value(v.to_string())
    }
}

/// How a rendered prompt becomes a provider request (SPEC §12.0's table, with SPEC §14.3's
/// sampling and reasoning keys). Unset tri-state options take the preset's setting when a
/// rendered preset is converted ([`Rendered::to_request`](crate::Rendered::to_request)), and
/// the §12 default in [`convert`](crate::convert) and [`request`](crate::request).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ProviderOptions {
    /// The request shape; `None` is `openai` (and the CLI prints a request only when set).
    pub shape: Option<Shape>,
    /// Post-processing mode (default `none`).
    pub post_processing: Tri<PostProcessing>,
    /// Join adjacent nameless system messages with one newline first (default false).
    pub squash_system: Tri<bool>,
    /// Anthropic `system` / Gemini `systemInstruction` from the leading system messages
    /// (default true).
    pub use_system_prompt: Tri<bool>,
    /// Anthropic: a trailing assistant turn to continue from (default none).
    pub assistant_prefill: Tri<String>,
    /// The user turn inserted where a provider needs one (never blank).
    pub placeholder: String,
    /// Anthropic: cache the system prompt.
    pub cache_system_prompt: bool,
    /// Anthropic: cache breakpoints at this depth (and two deeper).
    pub cache_at_depth: Option<u64>,
    /// Anthropic: cache lifetime.
    pub cache_ttl: CacheTtl,
    /// Sampling temperature, 0..=2, sent as given (a preset's is capped per model).
    pub temperature: Tri<f64>,
    /// Nucleus sampling, 0..=1.
    pub top_p: Tri<f64>,
    /// Top-k sampling, 0..=500 (Anthropic, Gemini).
    pub top_k: Tri<i64>,
    /// OpenAI frequency penalty, -2..=2.
    pub frequency_penalty: Tri<f64>,
    /// OpenAI presence penalty, -2..=2.
    pub presence_penalty: Tri<f64>,
    /// The response's maximum tokens, 1..=2000000 (the preset's `openai_max_tokens`).
    pub max_tokens: Tri<i64>,
    /// The provider's sampling seed, -1..=2147483647 (-1: none). Unrelated to
    /// [`Context::seed`](crate::Context::seed), the macros' random source.
    pub seed: Tri<i64>,
    /// OpenAI: how many choices, 1..=128.
    pub n: Tri<i64>,
    /// Reasoning effort.
    pub reasoning_effort: Tri<ReasoningEffort>,
    /// Output verbosity.
    pub verbosity: Tri<Verbosity>,
    /// Ask for a streamed response (only the host knows whether it reads one).
    pub stream: bool,
    /// Ask for the model's thoughts (Gemini `includeThoughts`, Claude summarized thinking).
    pub include_reasoning: bool,
    /// Cap the output tokens the body asks for at the model's maximum (issue 39; off by
    /// default: SPEC §14.4 sends the preset's, as SillyTavern does, and the provider refuses a
    /// body over the model's limit). Each cap is a `ModelLimit` warning; a model the table
    /// does not know is sent as asked, with a `ModelUnknown` note.
    pub cap_to_model: bool,
    /// Whitespace-only messages reach the Anthropic shape (SillyTavern's converter keeps
    /// them, SPEC §17.3.6); set by the SillyTavern layout only.
    pub(crate) keep_blank: bool,
}

impl Default for ProviderOptions {
    fn default() -> Self {
        ProviderOptions {
            shape: None,
            post_processing: Tri::Unset,
            squash_system: Tri::Unset,
            use_system_prompt: Tri::Unset,
            assistant_prefill: Tri::Unset,
            // SillyTavern's shipped `promptPlaceholder` (SPEC §12.0).
            placeholder: "[Start a new chat]".into(),
            cache_system_prompt: false,
            cache_at_depth: None,
            cache_ttl: CacheTtl::FiveMinutes,
            temperature: Tri::Unset,
            top_p: Tri::Unset,
            top_k: Tri::Unset,
            frequency_penalty: Tri::Unset,
            presence_penalty: Tri::Unset,
            max_tokens: Tri::Unset,
            seed: Tri::Unset,
            n: Tri::Unset,
            reasoning_effort: Tri::Unset,
            verbosity: Tri::Unset,
            stream: false,
            include_reasoning: false,
            cap_to_model: false,
            keep_blank: false,
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
        for (key, v) in map {
            read(key, v, &mut o).map_err(|problem| (key.clone(), problem))?;
        }
        Ok(o)
    }
}

/// `expected one of "a", "b"`.
fn one_of(options: &[&str]) -> String {
    let list: Vec<String> = options.iter().map(|o| format!("\"{o}\"")).collect();
    format!("expected one of {}", list.join(", "))
}

/// A tri-state value: `null`, or what `read` makes of it.
fn tri<T>(
    v: &Value,
    read: impl FnOnce(&Value) -> Option<T>,
    expected: &str,
) -> Result<Tri<T>, String> {
    if v.is_null() {
        return Ok(Tri::Null);
    }
    read(v)
        .map(Tri::Value)
        .ok_or_else(|| format!("{expected}, or null"))
}

/// A JSON number in `lo..=hi` (strict: no numeric strings, SPEC §14.3).
fn number(lo: f64, hi: f64) -> impl FnOnce(&Value) -> Option<f64> {
    move |v| v.as_f64().filter(|f| (lo..=hi).contains(f))
}

/// A JSON number with no fractional part (`2048.0` is 2048) in `lo..=hi`.
fn integer(lo: i64, hi: i64) -> impl FnOnce(&Value) -> Option<i64> {
    move |v| {
        let i = match v.as_i64() {
            Some(i) => i,
            // Whole floats only; the bound keeps the cast exact (every range here is small).
            None => v
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 1e15)
                .map(|f| f as i64)?,
        };
        (lo..=hi).contains(&i).then_some(i)
    }
}

/// Every `provider_options` key, for the unknown-key error.
const KEYS: [&str; 22] = [
    "shape",
    "post_processing",
    "squash_system",
    "use_system_prompt",
    "assistant_prefill",
    "placeholder",
    "cache_system_prompt",
    "cache_at_depth",
    "cache_ttl",
    "temperature",
    "top_p",
    "top_k",
    "frequency_penalty",
    "presence_penalty",
    "max_tokens",
    "seed",
    "n",
    "reasoning_effort",
    "verbosity",
    "stream",
    "include_reasoning",
    "cap_to_model",
];

fn read(key: &str, v: &Value, o: &mut ProviderOptions) -> Result<(), String> {
    let flag = |v: &Value| {
        v.as_bool()
            .ok_or_else(|| "expected true or false".to_string())
    };
    let choice = |options: &[&str]| -> Result<usize, String> {
        v.as_str()
            .and_then(|s| options.iter().position(|o| *o == s))
            .ok_or_else(|| one_of(options))
    };
    match key {
        "shape" => {
            // Not a string: no name, the same error.
            o.shape = Some(v.as_str().unwrap_or_default().parse()?);
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
            o.post_processing = tri(
                v,
                |v| {
                    v.as_str()
                        .and_then(|s| names.iter().position(|n| *n == s))
                        .map(|i| modes[i])
                },
                &one_of(&names),
            )?;
        }
        "squash_system" => o.squash_system = tri(v, Value::as_bool, "expected true or false")?,
        "use_system_prompt" => {
            o.use_system_prompt = tri(v, Value::as_bool, "expected true or false")?
        }
        "assistant_prefill" => {
            o.assistant_prefill = tri(v, |v| v.as_str().map(str::to_string), "expected a string")?
        }
        "cache_system_prompt" => o.cache_system_prompt = flag(v)?,
        "placeholder" => match v.as_str() {
            Some(s) if !s.trim().is_empty() => o.placeholder = s.to_string(),
            _ => return Err("expected a non-blank string".into()),
        },
        "cache_at_depth" => match v {
            Value::Null => o.cache_at_depth = Option::None,
            _ => match v.as_u64() {
                Some(d) => o.cache_at_depth = Some(d),
                Option::None => return Err("expected an integer from 0, or null".into()),
            },
        },
        "cache_ttl" => {
            o.cache_ttl = [CacheTtl::FiveMinutes, CacheTtl::OneHour][choice(&["5m", "1h"])?]
        }
        "temperature" => o.temperature = tri(v, number(0.0, 2.0), "expected a number in 0..=2")?,
        "top_p" => o.top_p = tri(v, number(0.0, 1.0), "expected a number in 0..=1")?,
        "frequency_penalty" => {
            o.frequency_penalty = tri(v, number(-2.0, 2.0), "expected a number in -2..=2")?
        }
        "presence_penalty" => {
            o.presence_penalty = tri(v, number(-2.0, 2.0), "expected a number in -2..=2")?
        }
        "top_k" => o.top_k = tri(v, integer(0, 500), "expected an integer in 0..=500")?,
        "max_tokens" => {
            o.max_tokens = tri(
                v,
                integer(1, 2_000_000),
                "expected an integer in 1..=2000000",
            )?
        }
        "seed" => {
            o.seed = tri(
                v,
                integer(-1, 2_147_483_647),
                "expected an integer in -1..=2147483647",
            )?
        }
        "n" => o.n = tri(v, integer(1, 128), "expected an integer in 1..=128")?,
        "reasoning_effort" => {
            o.reasoning_effort = tri(
                v,
                |v| v.as_str().and_then(ReasoningEffort::parse),
                &one_of(&ReasoningEffort::NAMES),
            )?
        }
        "verbosity" => {
            o.verbosity = tri(
                v,
                |v| v.as_str().and_then(Verbosity::parse),
                &one_of(&Verbosity::NAMES),
            )?
        }
        "stream" => o.stream = flag(v)?,
        "include_reasoning" => o.include_reasoning = flag(v)?,
        "cap_to_model" => o.cap_to_model = flag(v)?,
        _ => {
            return Err(format!(
                "unknown provider option; the options are {}",
                KEYS.join(", ")
            ));
        }
    }
    Ok(())
}
