//! Lone UTF-16 surrogates in input: half an emoji, which any chat participant can send.
//!
//! JavaScript and Python strings may hold one; JSON writes it as an escape (`"\ud83d"`), and
//! Python's `surrogatepass` as three bytes (`ED A0 BD`, "WTF-8"). serde_json and Rust strings
//! refuse both, so without this one message would break every render of its chat until it
//! left the history. The rule (issue 20, every front end): each lone surrogate becomes U+FFFD,
//! with one info diagnostic per input, and the render goes on.

use std::borrow::Cow;

use crate::diagnostic::{Diagnostic, DiagnosticKind};

/// JSON text as a `str`, with every lone surrogate replaced by U+FFFD (escapes by `\ufffd`,
/// raw bytes by its UTF-8), and how many were replaced; `Err(offset)` of the first byte that is
/// not UTF-8 even then. The common text, valid UTF-8 without a `\u`, costs one UTF-8 check
/// and one scan, and is borrowed (the readers need no second check).
pub(crate) fn json_text(bytes: &[u8]) -> Result<(Cow<'_, str>, usize), usize> {
    let utf8 = std::str::from_utf8(bytes);
    let escapes = memchr::memmem::find(bytes, b"\\u").is_some();
    if let (Ok(text), false) = (utf8, escapes) {
        return Ok((Cow::Borrowed(text), 0));
    }
    let (out, at) = repair_json_within(bytes, utf8.is_err(), escapes);
    let text = match (out, utf8) {
        // Nothing replaced in valid UTF-8: the text checked above.
        (Cow::Borrowed(_), Ok(text)) => Cow::Borrowed(text),
        (Cow::Borrowed(b), Err(_)) => {
            Cow::Borrowed(std::str::from_utf8(b).map_err(|e| e.valid_up_to())?)
        }
        (Cow::Owned(v), _) => {
            Cow::Owned(String::from_utf8(v).map_err(|e| e.utf8_error().valid_up_to())?)
        }
    };
    Ok((text, at.len()))
}

/// [`repair_json`], with the offset in the returned text of each replacement.
pub(crate) fn repair_json_at(bytes: &[u8]) -> (Cow<'_, [u8]>, Vec<usize>) {
    let wtf8 = std::str::from_utf8(bytes).is_err();
    let escapes = memchr::memmem::find(bytes, b"\\u").is_some();
    repair_json_within(bytes, wtf8, escapes)
}

/// [`repair_json_at`] of `bytes`, which are not UTF-8 (`wtf8`) or hold `\u` (`escapes`).
fn repair_json_within(bytes: &[u8], wtf8: bool, escapes: bool) -> (Cow<'_, [u8]>, Vec<usize>) {
    if !wtf8 && !escapes {
        return (Cow::Borrowed(bytes), Vec::new());
    }
    let mut out: Option<Vec<u8>> = None;
    let mut count = Vec::new();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        // Only quotes, backslashes and (in WTF-8) a surrogate's lead byte change anything:
        // memchr jumps between them (a byte loop over NemoNet's 1 MB of JSON, which escapes
        // its emoji, was a third of importing it).
        let rest = &bytes[i..];
        let skip = match wtf8 {
            true => memchr::memchr3(b'"', b'\\', 0xED, rest),
            false => memchr::memchr2(b'"', b'\\', rest),
        }
        .unwrap_or(rest.len());
        if skip > 0 {
            if let Some(out) = out.as_mut() {
                out.extend_from_slice(&rest[..skip]);
            }
            i += skip;
            continue;
        }
        let b = bytes[i];
        if wtf8
            && b == 0xED
            && bytes
                .get(i + 1)
                .is_some_and(|&c| (0xA0..=0xBF).contains(&c))
        {
            let out = out.get_or_insert_with(|| bytes[..i].to_vec());
            i += wtf8_surrogate(&bytes[i..], out, &mut count);
            continue;
        }
        if in_string && b == b'\\' {
            let unit = |at: usize| {
                let hex = bytes.get(at..at + 6)?;
                if hex[0] != b'\\' || hex[1] != b'u' {
                    return None;
                }
                u16::from_str_radix(std::str::from_utf8(&hex[2..]).ok()?, 16).ok()
            };
            match unit(i) {
                Some(high @ 0xD800..=0xDBFF)
                    if unit(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) =>
                {
                    let _ = high;
                    if let Some(out) = out.as_mut() {
                        out.extend_from_slice(&bytes[i..i + 12]);
                    }
                    i += 12;
                }
                Some(0xD800..=0xDFFF) => {
                    let out = out.get_or_insert_with(|| bytes[..i].to_vec());
                    count.push(out.len());
                    out.extend_from_slice(b"\\ufffd");
                    i += 6;
                }
                _ => {
                    // Any other escape: two bytes (the rest of `\uXXXX` is plain hex).
                    let end = (i + 2).min(bytes.len());
                    if let Some(out) = out.as_mut() {
                        out.extend_from_slice(&bytes[i..end]);
                    }
                    i = end;
                }
            }
            continue;
        }
        if b == b'"' {
            in_string = !in_string;
        }
        if let Some(out) = out.as_mut() {
            out.push(b);
        }
        i += 1;
    }
    match out {
        Some(out) => (Cow::Owned(out), count),
        None => (Cow::Borrowed(bytes), Vec::new()),
    }
}

/// Text (not JSON) with every surrogate written as three bytes replaced by U+FFFD, and how
/// many; other invalid UTF-8 is left for the UTF-8 check to refuse.
pub(crate) fn repair_text(bytes: &[u8]) -> (Cow<'_, [u8]>, usize) {
    if std::str::from_utf8(bytes).is_ok() {
        return (Cow::Borrowed(bytes), 0);
    }
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0xED
            && bytes
                .get(i + 1)
                .is_some_and(|&c| (0xA0..=0xBF).contains(&c))
        {
            i += wtf8_surrogate(&bytes[i..], &mut out, &mut at);
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    (Cow::Owned(out), at.len())
}

/// At a surrogate written as three bytes (`ED A0..BF xx`, `surrogatepass`): a high half
/// followed by a low half is one character written in two halves (as the JSON escapes
/// `\ud83d\ude00` are), and becomes that character; any other half becomes U+FFFD, its
/// offset in `out` recorded. Returns the bytes read.
fn wtf8_surrogate(bytes: &[u8], out: &mut Vec<u8>, at: &mut Vec<usize>) -> usize {
    let unit = |b: &[u8]| -> Option<u32> {
        let [0xED, b1 @ 0xA0..=0xBF, b2 @ 0x80..=0xBF, ..] = *b else {
            return None;
        };
        Some(0xD000 | (u32::from(b1 & 0x3F) << 6) | u32::from(b2 & 0x3F))
    };
    let Some(first) = unit(bytes) else {
        // `ED A0..BF` without a third byte of `80..BF` encodes no surrogate: it is invalid
        // UTF-8 like any other, kept for the UTF-8 check to refuse (docs/hardening.md).
        out.push(bytes[0]);
        return 1;
    };
    if let (high @ 0xD800..=0xDBFF, Some(low @ 0xDC00..=0xDFFF)) =
        (first, bytes.get(3..).and_then(unit))
    {
        let c = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00);
        let mut buf = [0u8; 4];
        out.extend_from_slice(
            char::from_u32(c)
                .unwrap_or(char::REPLACEMENT_CHARACTER)
                .encode_utf8(&mut buf)
                .as_bytes(),
        );
        return 6;
    }
    at.push(out.len());
    out.extend_from_slice("\u{FFFD}".as_bytes());
    3.min(bytes.len())
}

impl Diagnostic {
    /// The note that `count` lone UTF-16 surrogates in `input` (`"the context"`, `"the
    /// preset"`, `"the template"`, ...) were each replaced by U+FFFD. Front ends that repair
    /// strings themselves (a JavaScript or Python string holding one) report it with this.
    ///
    /// ```
    /// let d = stpreset::Diagnostic::lone_surrogates("the context", 2);
    /// assert_eq!(d.kind, stpreset::DiagnosticKind::LoneSurrogate);
    /// assert!(d.message.contains("2 lone UTF-16 surrogates"));
    /// ```
    pub fn lone_surrogates(input: &str, count: usize) -> Diagnostic {
        let what = if count == 1 {
            "1 lone UTF-16 surrogate (half of an emoji or other character)".to_string()
        } else {
            format!("{count} lone UTF-16 surrogates (halves of emoji or other characters)")
        };
        Diagnostic::new(
            DiagnosticKind::LoneSurrogate,
            None,
            format!("{input} had {what}; each was replaced by U+FFFD"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fix(s: &[u8]) -> (String, usize) {
        let (out, at) = repair_json_at(s);
        (String::from_utf8(out.into_owned()).unwrap(), at.len())
    }

    #[test]
    fn lone_halves_become_the_replacement_character_and_pairs_stay() {
        assert_eq!(
            fix(br#"{"a": "x\ud83dy"}"#),
            (r#"{"a": "x\ufffdy"}"#.into(), 1)
        );
        assert_eq!(
            fix(br#"{"a": "\ude00\ud83d"}"#),
            (r#"{"a": "\ufffd\ufffd"}"#.into(), 2)
        );
        assert_eq!(
            fix(br#"{"a": "\ud83d\ude00"}"#),
            (r#"{"a": "\ud83d\ude00"}"#.into(), 0)
        );
        assert_eq!(
            fix(br#"{"a": "\\ud83d", "\ud83d": 1}"#),
            (r#"{"a": "\\ud83d", "\ufffd": 1}"#.into(), 1)
        );
        assert_eq!(
            fix(br#"{"a": "\u00e9\"\ud83d"}"#),
            (r#"{"a": "\u00e9\"\ufffd"}"#.into(), 1)
        );
        // Escapes outside strings are not JSON: left for the reader to refuse.
        assert_eq!(fix(br#"\ud83d"#).1, 0);
        // Cut short: nothing to replace, nothing read past the end.
        assert_eq!(fix(br#"{"a": "\ud8"#).1, 0);
        assert_eq!(fix(b"{\"a\": \"\\").1, 0);
    }

    /// Long plain runs between the bytes that matter are copied whole, before and after
    /// the first replacement; a text with escapes and nothing to replace is the input.
    #[test]
    fn json_text_jumps_between_quotes_and_escapes() {
        let plain = "é plain text, no quotes ".repeat(50);
        let doc =
            format!(r#"{{"a": "{plain}\u00e9", "b": "{plain}\ud83d{plain}", "c": "{plain}"}}"#);
        let (text, n) = json_text(doc.as_bytes()).unwrap();
        assert_eq!(n, 1);
        assert_eq!(text, doc.replacen("\\ud83d", "\\ufffd", 1));
        let clean = format!(r#"{{"a": "{plain}\u00e9\ud83d\ude00"}}"#);
        let (text, n) = json_text(clean.as_bytes()).unwrap();
        assert!(n == 0 && matches!(text, Cow::Borrowed(t) if t == clean));
        let mut wtf8 = format!(r#"{{"a": "{plain}"#).into_bytes();
        wtf8.extend_from_slice(b"\xED\xA0\xBD\"}");
        let (text, n) = json_text(&wtf8).unwrap();
        assert_eq!(
            (text.as_ref(), n),
            (format!("{{\"a\": \"{plain}\u{FFFD}\"}}").as_str(), 1)
        );
        assert_eq!(json_text(b"{\"a\": \"\xFF\\u00e9\"}"), Err(7));
    }

    #[test]
    fn surrogates_as_bytes_become_the_replacement_character() {
        let (out, n) = fix(b"{\"a\": \"x\xED\xA0\xBDy\xED\xB8\x80\"}");
        assert_eq!((out.as_str(), n), ("{\"a\": \"x\u{FFFD}y\u{FFFD}\"}", 2));
        // Two halves of one character, next to each other: the character.
        let (out, n) = fix(b"{\"a\": \"\xED\xA0\xBD\xED\xB8\x80\"}");
        assert_eq!((out.as_str(), n), ("{\"a\": \"\u{1F600}\"}", 0));
        let (text, n) = repair_text(b"\xED\xA0\xBD\xED\xB8\x80!\xED\xB8\x80");
        assert_eq!((text.as_ref(), n), ("\u{1F600}!\u{FFFD}".as_bytes(), 1));
        // Other invalid bytes are left for the UTF-8 check to refuse.
        assert!(repair_json_at(b"\"\xFF\"").1.is_empty());
        assert_eq!(json_text(b"\"\xFF\"").unwrap_err(), 1);
        assert_eq!(
            json_text(br#"{"a": "\ud800"}"#).unwrap(),
            (r#"{"a": "\ufffd"}"#.into(), 1)
        );
        // A surrogate cut short is no surrogate: invalid UTF-8, refused at its first byte.
        assert!(repair_json_at(b"\"\xED\xA0").1.is_empty());
        assert_eq!(json_text(b"\"\xED\xA0\"").unwrap_err(), 1);
        let (text, n) = repair_text(b"\xED\xAD");
        assert_eq!((text.as_ref(), n), (b"\xED\xAD".as_slice(), 0));
        assert!(crate::template::Template::from_bytes(b"\xED\xAD").is_err());
        assert!(crate::template::Template::from_bytes(b"a\xED\xAD\xED\xB8\x80").is_err());
    }
}
