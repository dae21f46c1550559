//! Text helpers of the evaluator: case folding for host lookups, trimming and T.

use std::borrow::Cow;

/// `s` in ASCII lower case, borrowed when it already is (host lookups use lower-case names).
pub(crate) fn ascii_lower(s: &str) -> Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        Cow::Owned(s.to_ascii_lowercase())
    } else {
        Cow::Borrowed(s)
    }
}

/// Trims `s` in place (Unicode whitespace at both ends), without a second buffer: node texts
/// and branch texts can be large.
pub(crate) fn trim_in_place(s: &mut String) {
    let end = s.trim_end().len();
    s.truncate(end);
    let start = s.len() - s.trim_start().len();
    s.drain(..start);
}

/// T, SillyTavern's `trimScopedContent` (SPEC §11.3): the first non-blank line's indent
/// (spaces and tabs) is removed from every line that has at least that much (others lose all
/// their leading whitespace), then the whole is trimmed. Without indent it is a plain trim.
/// One pass over the text.
pub(crate) fn auto_trim(s: &str) -> Cow<'_, str> {
    let Some(first) = s.split('\n').find(|l| !l.trim().is_empty()) else {
        return Cow::Borrowed("");
    };
    let base = first
        .bytes()
        .take_while(|b| matches!(b, b' ' | b'\t'))
        .count();
    if base == 0 {
        return Cow::Borrowed(s.trim());
    }
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let indent = line
            .bytes()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        if indent >= base {
            out.push_str(&line[base..]);
        } else {
            out.push_str(line.trim_start());
        }
    }
    trim_in_place(&mut out);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auto_trim_dedents_by_the_first_indent() {
        assert_eq!(
            auto_trim("\n  # Title\n    - a\n  Body\n"),
            "# Title\n  - a\nBody"
        );
        assert_eq!(auto_trim("  then  "), "then");
        assert_eq!(auto_trim("\n \t\n"), "");
        assert_eq!(auto_trim(""), "");
        assert_eq!(auto_trim("x\n    y"), "x\n    y");
        assert_eq!(auto_trim("    a\n  b\n\tc"), "a\nb\nc");
    }
}
