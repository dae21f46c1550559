//! Regex scripts as data (SPEC §13.1): import (`read`), the replacement and find templates
//! (`replace`), and the display text's Markdown converter (`markdown`). Nothing here runs a
//! script: the passes that do live in `passes`, above the evaluator they expand macros with,
//! so that the context can hold script lists without standing above the passes.

pub(crate) mod markdown;
mod read;
pub(crate) mod replace;

pub use markdown::display_markdown;
pub use read::{RegexScript, ScriptSource, Substitute};
pub(crate) use read::{read, read_list};
