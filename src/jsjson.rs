//! JavaScript's `JSON.parse`, `JSON.stringify` and property access, as SillyTavern's object
//! variable macros (`{{setvarkey}}`, `{{getvarkey}}`) use them on a variable's text (leaf).
//!
//! Hand-written rather than `serde_json::Value`: a JS object keeps its keys in JS order
//! (array-index keys ascending, then the others as first written), which the crate's
//! `serde_json` (without `preserve_order`, kept off so every JSON this library prints keeps its
//! byte order) does not; and numbers print as JS prints them (`1e+21`, `1e-7`). serde_json
//! still does the parsing.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

/// A JSON value with JavaScript's semantics.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum JsVal {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<JsVal>),
    Obj(Obj),
}

/// A plain object: its own properties in insertion order, indexed by key (an ordered map, so a
/// stranger's keys cannot make lookups collide).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Obj {
    entries: Vec<(String, JsVal)>,
    index: BTreeMap<String, usize>,
}

impl Obj {
    /// `obj[key] = value` for an own data property: replaced in place, or added last.
    fn set(&mut self, key: String, value: JsVal) {
        match self.index.get(&key) {
            Some(&i) => self.entries[i].1 = value,
            None => {
                self.index.insert(key.clone(), self.entries.len());
                self.entries.push((key, value));
            }
        }
    }

    fn get(&self, key: &str) -> Option<&JsVal> {
        self.index.get(key).map(|&i| &self.entries[i].1)
    }

    /// The keys in JS enumeration order: array indices ascending, then the rest in order.
    fn ordered(&self) -> Vec<&(String, JsVal)> {
        let mut indices: Vec<(u32, &(String, JsVal))> = self
            .entries
            .iter()
            .filter_map(|e| array_index(&e.0).map(|i| (i, e)))
            .collect();
        indices.sort_by_key(|(i, _)| *i);
        let mut out: Vec<&(String, JsVal)> = indices.into_iter().map(|(_, e)| e).collect();
        out.extend(self.entries.iter().filter(|e| array_index(&e.0).is_none()));
        out
    }
}

/// `key` as an array index: the canonical decimal text of an integer below 2³² − 1.
fn array_index(key: &str) -> Option<u32> {
    if key.is_empty() || (key.len() > 1 && key.starts_with('0')) {
        return None;
    }
    if !key.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    key.parse::<u32>().ok().filter(|&i| i != u32::MAX)
}

impl<'de> Deserialize<'de> for JsVal {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsVal, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = JsVal;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("JSON")
            }
            fn visit_unit<E>(self) -> Result<JsVal, E> {
                Ok(JsVal::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<JsVal, E> {
                Ok(JsVal::Bool(b))
            }
            fn visit_i64<E>(self, n: i64) -> Result<JsVal, E> {
                Ok(JsVal::Num(n as f64))
            }
            fn visit_u64<E>(self, n: u64) -> Result<JsVal, E> {
                Ok(JsVal::Num(n as f64))
            }
            fn visit_f64<E>(self, n: f64) -> Result<JsVal, E> {
                Ok(JsVal::Num(n))
            }
            fn visit_str<E>(self, s: &str) -> Result<JsVal, E> {
                Ok(JsVal::Str(s.to_owned()))
            }
            fn visit_string<E>(self, s: String) -> Result<JsVal, E> {
                Ok(JsVal::Str(s))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<JsVal, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(JsVal::Arr(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<JsVal, A::Error> {
                // A repeated key keeps its first place and its last value, as `JSON.parse`.
                let mut obj = Obj::default();
                while let Some((k, v)) = map.next_entry::<String, JsVal>()? {
                    obj.set(k, v);
                }
                Ok(JsVal::Obj(obj))
            }
        }
        d.deserialize_any(V)
    }
}

/// `JSON.parse(text)`; `None` where it throws (and where serde_json's limits stop it: nesting
/// past 128 levels, a number out of f64's range).
pub(crate) fn parse(text: &str) -> Option<JsVal> {
    serde_json::from_str(text).ok()
}

/// `JSON.stringify(v)`.
pub(crate) fn stringify(v: &JsVal) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

fn write(v: &JsVal, out: &mut String) {
    match v {
        JsVal::Null => out.push_str("null"),
        JsVal::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsVal::Num(n) if n.is_finite() => out.push_str(&number_text(*n)),
        JsVal::Num(_) => out.push_str("null"),
        JsVal::Str(s) => string(s, out),
        JsVal::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        JsVal::Obj(obj) => {
            out.push('{');
            for (i, (k, v)) in obj.ordered().into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                string(k, out);
                out.push(':');
                write(v, out);
            }
            out.push('}');
        }
    }
}

/// A JSON string as `JSON.stringify` writes it (serde_json escapes exactly the same set).
fn string(s: &str, out: &mut String) {
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// `String(n)` for a finite number (ECMAScript `Number::toString`): the shortest digits that
/// read back, in plain notation from 1e-6 up to 1e21, else with an exponent (`1e+21`).
pub(crate) fn number_text(n: f64) -> String {
    if n == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the shortest round-trip digits: `d.ddde±x`.
    let sci = format!("{:e}", n.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n_exp = exp.parse::<i32>().unwrap_or(0) + 1;
    let mut out = String::new();
    if n < 0.0 {
        out.push('-');
    }
    if k <= n_exp && n_exp <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n_exp - k) as usize));
    } else if 0 < n_exp && n_exp <= 21 {
        out.push_str(&digits[..n_exp as usize]);
        out.push('.');
        out.push_str(&digits[n_exp as usize..]);
    } else if -6 < n_exp && n_exp <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n_exp) as usize));
        out.push_str(&digits);
    } else {
        out.push_str(&digits[..1]);
        if k > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        let e = n_exp - 1;
        let _ = write!(out, "e{}{}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    out
}

/// `Number(s)` for a string (ECMAScript `StringToNumber`): `None` is `NaN`.
pub(crate) fn to_number(s: &str) -> Option<f64> {
    let t = crate::jstext::js_trim(s);
    if t.is_empty() {
        return Some(0.0);
    }
    for (prefix, radix) in [
        ("0x", 16),
        ("0X", 16),
        ("0o", 8),
        ("0O", 8),
        ("0b", 2),
        ("0B", 2),
    ] {
        if let Some(d) = t.strip_prefix(prefix) {
            if d.is_empty() || !d.chars().all(|c| c.is_digit(radix)) {
                return None;
            }
            // Digit by digit in f64, as JS rounds a long literal.
            return Some(d.chars().fold(0.0, |acc, c| {
                acc * f64::from(radix) + f64::from(c.to_digit(radix).unwrap_or(0))
            }));
        }
    }
    let unsigned = t.strip_prefix(['+', '-']).unwrap_or(t);
    if unsigned == "Infinity" {
        return Some(if t.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    // StrDecimalLiteral: digits with an optional fraction (at least one digit), then an
    // optional exponent. Rust's parser takes more (`inf`, `nan`): checked first.
    let b = unsigned.as_bytes();
    let mut i = 0;
    let int = b.iter().take_while(|c| c.is_ascii_digit()).count();
    i += int;
    let mut frac = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        frac = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        i += frac;
    }
    if int + frac == 0 {
        return None;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let e = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
        if e == 0 {
            return None;
        }
        i += e;
    }
    if i != b.len() {
        return None;
    }
    t.parse::<f64>().ok()
}

/// The property key `v[index]` reads or writes for SillyTavern's `index` argument:
/// `Number(index)` when that is not `NaN`, as text (`"01"` → `"1"`), else `index` itself.
pub(crate) enum Key {
    Number(f64),
    Name(String),
}

impl Key {
    pub(crate) fn of(index: &str) -> Key {
        match to_number(index) {
            Some(n) => Key::Number(n),
            None => Key::Name(index.to_string()),
        }
    }

    fn text(&self) -> String {
        match self {
            Key::Number(n) if n.is_infinite() => {
                if *n > 0.0 { "Infinity" } else { "-Infinity" }.into()
            }
            Key::Number(n) => number_text(*n),
            Key::Name(s) => s.clone(),
        }
    }
}

/// The result of `v[key]` for SillyTavern's reads (own data properties, and `length` of
/// arrays and strings). `None` is `undefined` (inherited members are too: see the caller).
pub(crate) fn get(v: &JsVal, key: &Key) -> Option<JsVal> {
    let name = key.text();
    match v {
        JsVal::Arr(items) => match array_index(&name) {
            Some(i) => items.get(i as usize).cloned(),
            None => (name == "length").then_some(JsVal::Num(items.len() as f64)),
        },
        JsVal::Str(s) => {
            // A string's own properties are its UTF-16 units and `length`.
            let units: Vec<u16> = s.encode_utf16().collect();
            match array_index(&name) {
                Some(i) => units
                    .get(i as usize)
                    .map(|&u| JsVal::Str(String::from_utf16_lossy(&[u]))),
                None => (name == "length").then_some(JsVal::Num(units.len() as f64)),
            }
        }
        JsVal::Obj(obj) => match obj.get(&name) {
            Some(v) => Some(v.clone()),
            // `Object.prototype`, an object: `JSON.stringify` prints `{}`.
            None if name == "__proto__" => Some(JsVal::Obj(Obj::default())),
            None => None,
        },
        JsVal::Null | JsVal::Bool(_) | JsVal::Num(_) => None,
    }
}

/// Why `v[key] = value` did not write.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Threw {
    /// What JavaScript throws in strict code (a primitive's property, a bad array length).
    Error,
    /// The array would grow past the bound.
    TooLong,
}

/// `v[key] = value` in strict code, as SillyTavern's `setLocalVariable` runs it; `max_len`
/// bounds an array it would lengthen (each new element prints as `null`: the caller passes
/// what the variable's text may still grow by), past which it refuses (`Err`) rather than
/// building the array.
pub(crate) fn set(v: &mut JsVal, key: &Key, value: JsVal, max_len: usize) -> Result<(), Threw> {
    let name = key.text();
    match v {
        JsVal::Arr(items) => {
            if let Some(i) = array_index(&name) {
                let i = i as usize;
                if i >= items.len() {
                    if i - items.len() > max_len {
                        return Err(Threw::TooLong);
                    }
                    items.resize(i + 1, JsVal::Null);
                }
                items[i] = value;
            } else if name == "length" {
                // `arr.length = v`: a valid length resizes, anything else is a RangeError.
                let n = match &value {
                    JsVal::Str(s) => to_number(s),
                    JsVal::Num(n) => Some(*n),
                    _ => None,
                }
                .filter(|n| n.fract() == 0.0 && *n >= 0.0 && *n < 4_294_967_296.0)
                .ok_or(Threw::Error)? as usize;
                if n > items.len() && n - items.len() > max_len {
                    return Err(Threw::TooLong);
                }
                items.resize(n, JsVal::Null);
            }
            // Any other name is a property `JSON.stringify` leaves out of an array.
            Ok(())
        }
        // Assigning `__proto__` a string does nothing.
        JsVal::Obj(_) if name == "__proto__" => Ok(()),
        JsVal::Obj(obj) => {
            obj.set(name, value);
            Ok(())
        }
        // A property of a primitive cannot be created in strict code.
        _ => Err(Threw::Error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (n, s) in [
            (1.0, "1"),
            (-2.5, "-2.5"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (1.5e-7, "1.5e-7"),
            (0.000001, "0.000001"),
            (123456789012345680000.0, "123456789012345680000"),
            (-1e-7, "-1e-7"),
            (5e-324, "5e-324"),
        ] {
            assert_eq!(number_text(n), s, "{n}");
        }
    }

    #[test]
    fn strings_read_as_javascript_numbers() {
        for (s, n) in [
            ("", Some(0.0)),
            ("  12 ", Some(12.0)),
            ("0x1F", Some(31.0)),
            ("1e3", Some(1000.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("inf", None),
            ("NaN", None),
            ("1_0", None),
            ("-0x10", None),
            ("1e", None),
            ("abc", None),
        ] {
            assert_eq!(to_number(s), n, "{s:?}");
        }
    }

    #[test]
    fn objects_keep_javascript_key_order() {
        let mut v = parse(r#"{"b": 1, "a": [true, null], "2": "x", "1": {}, "b": 3}"#).unwrap();
        assert_eq!(stringify(&v), r#"{"1":{},"2":"x","b":3,"a":[true,null]}"#);
        set(&mut v, &Key::of("01"), JsVal::Str("y".into()), 10).unwrap();
        set(&mut v, &Key::of("z"), JsVal::Str("\u{1}\"".into()), 10).unwrap();
        assert_eq!(
            stringify(&v),
            r#"{"1":"y","2":"x","b":3,"a":[true,null],"z":"\u0001\""}"#
        );
        assert_eq!(
            get(&v, &Key::of("__proto__")),
            Some(JsVal::Obj(Obj::default()))
        );
    }

    #[test]
    fn arrays_grow_within_the_bound_and_primitives_refuse() {
        let mut a = JsVal::Arr(Vec::new());
        set(&mut a, &Key::of("2"), JsVal::Str("x".into()), 10).unwrap();
        set(&mut a, &Key::of("1.5"), JsVal::Str("y".into()), 10).unwrap();
        assert_eq!(stringify(&a), r#"[null,null,"x"]"#);
        assert_eq!(
            set(&mut a, &Key::of("1000"), JsVal::Null, 10),
            Err(Threw::TooLong)
        );
        set(&mut a, &Key::of("length"), JsVal::Str("1".into()), 10).unwrap();
        assert_eq!(stringify(&a), "[null]");
        assert_eq!(get(&a, &Key::of("length")), Some(JsVal::Num(1.0)));
        let mut n = parse("5").unwrap();
        assert_eq!(
            set(&mut n, &Key::of("a"), JsVal::Null, 10),
            Err(Threw::Error)
        );
        assert_eq!(
            get(&parse(r#""héllo""#).unwrap(), &Key::of("1")),
            Some(JsVal::Str("é".into()))
        );
    }
}
