//! Variables (SPEC §3.2): one local map per render plus the host's globals, with SPEC numbers
//! and the memory caps of SPEC §10.

use std::collections::{BTreeMap, HashMap};

use crate::syntax::catalog::Scope;

/// A SPEC number: optional sign, digits, optional `.` and digits.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Num {
    Int(i64),
    Float(f64),
}

fn parse_number(s: &str) -> Option<Num> {
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
    t.parse::<f64>().ok().map(Num::Float)
}

fn as_f64(n: Num) -> f64 {
    match n {
        Num::Int(i) => i as f64,
        Num::Float(f) => f,
    }
}

fn add(a: Num, b: Num) -> Num {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => match x.checked_add(y) {
            Some(s) => Num::Int(s),
            None => Num::Float(x as f64 + y as f64),
        },
        _ => Num::Float(as_f64(a) + as_f64(b)),
    }
}

/// Integers without a decimal point, others as the shortest exact decimal, never an exponent.
fn format_number(n: Num) -> String {
    match n {
        Num::Int(i) => i.to_string(),
        // Rust's `Display` for f64 is shortest-round-trip and never uses exponents.
        Num::Float(0.0) => "0".into(),
        Num::Float(f) => f.to_string(),
    }
}

/// Result of a write that hit a memory cap.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Capped;

#[derive(Debug, Default)]
pub(crate) struct Vars {
    local: HashMap<String, String>,
    global: HashMap<String, String>,
    /// Bytes of all values, local and global.
    total: usize,
    max_value: usize,
    max_total: usize,
}

impl Vars {
    pub fn new(globals: &BTreeMap<String, String>, max_value: usize, max_total: usize) -> Vars {
        let global: HashMap<String, String> = globals.clone().into_iter().collect();
        let total = global.values().map(String::len).sum();
        Vars {
            local: HashMap::new(),
            global,
            total,
            max_value,
            max_total,
        }
    }

    fn map(&self, scope: Scope) -> &HashMap<String, String> {
        match scope {
            Scope::Local => &self.local,
            Scope::Global => &self.global,
        }
    }

    pub fn get(&self, scope: Scope, key: &str) -> &str {
        self.map(scope).get(key).map_or("", String::as_str)
    }

    /// Stores `value`, cut at a UTF-8 boundary if it would cross a cap.
    pub fn set(&mut self, scope: Scope, key: &str, mut value: String) -> Result<(), Capped> {
        let old = self.map(scope).get(key).map_or(0, String::len);
        let room = self
            .max_value
            .min(self.max_total.saturating_sub(self.total - old));
        let capped = value.len() > room;
        if capped {
            let mut cut = room;
            while !value.is_char_boundary(cut) {
                cut -= 1;
            }
            value.truncate(cut);
        }
        self.total = self.total - old + value.len();
        let map = match scope {
            Scope::Local => &mut self.local,
            Scope::Global => &mut self.global,
        };
        match map.get_mut(key) {
            Some(slot) => *slot = value,
            None => {
                map.insert(key.to_string(), value);
            }
        }
        if capped { Err(Capped) } else { Ok(()) }
    }

    /// `addvar`: numeric sum when both are numbers, else string append.
    pub fn add(&mut self, scope: Scope, key: &str, value: &str) -> Result<(), Capped> {
        let cur = self.get(scope, key);
        let new = match (parse_number(cur), parse_number(value)) {
            (Some(a), Some(b)) => format_number(add(a, b)),
            _ => {
                let mut s = String::with_capacity(cur.len() + value.len());
                s.push_str(cur);
                s.push_str(value);
                s
            }
        };
        self.set(scope, key, new)
    }

    /// `incvar` / `decvar`: returns the value actually stored.
    pub fn step(&mut self, scope: Scope, key: &str, delta: i64) -> (String, Result<(), Capped>) {
        let cur = parse_number(self.get(scope, key)).unwrap_or(Num::Int(0));
        let new = format_number(add(cur, Num::Int(delta)));
        let res = self.set(scope, key, new);
        (self.get(scope, key).to_string(), res)
    }

    pub fn snapshot(&self, scope: Scope) -> BTreeMap<String, String> {
        self.map(scope)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars::new(&BTreeMap::new(), 1 << 20, 8 << 20)
    }

    #[test]
    fn numbers_follow_the_spec() {
        for s in ["-1", "+3", "2.5", " 7 "] {
            assert!(parse_number(s).is_some(), "{s}");
        }
        for s in ["1e3", "inf", "NaN", ".5", "5.", "", "-", "1.2.3"] {
            assert!(parse_number(s).is_none(), "{s}");
        }
    }

    #[test]
    fn addvar_sums_or_appends() {
        let mut v = vars();
        v.set(Scope::Local, "n", "0.1".into()).unwrap();
        v.add(Scope::Local, "n", "0.2").unwrap();
        assert_eq!(v.get(Scope::Local, "n"), "0.30000000000000004");
        v.set(Scope::Local, "m", "-1.5".into()).unwrap();
        v.add(Scope::Local, "m", "1.5").unwrap();
        assert_eq!(v.get(Scope::Local, "m"), "0");
        v.add(Scope::Local, "s", "a").unwrap();
        v.add(Scope::Local, "s", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "s"), "a1");
        v.set(Scope::Local, "i", "2.0".into()).unwrap();
        v.add(Scope::Local, "i", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "i"), "3");
        v.set(Scope::Local, "big", i64::MAX.to_string()).unwrap();
        v.add(Scope::Local, "big", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "big"), "9223372036854776000");
    }

    #[test]
    fn step_counts_non_numbers_as_zero() {
        let mut v = vars();
        v.set(Scope::Global, "g", "abc".into()).unwrap();
        assert_eq!(v.step(Scope::Global, "g", 1).0, "1");
        assert_eq!(v.step(Scope::Local, "u", -1).0, "-1");
        v.set(Scope::Local, "f", "1.5".into()).unwrap();
        assert_eq!(v.step(Scope::Local, "f", 1).0, "2.5");
    }

    #[test]
    fn caps_cut_at_char_boundaries() {
        let mut v = Vars::new(&BTreeMap::new(), 5, 8);
        assert_eq!(v.set(Scope::Local, "a", "ééé".into()), Err(Capped));
        assert_eq!(v.get(Scope::Local, "a"), "éé");
        assert_eq!(v.set(Scope::Local, "b", "12345".into()), Err(Capped));
        assert_eq!(v.get(Scope::Local, "b"), "1234");
        // Replacing a value frees its bytes.
        v.set(Scope::Local, "a", String::new()).unwrap();
        v.set(Scope::Local, "b", "12345".into()).unwrap();
    }
}
