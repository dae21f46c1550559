//! Numbers read from text a stranger wrote: SPEC §3.2 numbers (variables, numeric preset
//! settings given as strings) and JSON number lexemes read exactly (SPEC §6 integer fields,
//! SPEC §14.1 integer settings), without f64 rounding and without overflow.

/// A SPEC number: optional sign, digits, optional `.` and digits.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub(crate) fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

/// SPEC §6's integer string, already trimmed by the caller (§6 trims spaces, §14.1 Unicode
/// whitespace): an optional sign and decimal digits, saturated to i64.
pub(crate) fn integer_text(t: &str) -> Option<i64> {
    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Long digit strings saturate instead of failing on overflow.
    let v = digits.parse::<i64>().unwrap_or(i64::MAX);
    Some(if t.starts_with('-') { -v } else { v })
}

pub(crate) fn parse_number(s: &str) -> Option<Num> {
    let t = s.trim();
    let body = t.strip_prefix(['+', '-']).unwrap_or(t);
    let (int, frac) = match body.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (body, None),
    };
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    if !digits(int) || frac.is_some_and(|f| !digits(f)) {
        return None;
    }
    if frac.is_none()
        && let Ok(i) = t.parse::<i64>()
    {
        return Some(Num::Int(i));
    }
    // Beyond f64's range (about 309 digits) a "number" would print `inf`: it is text instead,
    // so `addvar` appends to it and `incvar` starts again from 0. Values stay decimal text.
    t.parse::<f64>()
        .ok()
        .filter(|f| f.is_finite())
        .map(Num::Float)
}

/// The value of a JSON number lexeme (`-12`, `2.0`, `1e309`, `1.5e1`), saturated to i64, or
/// `None` when it has a fractional part. Exact decimal reasoning on the digits rather than
/// f64: JSON allows numbers far beyond f64 (`1e309` is the integer 10^309, saturated), and
/// `2.0000000000000001` must not round to an integer. Hand-written: serde_json either refuses
/// such numbers or rounds them.
pub(crate) fn json_integer(lexeme: &str) -> Option<i64> {
    let (negative, body) = match lexeme.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lexeme),
    };
    // The common lexeme (`100`, `-4`): at most 9 digits always fit an i32.
    if (1..=9).contains(&body.len()) && body.bytes().all(|b| b.is_ascii_digit()) {
        let v: i64 = body.bytes().fold(0, |v, b| v * 10 + (b - b'0') as i64);
        return Some(if negative { -v } else { v });
    }
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], &body[i + 1..]),
        None => (body, "0"),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let exp_digits = exponent.trim_start_matches(['+', '-']);
    if !int
        .bytes()
        .chain(frac.bytes())
        .chain(exp_digits.bytes())
        .all(|b| b.is_ascii_digit())
        || int.is_empty()
        || exp_digits.is_empty()
    {
        return None;
    }
    // Exponents beyond a billion change nothing below: saturate instead of overflowing.
    let exp = exp_digits.parse::<i64>().unwrap_or(i64::MAX).min(1 << 30);
    let exp = if exponent.starts_with('-') { -exp } else { exp };
    let digits = || int.bytes().chain(frac.bytes());
    let leading_zeros = digits().take_while(|&b| b == b'0').count();
    let significant = int.len() + frac.len() - leading_zeros;
    if significant == 0 {
        return Some(0);
    }
    // Position of the decimal point, counted from the first significant digit.
    let point = int.len() as i64 + exp - leading_zeros as i64;
    let fractional = digits()
        .skip(leading_zeros)
        .skip(point.max(0) as usize)
        .any(|b| b != b'0');
    if fractional {
        return None;
    }
    // At most 18 digits before the point always fit an i64.
    let magnitude: i64 = if point > 18 {
        i64::MAX
    } else {
        let mut v: i64 = 0;
        let mut sig = digits().skip(leading_zeros);
        for _ in 0..point {
            v = v * 10 + sig.next().map_or(0, |b| (b - b'0') as i64);
        }
        v
    };
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clamp(v: i64) -> i32 {
        v.clamp(i32::MIN as i64, i32::MAX as i64) as i32
    }

    #[test]
    fn json_integers_are_read_exactly() {
        for (lexeme, want) in [
            ("0", Some(0)),
            ("-0", Some(0)),
            ("0.000", Some(0)),
            ("7", Some(7)),
            ("-7", Some(-7)),
            ("2.0", Some(2)),
            ("1.5e1", Some(15)),
            ("100e-2", Some(1)),
            ("1E2", Some(100)),
            ("1e+2", Some(100)),
            ("2147483647", Some(i32::MAX)),
            ("2147483648", Some(i32::MAX)),
            ("-2147483649", Some(i32::MIN)),
            ("1e309", Some(i32::MAX)),
            ("-1e309", Some(i32::MIN)),
            ("1e99999999999999999999999", Some(i32::MAX)),
            ("0e99999999999999999999999", Some(0)),
            ("2.5", None),
            ("15e-1", None),
            ("1e-400", None),
            ("2.0000000000000001", None),
            ("999999999", Some(999_999_999)),
            ("-123456789", Some(-123_456_789)),
            ("1000000000", Some(1_000_000_000)),
            ("-", None),
            ("", None),
        ] {
            assert_eq!(json_integer(lexeme).map(clamp), want, "{lexeme}");
        }
        // The short-integer path and the general one agree around their border.
        for v in [
            0i64,
            9,
            10,
            99_999_999,
            999_999_999,
            1_000_000_000,
            2_147_483_647,
        ] {
            for lexeme in [
                v.to_string(),
                format!("-{v}"),
                format!("{v}.0"),
                format!("{v}e0"),
            ] {
                let want = lexeme.parse::<f64>().unwrap() as i64;
                let want = want.clamp(i32::MIN as i64, i32::MAX as i64) as i32;
                assert_eq!(json_integer(&lexeme).map(clamp), Some(want), "{lexeme}");
            }
        }
    }

    #[test]
    fn json_integers_saturate_to_i64() {
        assert_eq!(json_integer("2147483648"), Some(2_147_483_648));
        assert_eq!(json_integer("1e12"), Some(1_000_000_000_000));
        assert_eq!(json_integer("1e309"), Some(i64::MAX));
        assert_eq!(json_integer("-1e309"), Some(-i64::MAX));
        assert_eq!(json_integer("-1"), Some(-1));
    }
}
