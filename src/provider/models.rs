//! Model families (SPEC §14.4): which request fields a model takes, as SillyTavern 1.18 decides
//! it by model name. Every list is data, so the next model release is a one-line change here
//! (with a test beside it). Patterns are ST's regexes, written as prefix, substring and exact
//! lists; each function names the regex it stands for.

/// ST `OPENAI_REASONING_EFFORT_MODELS`: exact model names that take `reasoning_effort`.
const OPENAI_EFFORT_MODELS: &[&str] = &[
    "o1",
    "o3",
    "o3-2025-04-16",
    "o3-mini",
    "o3-mini-2025-01-31",
    "o4-mini",
    "o4-mini-2025-04-16",
    "gpt-5",
    "gpt-5-2025-08-07",
    "gpt-5-mini",
    "gpt-5-mini-2025-08-07",
    "gpt-5-nano",
    "gpt-5-nano-2025-08-07",
    "gpt-5.1",
    "gpt-5.1-2025-11-13",
    "gpt-5.1-chat-latest",
    "gpt-5.2",
    "gpt-5.2-2025-12-11",
    "gpt-5.2-chat-latest",
    "gpt-5.3-chat-latest",
    "gpt-5.4",
    "gpt-5.4-2026-03-05",
    "gpt-5.4-mini",
    "gpt-5.4-mini-2026-03-17",
    "gpt-5.4-nano",
    "gpt-5.4-nano-2026-03-17",
    "gpt-5.5",
    "gpt-5.5-2026-04-23",
];

/// Models whose effort is fixed at `medium` whatever is asked.
const OPENAI_FIXED_MEDIUM_EFFORT: &[&str] = &["gpt-5.3-chat-latest"];

/// A model's published limits, in tokens (issue 39 §2: a body must be one the provider
/// accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Most output tokens a request may ask for.
    pub output: u32,
    /// The context window (prompt and output).
    pub window: u32,
}

/// Model families by name prefix, the longest matching prefix deciding: the models
/// SillyTavern 1.18 lists for OpenAI, Anthropic and Gemini and their successors, with the
/// limits their providers publish (checked 2026-12). One line a family; a new model is a line.
const LIMITS: &[(&str, u32, u32)] = &[
    // OpenAI
    ("gpt-3.5-turbo", 4_096, 16_385),
    ("gpt-4", 8_192, 8_192),
    ("gpt-4-turbo", 4_096, 128_000),
    ("gpt-4o", 16_384, 128_000),
    ("chatgpt-4o", 16_384, 128_000),
    ("gpt-4.1", 32_768, 1_047_576),
    ("gpt-4.5", 16_384, 128_000),
    ("o1", 100_000, 200_000),
    ("o1-mini", 65_536, 128_000),
    ("o3", 100_000, 200_000),
    ("o4-mini", 100_000, 200_000),
    ("gpt-5", 128_000, 400_000),
    ("gpt-5-chat", 16_384, 128_000),
    ("gpt-5.1-chat", 16_384, 128_000),
    ("gpt-5.2-chat", 16_384, 128_000),
    ("gpt-5.3-chat", 16_384, 128_000),
    // Anthropic
    ("claude-3-haiku", 4_096, 200_000),
    ("claude-3-opus", 4_096, 200_000),
    ("claude-3-5-haiku", 8_192, 200_000),
    ("claude-3-5-sonnet", 8_192, 200_000),
    ("claude-3-7-sonnet", 64_000, 200_000),
    ("claude-sonnet-4", 64_000, 200_000),
    ("claude-opus-4", 32_000, 200_000),
    ("claude-opus-4-5", 64_000, 200_000),
    ("claude-haiku-4-5", 64_000, 200_000),
    // Gemini
    ("gemini-1.5-flash", 8_192, 1_048_576),
    ("gemini-1.5-pro", 8_192, 2_097_152),
    ("gemini-2.0-flash", 8_192, 1_048_576),
    ("gemini-2.5", 65_536, 1_048_576),
    ("gemini-3", 65_536, 1_048_576),
];

/// The limits of `model` (its family's: the longest prefix in [`LIMITS`]); `None` when the
/// table does not know it.
pub(crate) fn limits(model: &str) -> Option<Limits> {
    LIMITS
        .iter()
        .filter(|(prefix, ..)| model.starts_with(prefix))
        .max_by_key(|(prefix, ..)| prefix.len())
        .map(|&(_, output, window)| Limits { output, window })
}

fn starts_with_any(model: &str, prefixes: &[&str]) -> bool {
    prefixes.iter().any(|p| model.starts_with(p))
}

fn contains_any(model: &str, parts: &[&str]) -> bool {
    parts.iter().any(|p| model.contains(p))
}

/// Whether `model` takes `reasoning_effort` (exact list).
pub(super) fn openai_takes_effort(model: &str) -> bool {
    OPENAI_EFFORT_MODELS.contains(&model)
}

/// Whether the effort is fixed at `medium` for `model`.
pub(super) fn openai_fixed_medium_effort(model: &str) -> bool {
    OPENAI_FIXED_MEDIUM_EFFORT.contains(&model)
}

/// `/^gpt-5\.(4|5)/`: `min` effort is `none`.
pub(super) fn openai_min_is_none(model: &str) -> bool {
    starts_with_any(model, &["gpt-5.4", "gpt-5.5"])
}

/// `/^gpt-5/`: `min` effort is `minimal`, `verbosity` is sent, `max_completion_tokens`.
pub(super) fn openai_gpt5(model: &str) -> bool {
    model.starts_with("gpt-5")
}

/// `/^(o1|o3|o4)/`: reasoning models without sampling fields.
pub(super) fn openai_o_series(model: &str) -> bool {
    starts_with_any(model, &["o1", "o3", "o4"])
}

/// `/^o1/`: no `n`, and system messages become user messages.
pub(crate) fn openai_o1(model: &str) -> bool {
    model.starts_with("o1")
}

/// Models that refuse `stream`.
pub(super) fn openai_no_stream(model: &str) -> bool {
    ["o1", "o1-2024-12-17"].contains(&model)
}

/// `gpt-5-chat-latest` keeps its sampling fields.
pub(super) fn openai_gpt5_chat(model: &str) -> bool {
    model.contains("gpt-5-chat-latest")
}

/// `/gpt-5\.(1|2|3|4)/` without `chat-latest`: sampling stays when no effort is sent.
pub(super) fn openai_gpt5_point(model: &str) -> bool {
    contains_any(model, &["gpt-5.1", "gpt-5.2", "gpt-5.3", "gpt-5.4"])
        && !model.contains("chat-latest")
}

/// `/^claude-(opus-4-1|sonnet-4-5|haiku-4-5|opus-4-5|opus-4-6|sonnet-4-6)/`: `temperature` or
/// `top_p`, never both.
pub(super) fn claude_one_sampler(model: &str) -> bool {
    starts_with_any(
        model,
        &[
            "claude-opus-4-1",
            "claude-sonnet-4-5",
            "claude-haiku-4-5",
            "claude-opus-4-5",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
        ],
    )
}

/// `/^claude-opus-4-7/`: no sampling fields at all.
pub(super) fn claude_no_sampling(model: &str) -> bool {
    model.starts_with("claude-opus-4-7")
}

/// `/^claude-(opus-4-7|opus-4-6|sonnet-4-6)/`: adaptive thinking; these also refuse an
/// assistant prefill (SPEC §12.3 anthropic step 6).
pub(crate) fn claude_adaptive(model: &str) -> bool {
    starts_with_any(
        model,
        &["claude-opus-4-7", "claude-opus-4-6", "claude-sonnet-4-6"],
    )
}

/// `/^claude-opus-4-7/` with thoughts asked for: `display: "summarized"`.
pub(super) fn claude_summarized_thinking(model: &str) -> bool {
    model.starts_with("claude-opus-4-7")
}

/// `/^claude-(3-7|opus-4|sonnet-4|haiku-4-5)/` (and not adaptive): budgeted thinking.
pub(super) fn claude_budgeted_thinking(model: &str) -> bool {
    !claude_adaptive(model)
        && starts_with_any(
            model,
            &[
                "claude-3-7",
                "claude-opus-4",
                "claude-sonnet-4",
                "claude-haiku-4-5",
            ],
        )
}

/// `/^claude-(opus-4-5|opus-4-6|sonnet-4-6|opus-4-7)/`: `verbosity` as `output_config.effort`.
pub(super) fn claude_verbosity(model: &str) -> bool {
    starts_with_any(
        model,
        &[
            "claude-opus-4-5",
            "claude-opus-4-6",
            "claude-sonnet-4-6",
            "claude-opus-4-7",
        ],
    )
}

/// `/(vision|ultra|gemma)/`: Gemini temperatures are capped at 1.0 instead of 2.0.
pub(crate) fn gemini_low_temperature(model: &str) -> bool {
    contains_any(model, &["vision", "ultra", "gemma"])
}

/// `gemma-3` takes no system instruction.
pub(super) fn gemini_no_system(model: &str) -> bool {
    model.contains("gemma-3")
}

/// `/gemini-3[.\d]*-KIND/` (anchored with `^` when `anchored`): `gemini-3`, then dots and
/// digits, then `-KIND`.
fn gemini3(model: &str, kind: &str, anchored: bool) -> bool {
    let at = |start: usize| {
        let rest = &model[start + "gemini-3".len()..];
        let rest = rest.trim_start_matches(|c: char| c == '.' || c.is_ascii_digit());
        rest.strip_prefix('-').is_some_and(|r| r.starts_with(kind))
    };
    if anchored {
        model.starts_with("gemini-3") && at(0)
    } else {
        model.match_indices("gemini-3").any(|(i, _)| at(i))
    }
}

/// Gemini thinking families, in the order ST tests them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GeminiThinking {
    /// `/gemini-3[.\d]*-pro/`: `thinkingLevel` low or high.
    Gemini3Pro,
    /// `/gemini-3[.\d]*-flash/`: `thinkingLevel` minimal to high.
    Gemini3Flash,
    /// `/flash-lite/`: `thinkingBudget` 512..=24576.
    FlashLite,
    /// `/flash/`: `thinkingBudget` at most 24576.
    Flash,
    /// `/pro/`: `thinkingBudget` 128..=32768.
    Pro,
}

/// The thinking family of a Gemini model, or `None` when it does not think: thinking models are
/// `/^gemini-2.5-(flash|pro)/` but not `/-image(-preview)?$/`, or `/^gemini-3[.\d]*-(flash|pro)/`.
pub(super) fn gemini_thinking(model: &str) -> Option<GeminiThinking> {
    let gemini25 = starts_with_any(model, &["gemini-2.5-flash", "gemini-2.5-pro"])
        && !(model.ends_with("-image") || model.ends_with("-image-preview"));
    let thinks = gemini25 || gemini3(model, "flash", true) || gemini3(model, "pro", true);
    if !thinks {
        return None;
    }
    Some(if gemini3(model, "pro", false) {
        GeminiThinking::Gemini3Pro
    } else if gemini3(model, "flash", false) {
        GeminiThinking::Gemini3Flash
    } else if model.contains("flash-lite") {
        GeminiThinking::FlashLite
    } else if model.contains("flash") {
        GeminiThinking::Flash
    } else {
        // Every thinking model names flash or pro.
        GeminiThinking::Pro
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_model_has_its_familys_limits_by_the_longest_prefix() {
        let of = |m: &str| limits(m).map(|l| (l.output, l.window));
        assert_eq!(of("gpt-4.1-mini"), Some((32_768, 1_047_576)));
        assert_eq!(of("gpt-4o-2024-08-06"), Some((16_384, 128_000)));
        assert_eq!(of("gpt-4"), Some((8_192, 8_192)));
        assert_eq!(of("gpt-5-chat-latest"), Some((16_384, 128_000)));
        assert_eq!(of("gpt-5-mini"), Some((128_000, 400_000)));
        assert_eq!(of("claude-opus-4-5-20251101"), Some((64_000, 200_000)));
        assert_eq!(of("claude-opus-4-1"), Some((32_000, 200_000)));
        assert_eq!(of("gemini-2.5-flash-lite"), Some((65_536, 1_048_576)));
        assert_eq!(of("llama-3-70b"), None);
    }

    use super::*;

    #[test]
    fn openai_families() {
        assert!(openai_takes_effort("gpt-5.4-mini") && !openai_takes_effort("gpt-5-pro"));
        assert!(!openai_takes_effort("o1-mini") && openai_takes_effort("o1"));
        assert!(openai_min_is_none("gpt-5.5-2026-04-23") && !openai_min_is_none("gpt-5.1"));
        assert!(openai_o_series("o4-mini") && !openai_o_series("gpt-4o"));
        assert!(openai_gpt5_point("gpt-5.2") && !openai_gpt5_point("gpt-5.2-chat-latest"));
        assert!(!openai_gpt5_point("gpt-5.5") && !openai_gpt5_point("gpt-5"));
        assert!(openai_no_stream("o1") && !openai_no_stream("o1-mini"));
    }

    #[test]
    fn claude_families() {
        assert!(claude_adaptive("claude-sonnet-4-6") && !claude_adaptive("claude-sonnet-4-5"));
        assert!(claude_budgeted_thinking("claude-sonnet-4-5-20250929"));
        assert!(claude_budgeted_thinking("claude-3-7-sonnet-20250219"));
        assert!(!claude_budgeted_thinking("claude-opus-4-6"));
        assert!(!claude_budgeted_thinking("claude-3-5-sonnet-20241022"));
        assert!(claude_one_sampler("claude-haiku-4-5") && !claude_one_sampler("claude-opus-4-7"));
        assert!(claude_verbosity("claude-opus-4-5") && !claude_verbosity("claude-sonnet-4-5"));
    }

    #[test]
    fn gemini_families() {
        use GeminiThinking::*;
        let cases = [
            ("gemini-2.5-pro", Some(Pro)),
            ("gemini-2.5-flash", Some(Flash)),
            ("gemini-2.5-flash-lite", Some(FlashLite)),
            ("gemini-2.5-flash-image", None),
            ("gemini-2.5-flash-image-preview", None),
            ("gemini-2.0-flash", None),
            ("gemini-3-pro-preview", Some(Gemini3Pro)),
            ("gemini-3.1-pro-preview", Some(Gemini3Pro)),
            ("gemini-3-flash-preview", Some(Gemini3Flash)),
            ("gemini-3.0.1-flash", Some(Gemini3Flash)),
            ("gemini-3x-pro", None),
            ("gemma-3-27b-it", None),
            ("", None),
        ];
        for (model, want) in cases {
            assert_eq!(gemini_thinking(model), want, "{model}");
        }
        assert!(
            gemini_low_temperature("gemma-3-27b-it") && !gemini_low_temperature("gemini-2.5-pro")
        );
    }
}
