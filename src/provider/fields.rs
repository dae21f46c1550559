//! The request's fields beside its messages (SPEC §14.4): model, sampling, max tokens, seed,
//! choices, stream, reasoning effort, verbosity and thinking, per shape and model family
//! ([`models`](super::models)). Options arrive resolved: a value is sent, anything else is not.

use serde_json::{Map, Value, json};

use super::models::{self, GeminiThinking};
use super::{ProviderOptions, ReasoningEffort, Shape, Verbosity};

/// Anthropic requires `max_tokens`; 300 is SillyTavern's default.
const ANTHROPIC_DEFAULT_MAX_TOKENS: i64 = 300;
/// Claude's smallest thinking budget.
const CLAUDE_MIN_BUDGET: i64 = 1024;
/// Claude's thinking budget without streaming (ST caps it: longer requests time out).
const CLAUDE_UNSTREAMED_BUDGET: i64 = 21333;

/// What the options say, resolved to values (`None`: not sent).
struct Asked {
    temperature: Option<f64>,
    top_p: Option<f64>,
    top_k: Option<i64>,
    frequency_penalty: Option<f64>,
    presence_penalty: Option<f64>,
    max_tokens: Option<i64>,
    seed: Option<i64>,
    n: Option<i64>,
    effort: ReasoningEffort,
    verbosity: Verbosity,
    stream: bool,
    include_reasoning: bool,
}

impl Asked {
    fn of(o: &ProviderOptions) -> Asked {
        Asked {
            temperature: o.temperature.value().copied(),
            top_p: o.top_p.value().copied(),
            top_k: o.top_k.value().copied(),
            frequency_penalty: o.frequency_penalty.value().copied(),
            presence_penalty: o.presence_penalty.value().copied(),
            max_tokens: o.max_tokens.value().copied(),
            seed: o.seed.value().copied(),
            n: o.n.value().copied(),
            effort: o.reasoning_effort.value().copied().unwrap_or_default(),
            verbosity: o.verbosity.value().copied().unwrap_or_default(),
            stream: o.stream,
            include_reasoning: o.include_reasoning,
        }
    }
}

/// Whether an Anthropic request for `model` with `options` thinks (SPEC §14.4 rules 2 and 3):
/// then a trailing assistant turn goes as the user's (rule 5).
pub(crate) fn claude_thinks(model: &str, options: &ProviderOptions) -> bool {
    let effort = options
        .reasoning_effort
        .value()
        .copied()
        .unwrap_or_default();
    effort != ReasoningEffort::Auto
        && (models::claude_adaptive(model) || models::claude_budgeted_thinking(model))
}

fn put(map: &mut Map<String, Value>, key: &str, value: Option<impl Into<Value>>) {
    if let Some(v) = value {
        map.insert(key.into(), v.into());
    }
}

fn remove(map: &mut Map<String, Value>, keys: &[&str]) {
    for k in keys {
        map.remove(*k);
    }
}

fn rename(map: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(v) = map.remove(from) {
        map.insert(to.into(), v);
    }
}

/// The fields of a `shape` request for `model`, keys sorted (a `serde_json::Map` is ordered
/// by key).
pub(super) fn fields(shape: Shape, model: &str, options: &ProviderOptions) -> Map<String, Value> {
    let asked = Asked::of(options);
    let mut map = match shape {
        Shape::OpenAi => openai(model, &asked),
        Shape::Anthropic => anthropic(model, &asked),
        Shape::Google => {
            let config = google(model, &asked);
            let mut map = Map::new();
            if !config.is_empty() {
                map.insert("generationConfig".into(), Value::Object(config));
            }
            return map;
        }
    };
    if !model.is_empty() {
        map.insert("model".into(), model.into());
    }
    map
}

const PENALTIES: [&str; 2] = ["frequency_penalty", "presence_penalty"];
const SAMPLERS: [&str; 4] = [
    "temperature",
    "top_p",
    "frequency_penalty",
    "presence_penalty",
];

fn openai(model: &str, a: &Asked) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "temperature", a.temperature);
    put(&mut m, "top_p", a.top_p);
    put(&mut m, "frequency_penalty", a.frequency_penalty);
    put(&mut m, "presence_penalty", a.presence_penalty);
    put(&mut m, "max_tokens", a.max_tokens);
    put(&mut m, "seed", a.seed.filter(|s| *s >= 0));
    put(&mut m, "n", a.n.filter(|n| *n > 1));
    put(&mut m, "stream", a.stream.then_some(true));
    // 1. Effort, in the words of each family.
    let effort = match a.effort {
        ReasoningEffort::Auto => None,
        ReasoningEffort::Max => Some("high"),
        ReasoningEffort::Min if models::openai_min_is_none(model) => Some("none"),
        ReasoningEffort::Min if models::openai_gpt5(model) => Some("minimal"),
        ReasoningEffort::Min => Some("low"),
        e => Some(e.as_str()),
    };
    let effort = effort.filter(|_| models::openai_takes_effort(model));
    let wrote_effort = effort.is_some();
    if let Some(e) = effort {
        let e = if models::openai_fixed_medium_effort(model) {
            "medium"
        } else {
            e
        };
        m.insert("reasoning_effort".into(), e.into());
    }
    // 2. Verbosity.
    if a.verbosity != Verbosity::Auto && models::openai_gpt5(model) {
        m.insert("verbosity".into(), a.verbosity.as_str().into());
    }
    // 3. o-series reasoning models.
    if models::openai_o_series(model) {
        rename(&mut m, "max_tokens", "max_completion_tokens");
        remove(&mut m, &SAMPLERS);
        if models::openai_o1(model) {
            remove(&mut m, &["n"]);
        }
        if models::openai_no_stream(model) {
            remove(&mut m, &["stream"]);
        }
    }
    // 4. GPT-5.
    if models::openai_gpt5(model) {
        rename(&mut m, "max_tokens", "max_completion_tokens");
        if models::openai_gpt5_chat(model) {
            // Keeps its sampling fields.
        } else if models::openai_gpt5_point(model) && !wrote_effort {
            remove(&mut m, &PENALTIES);
        } else {
            remove(&mut m, &SAMPLERS);
        }
    }
    m
}

/// Claude's effort word for `output_config` (adaptive thinking).
fn claude_effort(e: ReasoningEffort) -> &'static str {
    match e {
        ReasoningEffort::Min | ReasoningEffort::Low => "low",
        e => e.as_str(),
    }
}

/// `⌊M · percent / 100⌋` without floating point.
fn share(max: i64, percent: i64) -> i64 {
    max.saturating_mul(percent) / 100
}

fn anthropic(model: &str, a: &Asked) -> Map<String, Value> {
    let mut m = Map::new();
    let max = a.max_tokens.unwrap_or(ANTHROPIC_DEFAULT_MAX_TOKENS);
    m.insert("max_tokens".into(), max.into());
    put(&mut m, "temperature", a.temperature);
    put(&mut m, "top_p", a.top_p);
    put(&mut m, "top_k", a.top_k);
    put(&mut m, "stream", a.stream.then_some(true));
    // 1. Sampling by family.
    if models::claude_one_sampler(model) {
        if a.top_p.is_some_and(|p| p < 1.0) {
            remove(&mut m, &["temperature"]);
        } else {
            remove(&mut m, &["top_p"]);
        }
    } else if models::claude_no_sampling(model) {
        remove(&mut m, &["temperature", "top_p", "top_k"]);
    }
    let thinking = a.effort != ReasoningEffort::Auto;
    let mut output_config = false;
    if thinking && models::claude_adaptive(model) {
        // 2. Adaptive thinking.
        let mut t = json!({"type": "adaptive"});
        if a.include_reasoning && models::claude_summarized_thinking(model) {
            t["display"] = "summarized".into();
        }
        m.insert("thinking".into(), t);
        m.insert(
            "output_config".into(),
            json!({"effort": claude_effort(a.effort)}),
        );
        output_config = true;
        remove(&mut m, &["top_k"]);
    } else if thinking && models::claude_budgeted_thinking(model) {
        // 3. Budgeted thinking.
        let budget = match a.effort {
            ReasoningEffort::Min => CLAUDE_MIN_BUDGET,
            ReasoningEffort::Low => share(max, 10),
            ReasoningEffort::Medium => share(max, 25),
            ReasoningEffort::High => share(max, 50),
            _ => share(max, 95),
        };
        let mut budget = budget.max(CLAUDE_MIN_BUDGET);
        if !a.stream {
            budget = budget.min(CLAUDE_UNSTREAMED_BUDGET);
        }
        m.insert(
            "thinking".into(),
            json!({"type": "enabled", "budget_tokens": budget}),
        );
        if max <= CLAUDE_MIN_BUDGET {
            m.insert("max_tokens".into(), (max + CLAUDE_MIN_BUDGET).into());
        }
        remove(&mut m, &["temperature", "top_p", "top_k"]);
    }
    // 4. Verbosity.
    if !output_config && a.verbosity != Verbosity::Auto && models::claude_verbosity(model) {
        m.insert(
            "output_config".into(),
            json!({"effort": a.verbosity.as_str()}),
        );
    }
    m
}

fn google(model: &str, a: &Asked) -> Map<String, Value> {
    let mut m = Map::new();
    put(&mut m, "maxOutputTokens", a.max_tokens);
    put(&mut m, "temperature", a.temperature);
    put(&mut m, "topP", a.top_p);
    put(&mut m, "topK", a.top_k.filter(|k| *k > 0));
    put(&mut m, "seed", a.seed.filter(|s| *s >= 0));
    let Some(family) = models::gemini_thinking(model) else {
        return m;
    };
    let mut config = Map::new();
    let mut include = a.include_reasoning;
    use GeminiThinking::*;
    use ReasoningEffort::*;
    match family {
        Gemini3Pro | Gemini3Flash => {
            let level = match (family, a.effort) {
                (_, Auto) => None,
                (Gemini3Pro, Min | Low | Medium) => Some("low"),
                (Gemini3Pro, _) => Some("high"),
                (_, Min) => Some("minimal"),
                (_, Max) => Some("high"),
                (_, e) => Some(e.as_str()),
            };
            put(&mut config, "thinkingLevel", level);
        }
        FlashLite | Flash | Pro => {
            let (lo, hi) = match family {
                FlashLite => (512, 24576),
                Flash => (0, 24576),
                _ => (128, 32768),
            };
            let scaled = |percent: i64| a.max_tokens.map(|max| share(max, percent).clamp(lo, hi));
            let budget = match a.effort {
                Auto => Some(-1),
                Min => Some(if family == Pro { 128 } else { 0 }),
                Low => scaled(10),
                Medium => scaled(25),
                High => scaled(50),
                Max => scaled(100),
            };
            if budget == Some(0) {
                include = false;
            }
            put(&mut config, "thinkingBudget", budget);
        }
    }
    config.insert("includeThoughts".into(), include.into());
    m.insert("thinkingConfig".into(), Value::Object(config));
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::provider::Tri;

    fn opts(effort: ReasoningEffort, max: Option<i64>) -> ProviderOptions {
        ProviderOptions {
            reasoning_effort: effort.into(),
            max_tokens: max.map_or(Tri::Unset, Tri::Value),
            ..ProviderOptions::default()
        }
    }

    #[test]
    fn gemini_budgets_scale_and_clamp() {
        let budget = |model: &str, e, max| {
            let f = fields(Shape::Google, model, &opts(e, max));
            f["generationConfig"]["thinkingConfig"]["thinkingBudget"].clone()
        };
        use ReasoningEffort::*;
        assert_eq!(budget("gemini-2.5-flash-lite", Low, Some(1000)), 512);
        assert_eq!(budget("gemini-2.5-flash", Max, Some(1_000_000)), 24576);
        assert_eq!(budget("gemini-2.5-pro", Max, Some(1_000_000)), 32768);
        assert_eq!(budget("gemini-2.5-pro", Min, None), 128);
        assert_eq!(budget("gemini-2.5-pro", High, None), Value::Null);
        assert_eq!(budget("gemini-2.5-pro", Auto, None), -1);
    }

    #[test]
    fn claude_budget_never_overflows() {
        let f = fields(
            Shape::Anthropic,
            "claude-sonnet-4-5",
            &opts(ReasoningEffort::Max, Some(i64::MAX)),
        );
        assert_eq!(f["thinking"]["budget_tokens"], CLAUDE_UNSTREAMED_BUDGET);
    }

    #[test]
    fn model_is_written_only_when_named() {
        let o = ProviderOptions::default();
        assert!(fields(Shape::OpenAi, "", &o).is_empty());
        assert_eq!(fields(Shape::Anthropic, "", &o)["max_tokens"], 300);
        assert!(fields(Shape::Google, "gemini-2.0-flash", &o).is_empty());
    }
}
