//! Resource limits (SPEC §8). Every limit lives here, with its SPEC default.

/// Limits that bound the work and memory of parsing and rendering.
///
/// Every field can be raised or lowered, but not past [`Limits::MAX`]: the engine reads
/// limits only through one clamp, so `dice_count = u32::MAX` throws at most
/// `Limits::MAX.dice_count` dice and a huge `tag_nesting` cannot exhaust the stack.
///
/// ```
/// let mut limits = stpreset::Limits::default();
/// limits.block_nesting = 8;
/// let t = stpreset::Template::compile_with(&"{{#if user}}".repeat(9), &limits);
/// let ctx = stpreset::Context::default();
/// assert_eq!(t.render(&ctx).text, "{{#if user}}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Deepest block nesting that renders; deeper openers stay literal (`NestingLimit`).
    pub block_nesting: usize,
    /// Deepest tag nesting inside arguments; deeper tags stay literal (`LimitReached`).
    pub tag_nesting: usize,
    /// Rendered output bytes per render.
    pub output_bytes: usize,
    /// Bytes of one variable value.
    pub variable_bytes: usize,
    /// Bytes of all variable values of a render together (host globals included).
    pub variables_total_bytes: usize,
    /// Bytes evaluation may produce per render before macros render empty.
    pub work_bytes: usize,
    /// Largest preset file accepted.
    pub preset_bytes: usize,
    /// Largest template [`Template::from_bytes`](crate::Template::from_bytes) accepts;
    /// `Template::compile` cuts longer text there with a `LimitReached` diagnostic.
    pub template_bytes: usize,
    /// Most dice one roll may throw.
    pub dice_count: u32,
    /// Most sides a die may have.
    pub dice_sides: u32,
    /// Largest `+Z`/`-Z` modifier.
    pub dice_modifier: u32,
    /// Matcher steps of one regex script run on a text of L UTF-16 units: this plus 4·L²,
    /// up to [`regex_run_steps_max`](Self::regex_run_steps_max) (SPEC §13.6.2).
    pub regex_run_steps: u64,
    /// The most steps one regex script run may take, whatever its text.
    pub regex_run_steps_max: u64,
    /// Matcher steps of all runs of one regex pass together.
    pub regex_pass_steps: u64,
    /// Largest character card file accepted (SPEC §15.8).
    pub card_max_file_bytes: usize,
    /// Largest card JSON, in a file or decoded from a PNG chunk.
    pub card_max_json_bytes: usize,
    /// Most PNG chunks a card may have.
    pub card_png_max_chunks: usize,
    /// Most lorebooks one activation reads.
    pub lore_max_books: usize,
    /// Largest lorebook file accepted.
    pub lore_max_book_bytes: usize,
    /// Most entries of all books of one activation together.
    pub lore_max_entries: usize,
    /// Most keys (primary and secondary each) of one entry.
    pub lore_max_keys: usize,
    /// Longest key, in bytes.
    pub lore_max_key_bytes: usize,
    /// Longest entry content, in bytes.
    pub lore_max_content_bytes: usize,
    /// Most scan passes of one activation.
    pub lore_max_passes: usize,
    /// Regex-key matcher steps of one activation together.
    pub lore_regex_steps: u64,
    /// Plain-key matching steps of one activation together: bytes scanned, plus 32 for each
    /// entry a pass gates and each key it tests, so the passes are bounded too.
    pub lore_plain_steps: u64,
    /// Work units of one render, every stage together (about a nanosecond each on a 2-core
    /// server): the limits above are each stage's share of it (issue 38, `docs/hardening.md`).
    pub render_work: u64,
    /// Work units of one render spent on chat text (the history's regex pass, World Info's
    /// scan of the messages, counting the history's tokens), within `render_work`: what a
    /// chat user's text can make every message cost.
    pub chat_work: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            block_nesting: 32,
            tag_nesting: 64,
            output_bytes: 8 << 20,
            variable_bytes: 1 << 20,
            variables_total_bytes: 8 << 20,
            work_bytes: 64 << 20,
            preset_bytes: 2 << 20,
            template_bytes: 2 << 20,
            dice_count: 100,
            dice_sides: 1000,
            dice_modifier: 1_000_000,
            regex_run_steps: 10_000_000,
            regex_run_steps_max: 100_000_000,
            regex_pass_steps: 300_000_000,
            card_max_file_bytes: 32 << 20,
            card_max_json_bytes: 16 << 20,
            card_png_max_chunks: 4096,
            lore_max_books: 64,
            lore_max_book_bytes: 16 << 20,
            lore_max_entries: 20_000,
            lore_max_keys: 256,
            lore_max_key_bytes: 1 << 10,
            lore_max_content_bytes: 256 << 10,
            lore_max_passes: 128,
            lore_regex_steps: 300_000_000,
            lore_plain_steps: 500_000_000,
            render_work: 800_000_000,
            chat_work: 100_000_000,
        }
    }
}

impl Limits {
    /// The hard maxima: a value above one of these is used as this value. They keep spans
    /// within `u32`, dice sums within `i64`, and memory within a few hundred MiB per render.
    pub const MAX: Limits = Limits {
        block_nesting: 256,
        tag_nesting: 256,
        output_bytes: 256 << 20,
        variable_bytes: 64 << 20,
        variables_total_bytes: 256 << 20,
        work_bytes: 1 << 30,
        preset_bytes: 64 << 20,
        template_bytes: 64 << 20,
        dice_count: 10_000,
        dice_sides: 1_000_000_000,
        dice_modifier: 1_000_000_000,
        regex_run_steps: 10_000_000_000,
        regex_run_steps_max: 10_000_000_000,
        regex_pass_steps: 100_000_000_000,
        card_max_file_bytes: 256 << 20,
        card_max_json_bytes: 256 << 20,
        card_png_max_chunks: 1 << 20,
        lore_max_books: 4096,
        lore_max_book_bytes: 256 << 20,
        lore_max_entries: 1_000_000,
        lore_max_keys: 65_536,
        lore_max_key_bytes: 1 << 20,
        lore_max_content_bytes: 64 << 20,
        lore_max_passes: 4096,
        lore_regex_steps: 100_000_000_000,
        lore_plain_steps: 100_000_000_000,
        render_work: 1_000_000_000_000,
        chat_work: 1_000_000_000_000,
    };

    /// These limits with every field clamped to [`Limits::MAX`]: the one place where limits
    /// are validated. Every consumer reads limits through it.
    ///
    /// ```
    /// let mut l = stpreset::Limits::default();
    /// l.dice_count = u32::MAX;
    /// assert_eq!(l.clamped().dice_count, stpreset::Limits::MAX.dice_count);
    /// ```
    pub fn clamped(&self) -> Limits {
        let m = &Limits::MAX;
        Limits {
            block_nesting: self.block_nesting.min(m.block_nesting),
            tag_nesting: self.tag_nesting.min(m.tag_nesting),
            output_bytes: self.output_bytes.min(m.output_bytes),
            variable_bytes: self.variable_bytes.min(m.variable_bytes),
            variables_total_bytes: self.variables_total_bytes.min(m.variables_total_bytes),
            work_bytes: self.work_bytes.min(m.work_bytes),
            preset_bytes: self.preset_bytes.min(m.preset_bytes),
            template_bytes: self.template_bytes.min(m.template_bytes),
            dice_count: self.dice_count.min(m.dice_count),
            dice_sides: self.dice_sides.min(m.dice_sides),
            dice_modifier: self.dice_modifier.min(m.dice_modifier),
            regex_run_steps: self.regex_run_steps.min(m.regex_run_steps),
            regex_run_steps_max: self.regex_run_steps_max.min(m.regex_run_steps_max),
            regex_pass_steps: self.regex_pass_steps.min(m.regex_pass_steps),
            card_max_file_bytes: self.card_max_file_bytes.min(m.card_max_file_bytes),
            card_max_json_bytes: self.card_max_json_bytes.min(m.card_max_json_bytes),
            card_png_max_chunks: self.card_png_max_chunks.min(m.card_png_max_chunks),
            lore_max_books: self.lore_max_books.min(m.lore_max_books),
            lore_max_book_bytes: self.lore_max_book_bytes.min(m.lore_max_book_bytes),
            lore_max_entries: self.lore_max_entries.min(m.lore_max_entries),
            lore_max_keys: self.lore_max_keys.min(m.lore_max_keys),
            lore_max_key_bytes: self.lore_max_key_bytes.min(m.lore_max_key_bytes),
            lore_max_content_bytes: self.lore_max_content_bytes.min(m.lore_max_content_bytes),
            lore_max_passes: self.lore_max_passes.min(m.lore_max_passes),
            lore_regex_steps: self.lore_regex_steps.min(m.lore_regex_steps),
            lore_plain_steps: self.lore_plain_steps.min(m.lore_plain_steps),
            render_work: self.render_work.min(m.render_work),
            chat_work: self.chat_work.min(m.chat_work),
        }
    }
}

/// The longest prefix of `s` within `room` bytes that ends on a char boundary.
pub(crate) fn fit(s: &str, room: usize) -> &str {
    if s.len() <= room {
        return s;
    }
    let mut cut = room;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

/// The output limit of one render, spent text by text in output order.
pub(crate) struct OutputBudget {
    left: usize,
}

impl OutputBudget {
    pub fn new(limit: usize) -> Self {
        OutputBudget { left: limit }
    }

    /// Spends `text`'s bytes; the text that crosses the limit is cut at a UTF-8 boundary and
    /// `false` returned: the caller drops everything after it.
    pub fn spend(&mut self, text: &mut String) -> bool {
        if text.len() <= self.left {
            self.left -= text.len();
            return true;
        }
        let keep = fit(text, self.left).len();
        text.truncate(keep);
        self.left = 0;
        false
    }

    /// The bytes left.
    pub fn left(&self) -> usize {
        self.left
    }

    /// Spends `n` bytes written elsewhere within [`left`](Self::left).
    pub fn charge(&mut self, n: usize) {
        self.left = self.left.saturating_sub(n);
    }

    /// [`spend`](Self::spend) for a message part: a borrowed part is cut by re-borrowing.
    pub fn spend_part(&mut self, part: &mut std::borrow::Cow<'_, str>) -> bool {
        use std::borrow::Cow;
        match part {
            Cow::Owned(text) => self.spend(text),
            Cow::Borrowed(text) if text.len() <= self.left => {
                self.left -= text.len();
                true
            }
            Cow::Borrowed(text) => {
                *text = fit(text, self.left);
                self.left = 0;
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_and_spend_respect_char_boundaries() {
        assert_eq!(fit("aé", 2), "a");
        assert_eq!(fit("aé", 3), "aé");
        let mut b = OutputBudget::new(4);
        let mut first = String::from("ab");
        assert!(b.spend(&mut first));
        let mut second = String::from("céd");
        assert!(!b.spend(&mut second));
        assert_eq!(second, "c");
    }
}
