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

/// SillyTavern's `getStringHash` (utils.js, cyrb53) over the UTF-16 code units of `s`: a
/// 53-bit hash. Seeds its `{{pick}}` (SPEC §17.3.7).
pub(crate) fn st_string_hash(s: &str) -> u64 {
    let (mut h1, mut h2) = (0xdead_beef_u32, 0x41c6_ce57_u32);
    for ch in s.encode_utf16() {
        let ch = u32::from(ch);
        h1 = (h1 ^ ch).wrapping_mul(2_654_435_761);
        h2 = (h2 ^ ch).wrapping_mul(1_597_334_677);
    }
    h1 = (h1 ^ (h1 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h2 ^ (h2 >> 13)).wrapping_mul(3_266_489_909);
    h2 = (h2 ^ (h2 >> 16)).wrapping_mul(2_246_822_507)
        ^ (h1 ^ (h1 >> 13)).wrapping_mul(3_266_489_909);
    4_294_967_296 * u64::from(2_097_151 & h2) + u64::from(h1)
}

/// The first number seedrandom 3.0.5 (`seedrandom(seed)`, its ARC4 generator, RC4-drop[256])
/// gives for a string seed: what SillyTavern's `{{pick}}` draws. Written out because it is
/// 40 lines of a JavaScript library no Rust crate reproduces bit for bit.
pub(crate) fn seedrandom_first(seed: &str) -> f64 {
    const WIDTH: u32 = 256;
    const MASK: usize = 255;
    // mixkey: the key bytes from the seed's UTF-16 units (`smear` folds in longer seeds).
    let mut key: Vec<Option<u32>> = Vec::new();
    let mut smear: i32 = 0;
    for (j, ch) in seed.encode_utf16().enumerate() {
        let k = j & MASK;
        if key.len() <= k {
            key.resize(k + 1, None);
        }
        // `key[k] * 19` is NaN while the slot is unset, and `smear ^= NaN` leaves it.
        if let Some(prev) = key[k] {
            smear ^= (prev as i32).wrapping_mul(19);
        }
        key[k] = Some((smear.wrapping_add(i32::from(ch)) as u32) & MASK as u32);
    }
    let mut key: Vec<u32> = key.into_iter().map(|k| k.unwrap_or(0)).collect();
    if key.is_empty() {
        key.push(0);
    }
    // ARC4 key schedule.
    let mut s: Vec<u32> = (0..WIDTH).collect();
    let mut j = 0usize;
    for i in 0..WIDTH as usize {
        let t = s[i];
        j = MASK & (j + key[i % key.len()] as usize + t as usize);
        s[i] = s[j];
        s[j] = t;
    }
    let (mut i, mut jj) = (0usize, 0usize);
    let mut g = |count: u32, s: &mut Vec<u32>| -> f64 {
        let mut r = 0f64;
        for _ in 0..count {
            i = MASK & (i + 1);
            let t = s[i];
            jj = MASK & (jj + t as usize);
            s[i] = s[jj];
            s[jj] = t;
            r = r * f64::from(WIDTH) + f64::from(s[MASK & (s[i] as usize + t as usize)]);
        }
        r
    };
    g(WIDTH, &mut s);
    // prng(): 52 significant bits from six bytes and more.
    let significance = 2f64.powi(52);
    let overflow = significance * 2.0;
    let mut n = g(6, &mut s);
    let mut d = 256f64.powi(6);
    let mut x = 0f64;
    while n < significance {
        n = (n + x) * f64::from(WIDTH);
        d *= f64::from(WIDTH);
        x = g(1, &mut s);
    }
    while n >= overflow {
        n /= 2.0;
        d /= 2.0;
        x = ((x as u64) >> 1) as f64;
    }
    (n + x) / d
}

#[cfg(test)]
mod st_tests {
    use super::*;

    #[test]
    fn sillytavern_hash_and_seedrandom() {
        // Values from SillyTavern's utils.js `getStringHash` and seedrandom 3.0.5 in Node.
        assert_eq!(st_string_hash(""), 3_338_908_027_751_811);
        assert_eq!(st_string_hash("hello"), 4_625_896_200_565_286);
        assert_eq!(st_string_hash("héllo 😀"), 3_084_878_568_474_421);
        for (seed, want) in [
            ("hello.", 0.9282578795792454),
            ("12345", 0.20703519639616447),
            ("", 0.23144008215179881),
            (&"x".repeat(300)[..], 0.952495823023581),
        ] {
            assert_eq!(seedrandom_first(seed), want, "{seed}");
        }
    }
}
