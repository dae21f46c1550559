//! Variables (SPEC §3.2): one local map per render plus the host's globals, with SPEC numbers
//! and the memory caps of SPEC §10.

use std::collections::BTreeMap;

use crate::limits::fit;
use crate::number::{Num, parse_number};

use crate::syntax::catalog::Scope;

/// The sum, or `None` when it leaves f64's finite range (then the operands are text).
fn add(a: Num, b: Num) -> Option<Num> {
    let sum = match (a, b) {
        (Num::Int(x), Num::Int(y)) => match x.checked_add(y) {
            Some(s) => return Some(Num::Int(s)),
            None => x as f64 + y as f64,
        },
        _ => a.as_f64() + b.as_f64(),
    };
    sum.is_finite().then_some(Num::Float(sum))
}

/// A shorthand operand: a SPEC number, and blank text counts as 0 (SillyTavern's
/// `Number("")`).
fn operand(s: &str) -> Option<Num> {
    if s.trim().is_empty() {
        Some(Num::Int(0))
    } else {
        parse_number(s)
    }
}

/// `a` against `b` numerically (blank = 0), or `None` when either is not a number.
pub(crate) fn compare(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    let (a, b) = (operand(a)?, operand(b)?);
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        _ => a.as_f64().partial_cmp(&b.as_f64()),
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

/// Bytes a value may take in place of one of `old` bytes, when all values take `total`.
fn room(max_value: usize, max_total: usize, total: usize, old: usize) -> usize {
    max_value.min(max_total.saturating_sub(total - old))
}

/// Result of a write that hit a memory cap.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Capped;

/// Local and global variables. Keys come from templates a stranger wrote: ordered maps have no
/// hash a preset could make collide (every lookup stays logarithmic), and they are already in
/// the order the render result reports them in, so a render ends without sorting.
#[derive(Debug, Default)]
pub(crate) struct Vars {
    local: BTreeMap<String, String>,
    global: BTreeMap<String, String>,
    /// Bytes of all values, local and global.
    total: usize,
    max_value: usize,
    max_total: usize,
    /// While a regex script's expansion runs (SPEC §13.5.3): each key's value before its first
    /// write, so the maps return to the pass's initial state afterwards at the cost of the
    /// writes, not of the maps.
    journal: Option<Journal>,
}

#[derive(Debug, Default)]
struct Journal {
    total: usize,
    /// Per written key (global?, key): its value before the first write.
    old: BTreeMap<(bool, String), Option<String>>,
}

impl Vars {
    /// Starts recording writes (see [`Vars::rollback`]).
    pub fn begin_scratch(&mut self) {
        self.journal = Some(Journal {
            total: self.total,
            ..Journal::default()
        });
    }

    /// Undoes every write since [`Vars::begin_scratch`], and keeps recording.
    pub fn rollback(&mut self) {
        let Some(mut j) = self.journal.take() else {
            return;
        };
        for ((global, key), old) in std::mem::take(&mut j.old) {
            let map = if global {
                &mut self.global
            } else {
                &mut self.local
            };
            match old {
                Some(v) => {
                    map.insert(key, v);
                }
                None => {
                    map.remove(&key);
                }
            }
        }
        self.total = j.total;
        self.journal = Some(j);
    }

    /// The maps a render starts from: the chat's variables and the host's globals, loaded as
    /// given (their bytes count toward the total; later writes are cut, SPEC §11.8).
    pub fn new(
        locals: &BTreeMap<String, String>,
        globals: &BTreeMap<String, String>,
        max_value: usize,
        max_total: usize,
    ) -> Vars {
        let (local, global) = (locals.clone(), globals.clone());
        let total = local.values().chain(global.values()).map(String::len).sum();
        Vars {
            local,
            global,
            total,
            max_value,
            max_total,
            journal: None,
        }
    }

    /// Whether `key` is present (even with an empty value).
    pub fn contains(&self, scope: Scope, key: &str) -> bool {
        self.map(scope).contains_key(key)
    }

    /// Removes `key`; its bytes no longer count toward the total (a running total, not a sum
    /// over the map, so n deletions stay linear).
    pub fn delete(&mut self, scope: Scope, key: &str) {
        if let Some(old) = self.map_mut(scope, key).remove(key) {
            self.total -= old.len();
        }
    }

    fn map(&self, scope: Scope) -> &BTreeMap<String, String> {
        match scope {
            Scope::Local => &self.local,
            Scope::Global => &self.global,
        }
    }

    /// The map `key` is about to be written in (recorded first while journaling).
    fn map_mut(&mut self, scope: Scope, key: &str) -> &mut BTreeMap<String, String> {
        // Only while journaling (a script's expansion): a node's writes pay nothing here.
        if self.journal.is_some() {
            let first = (scope == Scope::Global, key.to_string());
            // The old value is copied once per key, not per write.
            if self
                .journal
                .as_ref()
                .is_some_and(|j| !j.old.contains_key(&first))
            {
                let old = self.map(scope).get(key).cloned();
                if let Some(j) = &mut self.journal {
                    j.old.insert(first, old);
                }
            }
        }
        match scope {
            Scope::Local => &mut self.local,
            Scope::Global => &mut self.global,
        }
    }

    /// `{{setvarkey::name::key::value}}`: SillyTavern's `setLocalVariable(name, value,
    /// {index: key})`. The variable's text is read as JSON (absent or `null`: a new array for
    /// a numeric key, an object otherwise), `value` set at `key`, and the JSON written back;
    /// where ST's code throws (text that is not JSON, a primitive) nothing changes. `Err`
    /// when the new text would not fit the caps: then nothing is written either (a cut JSON
    /// text would no longer parse).
    pub fn set_key(
        &mut self,
        scope: Scope,
        name: &str,
        key: &str,
        value: &str,
    ) -> Result<(), Capped> {
        use crate::jsjson::{self, JsVal, Key, Threw};
        let current = match self.map(scope).get(name) {
            None => JsVal::Null,
            Some(text) => match jsjson::parse(text) {
                Some(v) => v,
                None => return Ok(()),
            },
        };
        let key = Key::of(key);
        let mut v = match (current, &key) {
            (JsVal::Null, Key::Number(_)) => JsVal::Arr(Vec::new()),
            (JsVal::Null, Key::Name(_)) => JsVal::Obj(Default::default()),
            (v, _) => v,
        };
        let room = self.room(scope, name);
        // Each element an array grows by prints as at least `null,`.
        match jsjson::set(&mut v, &key, JsVal::Str(value.to_string()), room / 5) {
            Ok(()) => {}
            Err(Threw::Error) => return Ok(()),
            Err(Threw::TooLong) => return Err(Capped),
        }
        let text = jsjson::stringify(&v);
        if text.len() > room {
            return Err(Capped);
        }
        self.set(scope, name, &text)
    }

    /// `{{getvarkey::name::key}}`: SillyTavern's `getLocalVariable(name, {index: key})`, its
    /// value printed as stored (SPEC §11.11.7: ST's coercion of the result to a number is not
    /// followed, so `true` prints `true`, not `1`). An absent variable is empty; text that is
    /// not JSON is returned whole (ST's `catch`); an object or array found prints as JSON.
    pub fn get_key(&self, scope: Scope, name: &str, key: &str) -> String {
        use crate::jsjson::{self, JsVal, Key};
        let Some(text) = self.map(scope).get(name) else {
            return String::new();
        };
        let Some(v) = jsjson::parse(text) else {
            return text.clone();
        };
        match jsjson::get(&v, &Key::of(key)) {
            // `null[key]` throws in ST and leaves the variable's value.
            None if v == JsVal::Null => "null".into(),
            None => String::new(),
            Some(JsVal::Str(s)) => s,
            Some(JsVal::Num(n)) => jsjson::number_text(n),
            Some(JsVal::Bool(b)) => b.to_string(),
            Some(other) => jsjson::stringify(&other),
        }
    }

    pub fn get(&self, scope: Scope, key: &str) -> &str {
        self.map(scope).get(key).map_or("", String::as_str)
    }

    /// Bytes a value of `key` may take, given what the other values use.
    fn room(&self, scope: Scope, key: &str) -> usize {
        let old = self.map(scope).get(key).map_or(0, String::len);
        room(self.max_value, self.max_total, self.total, old)
    }

    /// Stores `value`, cut at a UTF-8 boundary if it would cross a cap. One map search:
    /// most writes declare a new variable, which needs the owned key anyway.
    pub fn set(&mut self, scope: Scope, key: &str, value: &str) -> Result<(), Capped> {
        let (total, max_value, max_total) = (self.total, self.max_value, self.max_total);
        let slot = self.map_mut(scope, key).entry(key.to_string()).or_default();
        let old = slot.len();
        let kept = fit(value, room(max_value, max_total, total, old));
        if slot.capacity() >= kept.len() {
            slot.clear();
            slot.push_str(kept);
        } else {
            // A fresh buffer: growing the old one would copy bytes about to go.
            *slot = kept.to_string();
        }
        let kept = kept.len();
        self.total = self.total - old + kept;
        if kept < value.len() {
            Err(Capped)
        } else {
            Ok(())
        }
    }

    /// `addvar`: numeric sum when both are numbers, else string append (cut to the caps).
    pub fn add(&mut self, scope: Scope, key: &str, value: &str) -> Result<(), Capped> {
        let cur = self.get(scope, key);
        if let (Some(a), Some(b)) = (parse_number(cur), parse_number(value))
            && let Some(sum) = add(a, b)
        {
            return self.set(scope, key, &format_number(sum));
        }
        let room = self.room(scope, key);
        let map = self.map_mut(scope, key);
        let slot = match map.get_mut(key) {
            Some(slot) => slot,
            None => map.entry(key.to_string()).or_default(),
        };
        let old = slot.len();
        let capped = old + value.len() > room;
        if old > room {
            let keep = fit(slot, room).len();
            slot.truncate(keep);
        } else {
            slot.push_str(fit(value, room - old));
        }
        let new = slot.len();
        self.total = self.total - old + new;
        if capped { Err(Capped) } else { Ok(()) }
    }

    /// `.v -= r`: the difference when both are numbers (blank = 0), else `None` and nothing
    /// changes (SPEC §11.5).
    pub fn subtract(&mut self, scope: Scope, key: &str, r: &str) -> Option<Result<(), Capped>> {
        let a = operand(self.get(scope, key))?;
        let b = operand(r)?;
        let negated = match b {
            Num::Int(i) => i.checked_neg().map_or(Num::Float(-(i as f64)), Num::Int),
            Num::Float(f) => Num::Float(-f),
        };
        let diff = add(a, negated)?;
        Some(self.set(scope, key, &format_number(diff)))
    }

    /// `incvar` / `decvar`: returns the value actually stored.
    pub fn step(&mut self, scope: Scope, key: &str, delta: i64) -> (String, Result<(), Capped>) {
        let cur = parse_number(self.get(scope, key)).unwrap_or(Num::Int(0));
        // ±1 on a finite f64 stays finite (at the top it rounds back to the same value).
        let new = format_number(add(cur, Num::Int(delta)).unwrap_or(cur));
        let res = self.set(scope, key, &new);
        (self.get(scope, key).to_string(), res)
    }

    /// The local and global maps, as they are.
    pub fn into_maps(self) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
        (self.local, self.global)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vars {
        Vars::new(&BTreeMap::new(), &BTreeMap::new(), 1 << 20, 8 << 20)
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
        v.set(Scope::Local, "n", "0.1").unwrap();
        v.add(Scope::Local, "n", "0.2").unwrap();
        assert_eq!(v.get(Scope::Local, "n"), "0.30000000000000004");
        v.set(Scope::Local, "m", "-1.5").unwrap();
        v.add(Scope::Local, "m", "1.5").unwrap();
        assert_eq!(v.get(Scope::Local, "m"), "0");
        v.add(Scope::Local, "s", "a").unwrap();
        v.add(Scope::Local, "s", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "s"), "a1");
        v.set(Scope::Local, "i", "2.0").unwrap();
        v.add(Scope::Local, "i", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "i"), "3");
        v.set(Scope::Local, "big", &i64::MAX.to_string()).unwrap();
        v.add(Scope::Local, "big", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "big"), "9223372036854776000");
    }

    #[test]
    fn numbers_beyond_f64_are_text() {
        let mut v = vars();
        let huge = "9".repeat(400);
        assert!(parse_number(&huge).is_none());
        v.set(Scope::Local, "k", &huge).unwrap();
        v.add(Scope::Local, "k", "1").unwrap();
        assert_eq!(v.get(Scope::Local, "k"), format!("{huge}1"));
        assert_eq!(v.step(Scope::Local, "k", 1).0, "1");
        // Two finite numbers whose sum overflows: appended as text, never `inf`.
        let max = format_number(Num::Float(f64::MAX));
        assert_eq!(max.len(), 309);
        v.set(Scope::Local, "m", &max).unwrap();
        v.add(Scope::Local, "m", &max).unwrap();
        assert_eq!(v.get(Scope::Local, "m"), format!("{max}{max}"));
        v.set(Scope::Local, "top", &max).unwrap();
        assert_eq!(v.step(Scope::Local, "top", 1).0, max);
    }

    #[test]
    fn addvar_appends_in_place_and_cuts_the_combined_value() {
        let mut v = Vars::new(&BTreeMap::new(), &BTreeMap::new(), 6, 100);
        v.add(Scope::Local, "s", "abcd").unwrap();
        assert_eq!(v.add(Scope::Local, "s", "éfg"), Err(Capped));
        assert_eq!(v.get(Scope::Local, "s"), "abcdé");
        assert_eq!(v.total, 6);
    }

    #[test]
    fn step_counts_non_numbers_as_zero() {
        let mut v = vars();
        v.set(Scope::Global, "g", "abc").unwrap();
        assert_eq!(v.step(Scope::Global, "g", 1).0, "1");
        assert_eq!(v.step(Scope::Local, "u", -1).0, "-1");
        v.set(Scope::Local, "f", "1.5").unwrap();
        assert_eq!(v.step(Scope::Local, "f", 1).0, "2.5");
    }

    #[test]
    fn deleting_frees_room_and_presence_is_not_emptiness() {
        let mut v = Vars::new(&BTreeMap::new(), &BTreeMap::new(), 5, 8);
        v.set(Scope::Local, "e", "").unwrap();
        assert!(v.contains(Scope::Local, "e") && !v.contains(Scope::Local, "x"));
        v.set(Scope::Local, "a", "12345").unwrap();
        assert_eq!(v.set(Scope::Local, "b", "12345"), Err(Capped));
        v.delete(Scope::Local, "a");
        v.delete(Scope::Local, "a");
        assert!(!v.contains(Scope::Local, "a"));
        v.set(Scope::Local, "b", "12345").unwrap();
        assert_eq!(v.total, 5);
    }

    #[test]
    fn caps_cut_at_char_boundaries() {
        let mut v = Vars::new(&BTreeMap::new(), &BTreeMap::new(), 5, 8);
        assert_eq!(v.set(Scope::Local, "a", "ééé"), Err(Capped));
        assert_eq!(v.get(Scope::Local, "a"), "éé");
        assert_eq!(v.set(Scope::Local, "b", "12345"), Err(Capped));
        assert_eq!(v.get(Scope::Local, "b"), "1234");
        // Replacing a value frees its bytes.
        v.set(Scope::Local, "a", "").unwrap();
        v.set(Scope::Local, "b", "12345").unwrap();
    }
}
