//! JSON read with its objects' key order kept, as JavaScript's `JSON.parse` keeps it: cards and
//! lorebooks list entries as object keys, and SPEC §15.3.1 orders them the way a JS object
//! does (integer-like keys ascending, then the others in file order).
//!
//! Hand-written rather than serde_json's `preserve_order` feature because that feature swaps
//! the map type of every `serde_json::Value` in the build (ours and every dependent crate's):
//! the rest of the engine keeps its sorted maps. serde_json still does all the parsing,
//! including its nesting limit of 128, so a deeply nested card is an error, not a deep stack.

use std::collections::HashMap;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, MapAccess, SeqAccess, Visitor};

/// A JSON value whose objects keep their keys in file order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Object),
}

/// An object's members in first-occurrence order; a repeated key replaces the earlier value
/// in its place (as `JSON.parse`).
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct Object {
    pub members: Vec<(String, Json)>,
}

impl Object {
    /// The value of `key`. Linear: only called on the small objects of a card or an entry.
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.members.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

impl Json {
    /// Parses `bytes` (UTF-8) as one JSON document.
    /// A lone UTF-16 surrogate escape (half an emoji: `\ud800`) reads as U+FFFD, as SPEC §16
    /// reads lone surrogates everywhere, where serde_json alone refuses the whole file.
    // Books and cards stream (`parse_aside`, `book::stream`); the whole tree is what the
    // tests read them against.
    #[cfg(test)]
    pub fn parse(bytes: &[u8]) -> Result<Json, serde_json::Error> {
        let (bytes, _) = crate::surrogates::repair_json_at(bytes);
        serde_json::from_slice(&bytes)
    }

    pub fn as_object(&self) -> Option<&Object> {
        match self {
            Json::Object(o) => Some(o),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Json::String(s) => Some(s),
            _ => None,
        }
    }

    /// The value as an integer, when it is a JSON number without a fractional part that fits
    /// in `i64` (`2.0` is 2, as SPEC §6 reads integers).
    pub fn as_integer(&self) -> Option<i64> {
        let Json::Number(n) = self else { return None };
        if let Some(i) = n.as_i64() {
            return Some(i);
        }
        let f = n.as_f64()?;
        (f.fract() == 0.0 && f.abs() < 9.0e15).then_some(f as i64)
    }

    /// The value as a finite number.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64().filter(|f| f.is_finite()),
            _ => None,
        }
    }

    /// What kind of value it is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Json, E> {
        Ok(Json::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Json, E> {
        Ok(Json::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(v)
            .map(Json::Number)
            .ok_or_else(|| E::custom("a number out of range"))
    }
    fn visit_str<E>(self, v: &str) -> Result<Json, E> {
        Ok(Json::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Json, E> {
        Ok(Json::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Json::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Json, A::Error> {
        read_object(map, |_, map| map.next_value())
    }
}

/// An object's members in file order, each value read by `value(key, map)`; a repeated key
/// replaces the earlier value in its place.
fn read_object<'de, A: MapAccess<'de>>(
    mut map: A,
    mut value: impl FnMut(&str, &mut A) -> Result<Json, A::Error>,
) -> Result<Json, A::Error> {
    let mut members: Vec<(String, Json)> = Vec::new();
    // Index of each key, so repeated keys cost O(1) even in a 20,000-entry book.
    let mut index: HashMap<String, usize> = HashMap::new();
    while let Some(key) = map.next_key::<String>()? {
        let v = value(&key, &mut map)?;
        match index.get(&key) {
            Some(&i) => members[i].1 = v,
            None => {
                index.insert(key.clone(), members.len());
                members.push((key, v));
            }
        }
    }
    Ok(Json::Object(Object { members }))
}

impl Json {
    /// [`Json::parse`], except the value at `path` (object keys from the root) is kept as its
    /// text, unparsed, and read as `null` in the tree: a card's `data.character_book` is read
    /// as it streams (`Lorebook`), not built as a tree of ~18× its size. The last of a
    /// repeated key wins, as in the tree.
    pub fn parse_aside(
        bytes: &[u8],
        path: &[&str],
    ) -> Result<(Json, Option<Box<serde_json::value::RawValue>>), serde_json::Error> {
        let (bytes, _) = crate::surrogates::repair_json_at(bytes);
        let mut aside = None;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let json = de::DeserializeSeed::deserialize(
            Aside {
                path,
                out: &mut aside,
            },
            &mut de,
        )?;
        de.end()?;
        Ok((json, aside))
    }
}

/// Reads a value as [`JsonVisitor`] does, setting aside the value at `path` (see
/// [`Json::parse_aside`]).
struct Aside<'p> {
    path: &'p [&'p str],
    out: &'p mut Option<Box<serde_json::value::RawValue>>,
}

impl<'de> de::DeserializeSeed<'de> for Aside<'_> {
    type Value = Json;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        d.deserialize_any(self)
    }
}

/// Forwards a visit to [`JsonVisitor`].
macro_rules! as_json {
    ($($name:ident($($arg:ident: $ty:ty),*)),* $(,)?) => {
        $(fn $name<E: de::Error>(self, $($arg: $ty),*) -> Result<Json, E> {
            JsonVisitor.$name($($arg),*)
        })*
    };
}

impl<'de> Visitor<'de> for Aside<'_> {
    type Value = Json;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    as_json!(
        visit_unit(),
        visit_none(),
        visit_bool(v: bool),
        visit_i64(v: i64),
        visit_u64(v: u64),
        visit_f64(v: f64),
        visit_str(v: &str),
        visit_string(v: String),
    );
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Json, A::Error> {
        JsonVisitor.visit_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Json, A::Error> {
        let Some((first, rest)) = self.path.split_first() else {
            return JsonVisitor.visit_map(map);
        };
        let out = self.out;
        read_object(map, |key, map| {
            if key != *first {
                return map.next_value();
            }
            if rest.is_empty() {
                *out = Some(map.next_value()?);
                return Ok(Json::Null);
            }
            // A repeated parent replaces the earlier one, its set-aside value too.
            *out = None;
            map.next_value_seed(Aside {
                path: rest,
                out: &mut *out,
            })
        })
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Json, D::Error> {
        d.deserialize_any(JsonVisitor)
    }
}

/// Whether `key` is integer-like (SPEC §15.3.1): the canonical decimal form of an integer
/// 0 ≤ n < 2³²−1, which a JavaScript object orders first, ascending.
pub(crate) fn integer_like(key: &str) -> Option<u32> {
    let b = key.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    let n: u64 = key.parse().ok()?;
    (n < u64::from(u32::MAX)).then_some(n as u32)
}

/// Indices of `keys` in JavaScript object order: integer-like keys ascending, then the rest
/// in their given order.
pub(crate) fn js_key_order<'a>(keys: impl Iterator<Item = &'a str>) -> Vec<usize> {
    let mut ints = Vec::new();
    let mut rest = Vec::new();
    for (i, k) in keys.enumerate() {
        match integer_like(k) {
            Some(n) => ints.push((n, i)),
            None => rest.push(i),
        }
    }
    ints.sort_unstable();
    ints.into_iter().map(|(_, i)| i).chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_file_order_and_replaces_repeats_in_place() {
        let j = Json::parse(br#"{"b":1,"a":2,"b":3}"#).unwrap();
        let o = j.as_object().unwrap();
        let keys: Vec<_> = o.members.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["b", "a"]);
        assert_eq!(o.get("b").and_then(Json::as_integer), Some(3));
    }

    #[test]
    fn integer_like_is_canonical_below_two_to_the_32_minus_one() {
        assert_eq!(integer_like("0"), Some(0));
        assert_eq!(integer_like("4294967294"), Some(4294967294));
        for k in [
            "",
            "01",
            "-1",
            "+1",
            "1.0",
            "4294967295",
            "99999999999",
            "a",
        ] {
            assert_eq!(integer_like(k), None, "{k}");
        }
        let order = js_key_order(["b", "10", "2", "a", "01"].into_iter());
        assert_eq!(order, [2, 1, 0, 3, 4]);
    }

    #[test]
    fn integers_read_as_spec_six() {
        let j = Json::parse(b"[2, 2.0, 2.5, 1e3, -4]").unwrap();
        let Json::Array(a) = j else { panic!() };
        let got: Vec<_> = a.iter().map(Json::as_integer).collect();
        assert_eq!(got, [Some(2), Some(2), None, Some(1000), Some(-4)]);
    }

    #[test]
    fn a_lone_surrogate_escape_is_a_replacement_character() {
        let j = Json::parse(br#"["\ud800x", "\ud83d\ude00"]"#).unwrap();
        let Json::Array(a) = j else { panic!() };
        assert_eq!(a[0].as_str(), Some("\u{fffd}x"));
        assert_eq!(a[1].as_str(), Some("😀"));
    }

    #[test]
    fn deep_nesting_is_an_error() {
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(Json::parse(deep.as_bytes()).is_err());
    }

    /// The set-aside value is the one the tree would hold at that path (the last of repeated
    /// keys and parents), and the rest of the tree is the tree's with `null` there.
    #[test]
    fn a_value_set_aside_is_the_trees() {
        for doc in [
            r#"{"data": {"character_book": {"entries": [1]}, "name": "a"}}"#,
            r#"{"data": {"character_book": 1, "character_book": {"x": 2}}, "spec": 3}"#,
            r#"{"data": {"character_book": 1}, "data": {"name": "b"}}"#,
            r#"{"data": {"name": "b"}, "data": {"character_book": [2]}}"#,
            r#"{"data": "text"}"#,
            r#"[{"data": {"character_book": 1}}]"#,
            r#"{"character_book": 1}"#,
        ] {
            let tree = Json::parse(doc.as_bytes()).unwrap();
            let (rest, aside) =
                Json::parse_aside(doc.as_bytes(), &["data", "character_book"]).unwrap();
            let at = tree
                .as_object()
                .and_then(|o| o.get("data"))
                .and_then(Json::as_object)
                .and_then(|d| d.get("character_book"));
            let aside = aside.map(|r| Json::parse(r.get().as_bytes()).unwrap());
            assert_eq!(aside.as_ref(), at, "{doc}");
            let mut nulled = tree.clone();
            if let Json::Object(o) = &mut nulled
                && let Some((_, Json::Object(d))) = o.members.iter_mut().find(|(k, _)| k == "data")
                && let Some((_, v)) = d.members.iter_mut().find(|(k, _)| k == "character_book")
            {
                *v = Json::Null;
            }
            assert_eq!(rest, nulled, "{doc}");
        }
    }
}
