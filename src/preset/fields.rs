//! Typed reads of preset JSON fields (SPEC §6 "Node fields"): strings, booleans and the
//! integer rules, each failing with an error that names the prompt and the field.

use serde_json::Value;

use super::PresetError;
use super::raw::Loose;

/// Where a field sits, for error messages: a prompt (by identifier or index) or a path.
pub(super) struct At<'a> {
    pub prompt: Label<'a>,
}

/// A prompt as messages name it: its identifier, or `#index` when it has none. Written out
/// only when a message needs it (import reads every prompt; few have errors).
#[derive(Clone, Copy)]
pub(super) enum Label<'a> {
    Named(&'a str),
    Index(usize),
}

impl std::fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Label::Named(id) => f.write_str(id),
            Label::Index(i) => write!(f, "#{i}"),
        }
    }
}

impl At<'_> {
    fn err(&self, field: &str, problem: impl Into<String>) -> PresetError {
        PresetError::Field {
            prompt: self.prompt.to_string(),
            field: field.to_string(),
            problem: problem.into(),
        }
    }

    /// A string field; `null` or missing gives `None`.
    pub fn string(&self, v: Option<Loose>, field: &str) -> Result<Option<String>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Str(s)) => Ok(Some(s)),
            Some(other) => {
                Err(self.err(field, format!("expected a string, found {}", other.kind())))
            }
        }
    }

    /// A boolean field; `null` or missing gives `None`.
    pub fn boolean(&self, v: Option<Loose>, field: &str) -> Result<Option<bool>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Bool(b)) => Ok(Some(b)),
            Some(other) => Err(self.err(
                field,
                format!("expected true or false, found {}", other.kind()),
            )),
        }
    }

    /// An integer field: a JSON number with no fractional part, or a string of an optional sign
    /// and decimal digits with optional surrounding spaces; clamped to i32.
    pub fn integer(&self, v: Option<Loose>, field: &str) -> Result<Option<i32>, PresetError> {
        match v {
            None | Some(Loose::Null) => Ok(None),
            Some(Loose::Number(n)) => json_integer(&n)
                .map(Some)
                .ok_or_else(|| self.err(field, format!("expected a whole number, found {n}"))),
            Some(Loose::Str(s)) => {
                let t = s.trim_matches(' ');
                let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(self.err(field, format!("expected a whole number, found \"{s}\"")));
                }
                // Saturate long digit strings instead of failing on overflow.
                let v = digits.parse::<i64>().unwrap_or(i64::MAX);
                let v = if t.starts_with('-') { -v } else { v };
                Ok(Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32))
            }
            Some(other) => Err(self.err(
                field,
                format!("expected a whole number, found {}", other.kind()),
            )),
        }
    }
}

/// The value of a JSON number lexeme (`-12`, `2.0`, `1e309`, `1.5e1`) clamped to i32, or
/// `None` when it has a fractional part. Exact decimal reasoning on the digits rather than
/// f64: JSON allows numbers far beyond f64 (`1e309` is the integer 10^309, clamped), and
/// `2.0000000000000001` must not round to an integer. Hand-written: serde_json either refuses
/// such numbers or rounds them.
fn json_integer(lexeme: &str) -> Option<i32> {
    let (negative, body) = match lexeme.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, lexeme),
    };
    // The common lexeme (`100`, `-4`): at most 9 digits always fit an i32.
    if (1..=9).contains(&body.len()) && body.bytes().all(|b| b.is_ascii_digit()) {
        let v: i32 = body.bytes().fold(0, |v, b| v * 10 + (b - b'0') as i32);
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
    let magnitude: i64 = if point > 10 {
        i64::MAX
    } else {
        let mut v: i64 = 0;
        let mut sig = digits().skip(leading_zeros);
        for _ in 0..point {
            v = v * 10 + sig.next().map_or(0, |b| (b - b'0') as i64);
        }
        v
    };
    let v = if negative { -magnitude } else { magnitude };
    Some(v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
}

/// A short name for a JSON value's type, for messages.
pub(super) fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn int(v: Value) -> Result<Option<i32>, PresetError> {
        let loose: Loose = serde_json::from_value(v).unwrap();
        At {
            prompt: Label::Named("p"),
        }
        .integer(Some(loose), "f")
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
            assert_eq!(json_integer(lexeme), want, "{lexeme}");
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
                assert_eq!(json_integer(&lexeme), Some(want), "{lexeme}");
            }
        }
    }

    #[test]
    fn integer_rules() {
        assert_eq!(int(json!(2)).unwrap(), Some(2));
        assert_eq!(int(json!(2.0)).unwrap(), Some(2));
        assert_eq!(int(json!(1e12)).unwrap(), Some(i32::MAX));
        assert_eq!(int(json!(-1e12)).unwrap(), Some(i32::MIN));
        assert_eq!(int(json!(" 90 ")).unwrap(), Some(90));
        assert_eq!(int(json!("-7")).unwrap(), Some(-7));
        assert_eq!(int(json!("+7")).unwrap(), Some(7));
        assert_eq!(
            int(json!("99999999999999999999999")).unwrap(),
            Some(i32::MAX)
        );
        assert_eq!(int(json!(u64::MAX)).unwrap(), Some(i32::MAX));
        assert_eq!(int(Value::Null).unwrap(), None);
        for bad in [
            json!(2.5),
            json!("4.5"),
            json!("1e3"),
            json!(true),
            json!("x"),
            json!(""),
            json!([1]),
            json!("- 1"),
        ] {
            let e = int(bad.clone()).unwrap_err().to_string();
            assert!(e.contains("prompt p") && e.contains("`f`"), "{bad}: {e}");
        }
    }
}
