//! Precedence (SPEC §14.3) and the §12 defaults a preset supplies (§14.5): the context's
//! explicit value wins over its `preset_settings` edit, which wins over the preset file, which
//! wins over the default. The preset's contribution is written as a [`ProviderOptions`] of its
//! own, so one overlay serves every option.

use serde::Serialize;

use super::{PresetSettings, PresetSettingsUse};
use crate::options::Budget;
use crate::provider::{self, PostProcessing, ProviderOptions, Shape, Tri};

/// The §12 options a render and its request use once the preset's settings are applied (SPEC
/// §14.3 "Observable"): `render --format json` prints them under `"effective"`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct EffectiveOptions {
    // Fields in byte order of their names: the JSON keys are sorted (SPEC §16).
    /// The Anthropic prefill (a preset's rendered, a context's verbatim).
    pub assistant_prefill: String,
    /// The history budget's window (`None`: no budget).
    pub max_context_tokens: Option<u32>,
    /// Post-processing mode (aliases normalised).
    #[serde(serialize_with = "mode_name")]
    pub post_processing: PostProcessing,
    /// Tokens the budget keeps free.
    pub reserve_tokens: u32,
    /// Squash consecutive system messages.
    pub squash_system: bool,
    /// Provider system prompt fields.
    pub use_system_prompt: bool,
}

fn mode_name<S: serde::Serializer>(m: &PostProcessing, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(m.as_str())
}

fn tri<T: Clone>(v: &Option<T>) -> Tri<T> {
    v.clone().map_or(Tri::Unset, Tri::Value)
}

/// The preset's contribution to a request, as options (SPEC §14.2 "ours" column): sampling,
/// max tokens, seed, effort, verbosity and the §12 defaults. Host-only settings (`n`,
/// `stream_openai`, `show_thoughts`) and the not-applied ones contribute nothing. `prefill` is
/// the preset's `assistant_prefill` as rendered (SPEC §14.5).
pub(crate) fn preset_options(s: &PresetSettings, prefill: Option<String>) -> ProviderOptions {
    ProviderOptions {
        temperature: tri(&s.temperature),
        top_p: tri(&s.top_p),
        top_k: tri(&s.top_k),
        frequency_penalty: tri(&s.frequency_penalty),
        presence_penalty: tri(&s.presence_penalty),
        max_tokens: tri(&s.openai_max_tokens),
        seed: tri(&s.seed),
        reasoning_effort: tri(&s.reasoning_effort),
        verbosity: tri(&s.verbosity),
        squash_system: tri(&s.squash_system_messages),
        use_system_prompt: tri(&s.use_sysprompt),
        post_processing: tri(&s.custom_prompt_post_processing),
        assistant_prefill: tri(&prefill),
        ..ProviderOptions::default()
    }
}

/// `context` over `preset`: each tri-state option the context left unset takes the preset's
/// value; `null` stays unset (the default). A preset's temperature is capped for the shape and
/// model (SPEC §14.4); the context's is sent as given.
pub(crate) fn overlay(
    context: &ProviderOptions,
    preset: &ProviderOptions,
    model: &str,
) -> ProviderOptions {
    fn pick<T: Clone>(c: &Tri<T>, p: &Tri<T>) -> Tri<T> {
        match c {
            Tri::Unset => p.clone(),
            Tri::Null => Tri::Unset,
            v => v.clone(),
        }
    }
    let mut o = context.clone();
    let cap = match context.shape.unwrap_or_default() {
        Shape::Anthropic => 1.0,
        Shape::Google if provider::gemini_low_temperature(model) => 1.0,
        _ => 2.0,
    };
    o.temperature = match (&context.temperature, &preset.temperature) {
        (Tri::Unset, Tri::Value(t)) => Tri::Value(t.min(cap)),
        (c, p) => pick(c, p),
    };
    o.top_p = pick(&context.top_p, &preset.top_p);
    o.top_k = pick(&context.top_k, &preset.top_k);
    o.frequency_penalty = pick(&context.frequency_penalty, &preset.frequency_penalty);
    o.presence_penalty = pick(&context.presence_penalty, &preset.presence_penalty);
    o.max_tokens = pick(&context.max_tokens, &preset.max_tokens);
    o.seed = pick(&context.seed, &preset.seed);
    o.reasoning_effort = pick(&context.reasoning_effort, &preset.reasoning_effort);
    o.verbosity = pick(&context.verbosity, &preset.verbosity);
    o.squash_system = pick(&context.squash_system, &preset.squash_system);
    o.use_system_prompt = pick(&context.use_system_prompt, &preset.use_system_prompt);
    o.post_processing = pick(&context.post_processing, &preset.post_processing);
    o.assistant_prefill = pick(&context.assistant_prefill, &preset.assistant_prefill);
    o
}

/// The history budget's window and reserve (SPEC §14.5): the context's `max_context_tokens`,
/// else the preset's `openai_max_context`; the reserve is the context's, else — only when the
/// window came from the preset — the effective max tokens (the context's `max_tokens`, else the
/// preset's `openai_max_tokens`), else 0.
///
/// With `provider_options.cap_to_model` and a model the table knows (issue 39): the window is
/// at most the model's, and a window the context set without a reserve keeps the reply's
/// (the effective max tokens, at most the model's output), as a preset's window does; a
/// reserve from the preset is at most the model's output too. [`window_note`] says when the
/// window was cut.
pub(crate) fn budget(
    context: &Budget,
    options: &ProviderOptions,
    preset: Option<&PresetSettings>,
    model: &str,
) -> (Option<u32>, u32) {
    let from_preset = |v: Option<i64>| v.and_then(|v| u32::try_from(v).ok());
    let preset_window = preset.and_then(|p| from_preset(p.openai_max_context));
    let (window, window_from_preset) = match context.max_context_tokens {
        Tri::Value(w) => (Some(w), false),
        Tri::Null => (None, false),
        Tri::Unset => (preset_window, preset_window.is_some()),
    };
    let reply = || {
        let preset_max = preset.and_then(|p| p.openai_max_tokens);
        from_preset(options.max_tokens.or(preset_max.as_ref()).copied()).unwrap_or(0)
    };
    let limits = options
        .cap_to_model
        .then(|| crate::provider::model_limits(model))
        .flatten();
    let reserve = match (context.reserve_tokens, limits) {
        (Tri::Value(r), _) => r,
        (Tri::Null, _) => 0,
        (Tri::Unset, Some(l)) if window.is_some() => reply().min(l.output),
        (Tri::Unset, _) if window_from_preset => reply(),
        (Tri::Unset, _) => 0,
    };
    let window = match limits {
        Some(l) => window.map(|w| w.min(l.window)),
        None => window,
    };
    (window, reserve)
}

/// The `ModelLimit` warning of a window [`budget`] cut to the model's (issue 39): the model,
/// the window asked and the one used.
pub(crate) fn window_note(
    context: &Budget,
    options: &ProviderOptions,
    preset: Option<&PresetSettings>,
    model: &str,
) -> Option<crate::diagnostic::Diagnostic> {
    // Nothing is cut without the switch: a render pays for this only when it is on.
    if !options.cap_to_model {
        return None;
    }
    let used = budget(context, options, preset, model).0?;
    let uncapped = ProviderOptions {
        cap_to_model: false,
        ..options.clone()
    };
    let asked = budget(context, &uncapped, preset, model).0?;
    (asked > used).then(|| {
        crate::diagnostic::Diagnostic::new(
            crate::diagnostic::DiagnosticKind::ModelLimit,
            None,
            format!(
                "model `{}` has a window of {used} tokens: the history budget's window {asked} \
                 asked, {used} used",
                crate::diagnostic::excerpt(model)
            ),
        )
    })
}

/// The settings that apply (SPEC §14.3): the preset's, none, or the preset's with the
/// context's edits.
pub(crate) fn applied<'s>(
    settings: &'s PresetSettings,
    using: &PresetSettingsUse,
) -> Option<std::borrow::Cow<'s, PresetSettings>> {
    use std::borrow::Cow;
    match using {
        PresetSettingsUse::Ignore => None,
        PresetSettingsUse::Edit(edit) => {
            let mut s = settings.clone();
            s.edit(&edit.0);
            Some(Cow::Owned(s))
        }
        _ => Some(Cow::Borrowed(settings)),
    }
}

/// The preset's contribution as request options (its prefill as given), and the effective
/// §12 options with the host's `provider` options, `model` and `budget`.
pub(crate) fn resolved(
    settings: Option<&PresetSettings>,
    prefill: Option<String>,
    provider: &ProviderOptions,
    model: &str,
    budget: &Budget,
) -> (ProviderOptions, EffectiveOptions) {
    let preset = settings.map_or_else(ProviderOptions::default, |s| preset_options(s, prefill));
    let options = overlay(provider, &preset, model);
    let window = self::budget(budget, provider, settings, model);
    let effective = effective(&options, window);
    (preset, effective)
}

/// What one render makes of the preset's settings and the host's options (SPEC §14.3–§14.5),
/// worked out once and passed down the render: the settings that apply (the preset's, none,
/// or the preset's with the context's edits), the preset's contribution as request options,
/// the effective §12 options, and the `ModelLimit` note of a capped window.
#[derive(Debug)]
pub(crate) struct Resolution<'s> {
    settings: Option<std::borrow::Cow<'s, PresetSettings>>,
    /// The preset's contribution (its prefill once the render has rendered it).
    pub preset: ProviderOptions,
    pub effective: EffectiveOptions,
    /// The window's `ModelLimit` note, for the render to place among its diagnostics.
    pub window_note: Option<crate::diagnostic::Diagnostic>,
}

impl<'s> Resolution<'s> {
    /// `settings` (a preset's; `None` for a lone template) as `using` says, over the host's
    /// `provider` options, `model` and `budget`; no prefill yet.
    pub fn new(
        settings: Option<&'s PresetSettings>,
        using: &PresetSettingsUse,
        provider: &ProviderOptions,
        model: &str,
        budget: &Budget,
    ) -> Resolution<'s> {
        let settings = settings.and_then(|s| applied(s, using));
        let (preset, effective) = resolved(settings.as_deref(), None, provider, model, budget);
        let window_note = window_note(budget, provider, settings.as_deref(), model);
        Resolution {
            settings,
            preset,
            effective,
            window_note,
        }
    }

    /// The settings that apply.
    pub fn settings(&self) -> Option<&PresetSettings> {
        self.settings.as_deref()
    }

    /// The preset's prefill as the render rendered it (SPEC §14.5): the preset's contribution
    /// and the effective options take it (a render without settings has none).
    pub fn set_prefill(
        &mut self,
        prefill: Option<String>,
        provider: &ProviderOptions,
        model: &str,
    ) {
        if self.settings.is_none() {
            return;
        }
        self.preset.assistant_prefill = tri(&prefill);
        let options = overlay(provider, &self.preset, model);
        self.effective.assistant_prefill = options
            .assistant_prefill
            .value()
            .cloned()
            .unwrap_or_default();
    }

    /// §12.4's `available`, the lore budget's context (SPEC §15.4): the window less the
    /// reserve, floored at 0; `None` without a window.
    pub fn available(&self) -> Option<u64> {
        let e = &self.effective;
        e.max_context_tokens
            .map(|max| u64::try_from(i64::from(max) - i64::from(e.reserve_tokens)).unwrap_or(0))
    }
}

/// The observable §12 options of resolved request options and budget.
pub(crate) fn effective(o: &ProviderOptions, budget: (Option<u32>, u32)) -> EffectiveOptions {
    EffectiveOptions {
        squash_system: o.squash_system.value() == Some(&true),
        use_system_prompt: o.use_system_prompt.value() != Some(&false),
        assistant_prefill: o.assistant_prefill.value().cloned().unwrap_or_default(),
        post_processing: o.post_processing.value().copied().unwrap_or_default(),
        max_context_tokens: budget.0,
        reserve_tokens: budget.1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_null_ignores_the_preset_and_unset_takes_it() {
        let preset = ProviderOptions {
            temperature: 1.5.into(),
            top_p: 0.9.into(),
            ..ProviderOptions::default()
        };
        let mut ctx = ProviderOptions {
            shape: Some(Shape::Anthropic),
            top_p: Tri::Null,
            ..ProviderOptions::default()
        };
        let o = overlay(&ctx, &preset, "claude-3-5-haiku");
        assert_eq!(o.temperature, Tri::Value(1.0));
        assert_eq!(o.top_p, Tri::Unset);
        ctx.temperature = 1.5.into();
        assert_eq!(overlay(&ctx, &preset, "").temperature, Tri::Value(1.5));
    }

    #[test]
    fn the_reserve_follows_the_window() {
        let preset = PresetSettings {
            openai_max_context: Some(16000),
            openai_max_tokens: Some(4000),
            ..PresetSettings::default()
        };
        let ctx = Budget::default();
        let none = ProviderOptions::default();
        assert_eq!(budget(&ctx, &none, Some(&preset), ""), (Some(16000), 4000));
        let host_max = ProviderOptions {
            max_tokens: Tri::Null,
            ..ProviderOptions::default()
        };
        assert_eq!(budget(&ctx, &host_max, Some(&preset), ""), (Some(16000), 0));
        assert_eq!(
            budget(&Budget::tokens(32000), &none, Some(&preset), ""),
            (Some(32000), 0)
        );
        assert_eq!(budget(&ctx, &none, None, ""), (None, 0));
    }

    /// Issue 39: with `cap_to_model` the window is at most the model's, and a window the
    /// context sets keeps the reply's reserve (at most the model's output) unless it sets one.
    #[test]
    fn cap_to_model_caps_the_window_and_keeps_the_reserve() {
        let preset = PresetSettings {
            openai_max_context: Some(2_000_000),
            openai_max_tokens: Some(64_000),
            ..PresetSettings::default()
        };
        let cap = ProviderOptions {
            cap_to_model: true,
            ..ProviderOptions::default()
        };
        let l = crate::provider::model_limits("gpt-4.1").unwrap();
        let ctx = Budget::default();
        assert_eq!(
            budget(&ctx, &cap, Some(&preset), "gpt-4.1"),
            (Some(l.window), l.output)
        );
        // A context file's `max_context_tokens` alone (`Budget::tokens` reserves 0 itself).
        let host = Budget {
            max_context_tokens: Tri::Value(200_000),
            ..Budget::default()
        };
        assert_eq!(
            budget(&host, &cap, Some(&preset), "gpt-4.1"),
            (Some(200_000), l.output)
        );
        // Without the switch, SPEC §14.5: the host's window has no reserve.
        let none = ProviderOptions::default();
        assert_eq!(
            budget(&host, &none, Some(&preset), "gpt-4.1"),
            (Some(200_000), 0)
        );
        // The host's own reserve, and an unknown model, are as asked.
        let both = Budget::tokens(200_000).with_reserve(5);
        assert_eq!(
            budget(&both, &cap, Some(&preset), "gpt-4.1"),
            (Some(200_000), 5)
        );
        assert_eq!(
            budget(&ctx, &cap, Some(&preset), "no-such-model"),
            (Some(2_000_000), 64_000)
        );
        assert!(window_note(&ctx, &cap, Some(&preset), "gpt-4.1").is_some());
        assert!(window_note(&host, &cap, Some(&preset), "gpt-4.1").is_none());
    }
}
