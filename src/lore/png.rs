//! The PNG side of card import (SPEC §15.1.2–4): the chunk walk of png-chunks-extract, the
//! `tEXt` reading of png-chunk-text, and Node's lenient base64 decoding of the chosen text.
//!
//! The file comes from a stranger, so the walk borrows every chunk from the input: a declared
//! length is compared with the bytes left before anything is read, nothing is allocated by a
//! declared length, and `IDAT` is never inflated. The one allocation that grows with the input
//! is the decoded JSON, whose size is computed and checked against the limit first.

use super::LoreError;
use crate::limits::Limits;

/// The eight bytes every PNG file starts with.
pub(crate) const SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

/// Whether `bytes` start with the PNG signature (`CardFormat::Auto` reads such a file as PNG).
pub(crate) fn is_png(bytes: &[u8]) -> bool {
    bytes.starts_with(&SIGNATURE)
}

fn invalid(why: impl Into<String>) -> LoreError {
    LoreError::CardPngInvalid(why.into())
}

/// The text of the card's `tEXt` chunk (the first `ccv3`, else the first `chara`), each byte
/// read as Latin-1. Every chunk up to `IEND` is walked and CRC-checked first, as ST's
/// extractor does before anything looks at the text, so a damaged file fails whichever chunk
/// the card is in.
pub(crate) fn card_text(bytes: &[u8], limits: &Limits) -> Result<String, LoreError> {
    let Some(mut rest) = bytes.strip_prefix(&SIGNATURE) else {
        return Err(invalid("not a PNG file (bad signature)"));
    };
    let mut count = 0usize;
    let mut ccv3: Option<&[u8]> = None;
    let mut chara: Option<&[u8]> = None;
    loop {
        if rest.is_empty() {
            return Err(invalid("the file ends without an IEND chunk"));
        }
        // Length and type: ST reads them before it looks for IEND, whose CRC it never reads.
        let Some((length, after)) = rest.split_first_chunk::<4>() else {
            return Err(invalid("the file ends inside a chunk header"));
        };
        let Some((kind, body)) = after.split_first_chunk::<4>() else {
            return Err(invalid("the file ends inside a chunk header"));
        };
        count += 1;
        if count > limits.card_png_max_chunks {
            return Err(LoreError::CardTooLarge(format!(
                "more than {} PNG chunks",
                limits.card_png_max_chunks
            )));
        }
        if count == 1 && kind != b"IHDR" {
            return Err(invalid("the first chunk is not IHDR"));
        }
        if kind == b"IEND" {
            break;
        }
        // The declared length against what is left, before reading anything: a header claiming
        // 4 GiB in a 100-byte file is refused here (u32 fits usize on every target we build).
        let length = u32::from_be_bytes(*length) as usize;
        if body.len() < 4 || length > body.len() - 4 {
            return Err(invalid(format!(
                "a {} chunk declares {length} bytes but only {} are left",
                String::from_utf8_lossy(kind),
                body.len().saturating_sub(4)
            )));
        }
        let (data, tail) = body.split_at(length);
        let Some((crc, tail)) = tail.split_first_chunk::<4>() else {
            return Err(invalid("the file ends inside a chunk's CRC"));
        };
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(kind);
        hasher.update(data);
        if hasher.finalize() != u32::from_be_bytes(*crc) {
            return Err(invalid(format!(
                "the CRC of a {} chunk does not match: the file is damaged",
                String::from_utf8_lossy(kind)
            )));
        }
        if kind == b"tEXt" {
            // png-chunk-text decodes every tEXt chunk (and throws on a second NUL in any of
            // them) before ST picks one, so each is checked whatever its keyword.
            let (keyword, text) = match memchr::memchr(0, data) {
                Some(i) => (&data[..i], &data[i + 1..]),
                None => (data, &data[data.len()..]),
            };
            if memchr::memchr(0, text).is_some() {
                return Err(invalid("a tEXt chunk holds a second NUL byte"));
            }
            // ST lowercases the Latin-1 keyword; no Latin-1 letter lowercases into ASCII, so
            // an ASCII case-insensitive comparison is the same test.
            if ccv3.is_none() && keyword.eq_ignore_ascii_case(b"ccv3") {
                ccv3 = Some(text);
            } else if chara.is_none() && keyword.eq_ignore_ascii_case(b"chara") {
                chara = Some(text);
            }
        }
        rest = tail;
    }
    match ccv3.or(chara) {
        Some(text) => Ok(text.iter().copied().map(char::from).collect()),
        None => Err(LoreError::CardNoMetadata(
            "the PNG has no tEXt chunk named ccv3 or chara (iTXt and zTXt are not read)".into(),
        )),
    }
}

/// A base64 digit's value, or 64 for a byte Node skips. Node accepts both alphabets at once:
/// `+` and `-` are 62, `/` and `_` are 63.
const DIGIT: [u8; 256] = {
    let mut t = [64u8; 256];
    let mut i = 0;
    while i < 26 {
        t[b'A' as usize + i] = i as u8;
        t[b'a' as usize + i] = 26 + i as u8;
        i += 1;
    }
    let mut d = 0;
    while d < 10 {
        t[b'0' as usize + d] = 52 + d as u8;
        d += 1;
    }
    t[b'+' as usize] = 62;
    t[b'-' as usize] = 62;
    t[b'/' as usize] = 63;
    t[b'_' as usize] = 63;
    t
};

/// How many bytes Node's decoding of `text` yields: 3 per whole group of 4 digits before the
/// first `=`, and the whole bytes of a trailing partial group (2 digits → 1, 3 → 2).
fn decoded_len(text: &[u8]) -> usize {
    let digits = text
        .iter()
        .take_while(|&&b| b != b'=')
        .filter(|&&b| DIGIT[usize::from(b)] < 64)
        .count();
    digits / 4 * 3 + [0, 0, 1, 2][digits % 4]
}

/// `Buffer.from(text, 'base64')` as Node 20 decodes it (SPEC §15.1.4): bytes outside both
/// alphabets are skipped, the first `=` ends the data, a trailing partial group yields its
/// whole bytes. The decoded size is computed and checked against `max` before the output is
/// allocated (over it → `CardTooLarge`).
///
/// Hand-written because no base64 crate has these rules: they are strict about padding and
/// alphabet (or, configured to be lenient, still reject stray bytes and data after `=`), and
/// ST cards in the wild rely on Node's leniency (line breaks, both alphabets, junk padding).
pub(crate) fn node_base64(text: &str, max: usize) -> Result<Vec<u8>, LoreError> {
    // Chars above U+007F are never digits, and in UTF-8 each of their bytes is above 0x7F too,
    // so walking the bytes skips exactly the chars Node skips.
    let text = text.as_bytes();
    let size = decoded_len(text);
    if size > max {
        return Err(LoreError::CardTooLarge(format!(
            "the card's JSON is {size} bytes, over the limit of {max}"
        )));
    }
    let mut out = Vec::with_capacity(size);
    let mut acc: u32 = 0;
    let mut digits = 0u8;
    for &b in text {
        if b == b'=' {
            break;
        }
        let v = DIGIT[usize::from(b)];
        if v >= 64 {
            continue;
        }
        acc = (acc << 6) | u32::from(v);
        digits += 1;
        if digits == 4 {
            out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]);
            acc = 0;
            digits = 0;
        }
    }
    match digits {
        2 => out.push((acc >> 4) as u8),
        3 => out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]),
        _ => {}
    }
    debug_assert_eq!(out.len(), size);
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A PNG of these chunks, with correct CRCs (the caller puts IHDR first and IEND last).
    pub(crate) fn png(chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
        let mut out = SIGNATURE.to_vec();
        for (kind, data) in chunks {
            out.extend_from_slice(&(data.len() as u32).to_be_bytes());
            out.extend_from_slice(*kind);
            out.extend_from_slice(data);
            let mut h = crc32fast::Hasher::new();
            h.update(*kind);
            h.update(data);
            out.extend_from_slice(&h.finalize().to_be_bytes());
        }
        out
    }

    const IHDR: &[u8] = &[0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0, 0, 0];

    fn text_png(text_chunks: &[(&[u8; 4], &[u8])]) -> Vec<u8> {
        let mut chunks = vec![(b"IHDR", IHDR)];
        chunks.extend_from_slice(text_chunks);
        chunks.push((b"IEND", &[]));
        png(&chunks)
    }

    fn kind(r: Result<String, LoreError>) -> &'static str {
        r.map_or_else(|e| e.kind(), |_| "ok")
    }

    #[test]
    fn picks_ccv3_then_chara_case_insensitively() {
        let file = text_png(&[
            (b"tEXt", b"Chara\0first"),
            (b"tEXt", b"CCV3\0third"),
            (b"tEXt", b"ccv3\0fourth"),
        ]);
        assert_eq!(card_text(&file, &Limits::default()).unwrap(), "third");
        let file = text_png(&[(b"tEXt", b"chara\0a\xe9")]);
        assert_eq!(card_text(&file, &Limits::default()).unwrap(), "a\u{e9}");
    }

    #[test]
    fn a_declared_length_of_4_gib_is_refused_before_reading() {
        let mut file = text_png(&[]);
        // Replace IEND by a chunk header claiming u32::MAX bytes.
        let iend = file.len() - 12;
        file.truncate(iend);
        file.extend_from_slice(&u32::MAX.to_be_bytes());
        file.extend_from_slice(b"tEXt");
        file.extend_from_slice(b"chara\0e30=");
        let err = card_text(&file, &Limits::default()).unwrap_err();
        assert_eq!(err.kind(), "CardPngInvalid");
        assert!(err.to_string().contains("4294967295"), "{err}");
    }

    #[test]
    fn too_many_chunks_is_too_large() {
        let many: Vec<(&[u8; 4], &[u8])> = vec![(b"tEXt", b"x\0y"); 5000];
        assert_eq!(
            kind(card_text(&text_png(&many), &Limits::default())),
            "CardTooLarge"
        );
        let limits = Limits {
            card_png_max_chunks: 3,
            ..Limits::default()
        };
        let three = text_png(&[(b"tEXt", b"chara\0e30")]);
        assert_eq!(kind(card_text(&three, &limits)), "ok");
        let four = text_png(&[(b"tEXt", b"chara\0e30"), (b"tEXt", b"x")]);
        assert_eq!(kind(card_text(&four, &limits)), "CardTooLarge");
    }

    #[test]
    fn itxt_and_ztxt_carry_no_card() {
        let file = text_png(&[
            (b"iTXt", b"chara\0\0\0\0\0e30="),
            (b"zTXt", b"chara\0\0x\x9c\x03\0\0\0\0\x01"),
        ]);
        assert_eq!(kind(card_text(&file, &Limits::default())), "CardNoMetadata");
    }

    #[test]
    fn chunk_faults_are_png_invalid() {
        let good = text_png(&[(b"tEXt", b"chara\0e30=")]);
        // A bad CRC on a chunk after the card's.
        let mut file = text_png(&[(b"tEXt", b"chara\0e30="), (b"IDAT", b"zz")]);
        let crc = file.len() - 12 - 1;
        file[crc] ^= 1;
        assert_eq!(kind(card_text(&file, &Limits::default())), "CardPngInvalid");
        // A second NUL in a chunk that is not the card's.
        let file = text_png(&[(b"tEXt", b"chara\0e30="), (b"tEXt", b"x\0a\0b")]);
        assert_eq!(kind(card_text(&file, &Limits::default())), "CardPngInvalid");
        // No IEND; IEND first; bytes after IEND are ignored; an IEND without its CRC is read.
        let no_iend = &good[..good.len() - 12];
        assert_eq!(
            kind(card_text(no_iend, &Limits::default())),
            "CardPngInvalid"
        );
        let iend_first = png(&[(b"IEND", &[])]);
        assert_eq!(
            kind(card_text(&iend_first, &Limits::default())),
            "CardPngInvalid"
        );
        let mut trailing = good.clone();
        trailing.extend_from_slice(b"anything");
        assert_eq!(kind(card_text(&trailing, &Limits::default())), "ok");
        assert_eq!(
            kind(card_text(&good[..good.len() - 4], &Limits::default())),
            "ok"
        );
    }

    #[test]
    fn truncation_anywhere_is_an_error_not_a_panic() {
        let good = text_png(&[(b"tEXt", b"chara\0e30="), (b"IDAT", b"abc")]);
        for end in 0..good.len() - 4 {
            assert_eq!(
                kind(card_text(&good[..end], &Limits::default())),
                "CardPngInvalid"
            );
        }
    }

    fn b64(text: &str) -> String {
        String::from_utf8_lossy(&node_base64(text, usize::MAX).unwrap()).into_owned()
    }

    #[test]
    fn base64_is_nodes_lenient_decoding() {
        // Outputs checked against Node 20's Buffer.from(text, 'base64').
        assert_eq!(b64("QUJD=="), "ABC");
        assert_eq!(b64("QQ=A"), "A");
        assert_eq!(b64("QUJDRA"), "ABCD");
        assert_eq!(b64("QUJDR"), "ABC");
        assert_eq!(b64("Q"), "");
        assert_eq!(b64("QUI"), "AB");
        assert_eq!(b64("QUJD\nR A=="), "ABCD");
        assert_eq!(b64("=QUJD"), "");
        assert_eq!(b64("Q\u{ff}UJD"), "ABC");
        assert_eq!(b64("ey*JuYW1lIjoiTGVuaWVudCJ9!"), "{\"name\":\"Lenient\"}");
        assert_eq!(node_base64("QU-_", 10).unwrap(), [0x41, 0x4f, 0xbf]);
        assert_eq!(node_base64("QU+/", 10).unwrap(), [0x41, 0x4f, 0xbf]);
    }

    #[test]
    fn base64_over_the_cap_is_refused_before_decoding() {
        assert_eq!(node_base64("QUJDRA", 4).unwrap(), b"ABCD");
        let err = node_base64("QUJDRA", 3).unwrap_err();
        assert_eq!(err.kind(), "CardTooLarge");
        // Skipped bytes and data after `=` do not count.
        assert!(node_base64(&format!("QUJD{}=QUJD", "*".repeat(1000)), 3).is_ok());
        let big = "A".repeat(1 << 20);
        assert_eq!(node_base64(&big, 1000).unwrap_err().kind(), "CardTooLarge");
    }
}
