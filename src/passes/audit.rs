//! The audit's findings about a preset's scripts (SPEC §13.7), found without running a pass.

use super::run::deep;
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::pattern;
use crate::scripts::{RegexScript, Substitute};
/// The audit's findings about scripts (SPEC §13.7): patterns that do not compile (those
/// written without macros), depth bounds a plain script never meets, and entries no pass can
/// run. `RegexScriptInvalid` comes with the import.
pub(crate) fn audit(scripts: &[RegexScript], out: &mut Vec<Diagnostic>) {
    deep(|| audit_inner(scripts, out));
}

fn audit_inner(scripts: &[RegexScript], out: &mut Vec<Diagnostic>) {
    let mut budget = pattern::Cost::TOTAL;
    for s in scripts {
        let at = |kind, message: String| {
            Diagnostic::new(kind, None, format!("{}{message}", s.label()))
                .for_script(Some(s.position))
        };
        if s.disabled {
            continue;
        }
        if s.substitute == Substitute::None
            && !s.find_regex.is_empty()
            && let Err(e) = pattern::compile_within(&s.find_regex, &mut budget)
        {
            out.push(at(
                DiagnosticKind::RegexInvalid,
                format!(
                    "the pattern is invalid ({}); the script does nothing",
                    crate::diagnostic::excerpt(&e)
                ),
            ));
        }
        let plain = !s.markdown_only && !s.prompt_only;
        let bounded =
            s.min_depth.is_some_and(|d| d >= 1.0) || s.max_depth.is_some_and(|d| d >= 0.0);
        if plain && bounded {
            out.push(at(
                DiagnosticKind::RegexDepthIgnored,
                "a depth bound on a script that runs when messages are stored, where there is                  no depth: it runs on every message (mark it prompt-only or display-only to                  bound it)"
                    .into(),
            ));
        }
        let places = s.placement.iter().any(|p| matches!(p, 1 | 2 | 5));
        let only_lore = s.placement.iter().all(|p| *p == 5) && !s.prompt_only;
        let why = if s.find_regex.is_empty() {
            Some("its pattern is empty")
        } else if !places {
            Some("no placement among 1 (user input), 2 (model output) and 5 (world info)")
        } else if only_lore {
            Some("world info is regexed only in the prompt pass, and it is not prompt-only")
        } else {
            None
        };
        if let Some(why) = why {
            out.push(at(
                DiagnosticKind::RegexNeverRuns,
                format!("no pass can run it: {why}"),
            ));
        }
    }
}
