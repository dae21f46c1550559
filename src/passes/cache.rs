//! The prompt pass's cache (SPEC §13.11): results of earlier renders' runs, keyed by the text
//! and by everything else a script's templates can read.

use std::collections::HashMap;
use std::sync::Arc;

use crate::context::Context;
use crate::diagnostic::Diagnostic;

/// Most prompt-pass results a compiled preset keeps (a few histories' worth).
pub(super) const CACHE_ENTRIES: usize = 4096;

/// Prompt-pass runs from earlier renders, by what decides them (SPEC §13.11).
#[derive(Debug, Default)]
pub(super) struct PromptCache {
    pub(super) map: HashMap<CacheKey, Cached, crate::keyhash::KeyHasher>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) struct CacheKey {
    pub(super) text: u128,
    /// Placement, the active script set at the item's depth, and the context values
    /// templates read.
    pub(super) env: u128,
}

#[derive(Debug, Clone)]
pub(super) struct Cached {
    /// `None`: unchanged.
    pub(super) text: Option<Arc<str>>,
    pub(super) diagnostics: Vec<Diagnostic>,
    pub(super) steps: u64,
    /// Bytes of the pass's work budget its expansions spent.
    pub(super) work: u64,
}

/// A hash of every context value a script's template can read besides the history (which
/// impure templates read; they are never cached).
pub(super) fn context_fingerprint(ctx: &Context) -> u128 {
    let mut h = twox_hash::XxHash3_128::new();
    let mut put = |s: &str| {
        h.write(&(s.len() as u64).to_le_bytes());
        h.write(s.as_bytes());
    };
    for s in [
        &ctx.user,
        &ctx.char,
        &ctx.description,
        &ctx.personality,
        &ctx.scenario,
        &ctx.persona,
        &ctx.mes_examples,
        &ctx.mes_examples_raw,
        &ctx.char_version,
        &ctx.char_prompt,
        &ctx.char_instruction,
        &ctx.model,
        &ctx.chat_id,
    ] {
        put(s);
    }
    for list in [&ctx.group, &ctx.group_muted] {
        put(&list.len().to_string());
        list.iter().for_each(|s| put(s));
    }
    for map in [&ctx.variables, &ctx.globals, ctx.host.macros()] {
        put(&map.len().to_string());
        for (k, v) in map {
            put(k);
            put(v);
        }
    }
    put(&format!("{:?}", ctx.options.limits));
    h.finish_128()
}
