//! JavaScript's string semantics where SillyTavern's behaviour depends on them (leaf): what
//! `trim` and `\s` call space, and `split` on a case-insensitive tag.

/// What JS `trim` and `\s` see as space: Unicode `White_Space` except U+0085 (Node does not
/// count NEL), plus U+FEFF. Rust's `str::trim` strips U+0085 and keeps U+FEFF.
pub(crate) fn js_space(c: char) -> bool {
    (c.is_whitespace() && c != '\u{85}') || c == '\u{feff}'
}

/// ECMAScript `String.prototype.trim`.
pub(crate) fn js_trim(s: &str) -> &str {
    s.trim_matches(js_space)
}

/// `text` split on every ASCII case-insensitive occurrence of `tag` (ASCII, non-empty), as JS
/// `split(/TAG/gi)` without the `u` flag: `<START>` example separators, `{{original}}`.
pub(crate) fn split_ascii_ci<'t>(text: &'t str, tag: &str) -> Vec<&'t str> {
    let (b, t) = (text.as_bytes(), tag.as_bytes());
    let mut pieces = Vec::new();
    let (mut last, mut i) = (0, 0);
    while i + t.len() <= b.len() {
        if b[i..i + t.len()].eq_ignore_ascii_case(t) {
            // An ASCII tag starts and ends on char boundaries.
            pieces.push(&text[last..i]);
            i += t.len();
            last = i;
        } else {
            i += 1;
        }
    }
    pieces.push(&text[last..]);
    pieces
}

/// JavaScript truthiness of a JSON value (`if (x)`): what SillyTavern tests `enabled`,
/// `is_user`, `is_system` with.
pub(crate) fn js_truthy(v: Option<&serde_json::Value>) -> bool {
    use serde_json::Value;
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}
