//! The SillyTavern layout's request body (notes rules 48–54): the client's post-steps
//! (empty messages dropped, `squash_system_messages`), then the server's: post-processing and
//! the per-source converters, through the provider module with ST's own defaults
//! (`use_sysprompt` false, blank messages kept for Claude).

use serde_json::Value;

use super::StExtra;
use crate::diagnostic::Diagnostic;
use crate::provider::{self, ChatMessage, Names, ProviderOptions, Tri};

/// The body ST's server posts for these messages (`names`: each one's `name`), with the
/// preset's options under the host's `options`.
pub(crate) fn body(
    messages: &[crate::assemble::Message<'_>],
    st: &StExtra,
    preset: &ProviderOptions,
    options: &ProviderOptions,
    names: &Names,
    model: &str,
) -> (Value, Vec<Diagnostic>) {
    let messages: Vec<ChatMessage> = messages
        .iter()
        .enumerate()
        .map(|(i, m)| ChatMessage {
            name: st.names.get(i).cloned().flatten().map(String::from),
            keep_apart: m.source.keeps_apart(),
            ..ChatMessage::new(m.role, m.text().into_owned())
        })
        .collect();
    let mut options = crate::settings::resolve::overlay(options, preset, model);
    // ST's `use_sysprompt` is off unless the preset or the host turns it on (SPEC §17.3.6).
    if matches!(options.use_system_prompt, Tri::Unset) {
        options.use_system_prompt = Tri::Value(false);
    }
    options.keep_blank = true;
    provider::request(&messages, &options, names, model)
}
