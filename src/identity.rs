//! The identity pass over host text (SPEC §2.3.2): `{user}`/`{char}`/`{bot}` (lower-case, not
//! inside a brace run) and `{{user}}`/`{{ Char }}` (any case, inner whitespace). Used by the
//! evaluator (host values) and the assembler (host items).

use std::borrow::Cow;

/// Identity placeholder names, as they appear between braces.
pub(crate) fn identity<'a>(key: &str, user: &'a str, char: &'a str) -> Option<&'a str> {
    match key {
        "user" => Some(user),
        "char" | "bot" => Some(char),
        _ => None,
    }
}

/// Converts identity placeholders in host-supplied text. Returns the input when it has none.
pub(crate) fn convert_identities<'t>(text: &'t str, user: &str, char: &str) -> Cow<'t, str> {
    let bytes = text.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while let Some(off) = bytes[i..].iter().position(|&b| b == b'{') {
        let at = i + off;
        if let Some((end, name)) = double_brace(bytes, at)
            .and_then(|(end, key)| Some((end, identity_ci(&text[key.0..key.1], user, char)?)))
        {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push_str(name);
            copied = end;
            i = end;
            continue;
        }
        if let Some((end, name)) = single_brace(bytes, at)
            .and_then(|end| Some((end, identity(&text[at + 1..end - 1], user, char)?)))
        {
            let o = out.get_or_insert_with(|| String::with_capacity(text.len()));
            o.push_str(&text[copied..at]);
            o.push_str(name);
            copied = end;
            i = end;
            continue;
        }
        i = at + 1;
    }
    match out {
        Some(mut o) => {
            o.push_str(&text[copied..]);
            Cow::Owned(o)
        }
        None => Cow::Borrowed(text),
    }
}

fn identity_ci<'a>(key: &str, user: &'a str, char: &'a str) -> Option<&'a str> {
    if key.eq_ignore_ascii_case("user") {
        Some(user)
    } else if key.eq_ignore_ascii_case("char") || key.eq_ignore_ascii_case("bot") {
        Some(char)
    } else {
        None
    }
}

/// `{{ name }}` at `at`: returns the end and the name's byte range.
fn double_brace(b: &[u8], at: usize) -> Option<(usize, (usize, usize))> {
    if b.get(at + 1) != Some(&b'{') {
        return None;
    }
    let mut i = at + 2;
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    let start = i;
    while b.get(i).is_some_and(u8::is_ascii_alphabetic) {
        i += 1;
    }
    let end = i;
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    (b.get(i) == Some(&b'}') && b.get(i + 1) == Some(&b'}')).then_some((i + 2, (start, end)))
}

/// `{name}` at `at`, not preceded by `{` nor followed by `}`: returns the end.
fn single_brace(b: &[u8], at: usize) -> Option<usize> {
    if at > 0 && b[at - 1] == b'{' {
        return None;
    }
    let mut i = at + 1;
    while b
        .get(i)
        .is_some_and(|c| !matches!(c, b'{' | b'}' | b'\\') && !c.is_ascii_whitespace())
    {
        i += 1;
    }
    (i > at + 1 && b.get(i) == Some(&b'}') && b.get(i + 1) != Some(&b'}')).then_some(i + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(s: &str) -> String {
        convert_identities(s, "Alice", "Tomori").into_owned()
    }

    #[test]
    fn single_and_double_braces() {
        assert_eq!(
            conv("{user} and {char} and {bot}"),
            "Alice and Tomori and Tomori"
        );
        assert_eq!(
            conv("{{user}} is {{ Char }}'s {{BOT}}"),
            "Alice is Tomori's Tomori"
        );
        assert_eq!(
            conv("{User} {{user} {user}} {{{user}}}"),
            "{User} {{user} {user}} {Alice}"
        );
        assert_eq!(conv("{{ someone }} {x}"), "{{ someone }} {x}");
        assert!(matches!(
            convert_identities("plain", "A", "B"),
            Cow::Borrowed(_)
        ));
    }
}
