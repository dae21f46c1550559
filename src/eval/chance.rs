//! `random`, `pick` and `roll` (SPEC §3.3, §2.4, §10).

/// Items of `random`/`pick`: several arguments are the items; a single one splits on `,`
/// (`\,` is a literal comma). Items are trimmed and empty ones dropped.
pub(crate) fn items<S: AsRef<str>>(args: &[S]) -> Vec<String> {
    let mut out = Vec::new();
    let mut keep = |s: &str| {
        let t = s.trim();
        if !t.is_empty() {
            out.push(t.to_string());
        }
    };
    match args {
        [one] => {
            let mut cur = String::new();
            let mut chars = one.as_ref().chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '\\' if chars.peek() == Some(&',') => {
                        cur.push(',');
                        chars.next();
                    }
                    ',' => keep(&std::mem::take(&mut cur)),
                    _ => cur.push(c),
                }
            }
            keep(&cur);
        }
        many => many.iter().for_each(|a| keep(a.as_ref())),
    }
    out
}

/// A dice formula: `N` (= 1dN) or `XdY`, `XdY+Z`, `XdY-Z`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Dice {
    pub count: u32,
    pub sides: u32,
    pub modifier: i64,
}

/// Parses a trimmed formula; `None` for anything else (including zero sides).
/// Counts, sides and modifiers beyond the caps are clamped to them.
pub(crate) fn parse_dice(s: &str, caps: (u32, u32, u32)) -> Option<Dice> {
    let num = |d: &str| -> Option<u64> {
        if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        // Saturate: a 40-digit count is just "very many".
        Some(d.parse::<u64>().unwrap_or(u64::MAX))
    };
    let s = s.trim();
    let (count, rest) = match s.find(['d', 'D']) {
        Some(i) => (num(&s[..i])?, &s[i + 1..]),
        None => (1, s),
    };
    let (sides, modifier) = match rest.find(['+', '-']) {
        Some(i) if s.contains(['d', 'D']) => {
            let z = num(&rest[i + 1..])?.min(caps.2 as u64) as i64;
            (num(&rest[..i])?, if &rest[i..=i] == "-" { -z } else { z })
        }
        Some(_) => return None,
        None => (num(rest)?, 0),
    };
    if sides == 0 {
        return None;
    }
    Some(Dice {
        count: count.min(caps.0 as u64) as u32,
        sides: sides.min(caps.1 as u64) as u32,
        modifier,
    })
}

/// 64-bit FNV-1a: a fixed, documented hash so `pick` stays stable across builds and versions.
pub(crate) fn stable_hash(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in *part {
            h ^= b as u64;
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        // Separator so ("ab", "c") and ("a", "bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: (u32, u32, u32) = (100, 1000, 1_000_000);

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn item_forms() {
        assert_eq!(items(&s(&["a, b ,,c"])), s(&["a", "b", "c"]));
        assert_eq!(items(&s(&["a\\,b"])), s(&["a,b"]));
        assert_eq!(items(&s(&["a,b", " c "])), s(&["a,b", "c"]));
        assert!(items(&s(&[", ,"])).is_empty());
        assert!(items::<String>(&[]).is_empty());
    }

    #[test]
    fn dice_forms() {
        let d = |c, s, m| {
            Some(Dice {
                count: c,
                sides: s,
                modifier: m,
            })
        };
        assert_eq!(parse_dice("3d6", CAPS), d(3, 6, 0));
        assert_eq!(parse_dice(" 2D10+5 ", CAPS), d(2, 10, 5));
        assert_eq!(parse_dice("1d4-1", CAPS), d(1, 4, -1));
        assert_eq!(parse_dice("20", CAPS), d(1, 20, 0));
        assert_eq!(parse_dice("0d6", CAPS), d(0, 6, 0));
        assert_eq!(
            parse_dice("999d99999+99999999", CAPS),
            d(100, 1000, 1_000_000)
        );
        for bad in [
            "", "abc", "d6", "1d", "1d0", "0", "1 d6", "1d6+", "6+1", "1d6*2", "-3",
        ] {
            assert_eq!(parse_dice(bad, CAPS), None, "{bad}");
        }
    }

    #[test]
    fn hash_is_fixed() {
        assert_eq!(stable_hash(&[]), 0xcbf2_9ce4_8422_2325);
        assert_ne!(stable_hash(&[b"ab", b"c"]), stable_hash(&[b"a", b"bc"]));
    }
}
