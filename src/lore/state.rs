//! Timed-effect state (SPEC §15.6): what a host stores per conversation between activation
//! calls. Effects link to entries by name (`BOOK.UID`) and a fingerprint of the entry, so an
//! edited entry detaches its effects instead of inheriting them.

use serde::{Deserialize, Serialize};

use super::book::Entry;

/// Which timed effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EffectKind {
    /// The entry stays active until `end`.
    Sticky,
    /// The entry cannot activate until `end`.
    Cooldown,
}

/// One timed effect on one entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Effect {
    /// Sticky or cooldown.
    pub kind: EffectKind,
    /// The entry, `BOOK.UID`.
    pub entry: String,
    /// FNV-1a 64 of the entry's normalised fields (16 lowercase hex digits).
    pub fingerprint: String,
    /// The message position it started at.
    pub start: u64,
    /// The message position it ends at.
    pub end: u64,
    /// A cooldown set by an ending sticky effect: not dropped at its own start position.
    pub protected: bool,
}

/// The state a host keeps per conversation and passes back on the next call.
///
/// ```
/// let state: stpreset::lore::WiState = serde_json::from_str(r#"{"version": 1, "effects": []}"#).unwrap();
/// assert!(state.effects.is_empty());
/// assert_eq!(serde_json::to_string(&state).unwrap(), r#"{"version":1,"effects":[]}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WiState {
    /// Always 1; a state of another version is refused rather than misread.
    #[serde(default = "version_one", deserialize_with = "only_version_one")]
    pub version: u32,
    /// Sticky effects, then cooldowns.
    #[serde(default)]
    pub effects: Vec<Effect>,
}

fn version_one() -> u32 {
    1
}

fn only_version_one<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if v != 1 {
        return Err(serde::de::Error::custom(format!(
            "World Info state version {v}: this stpreset reads version 1"
        )));
    }
    Ok(v)
}

impl Default for WiState {
    fn default() -> Self {
        WiState {
            version: 1,
            effects: Vec::new(),
        }
    }
}

/// FNV-1a 64 over the entry's normalised fields written as RFC 8785 canonical JSON.
pub(crate) fn fingerprint(entry: &Entry) -> String {
    let value = serde_json::to_value(entry).unwrap_or(serde_json::Value::Null);
    let mut text = String::new();
    canonical(&value, &mut text);
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

/// RFC 8785: object keys sorted by UTF-16 units (serde_json's map sorts by bytes, the same for
/// the ASCII field names of an entry), strings escaped as `JSON.stringify` (serde_json's
/// escapes), numbers as ECMAScript writes them.
fn canonical(v: &serde_json::Value, out: &mut String) {
    use serde_json::Value;
    match v {
        Value::Object(map) => {
            out.push('{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                canonical(v, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(v, out);
            }
            out.push(']');
        }
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() => out.push_str(&es_number(f)),
            _ => out.push_str(&n.to_string()),
        },
        other => out.push_str(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// ECMAScript `Number::toString` for a finite number: plain decimals from 1e-6 up to 1e21,
/// exponent form outside (Rust's `Display` never uses an exponent; ryu's `Debug`-like form
/// used by serde_json does below 1e-5, as `1e-6` where ECMAScript writes `0.000001`).
fn es_number(f: f64) -> String {
    let a = f.abs();
    if f == 0.0 {
        "0".into()
    } else if (1e-6..1e21).contains(&a) {
        format!("{f}")
    } else {
        // Shortest digits in exponent form: `1e-7`, `1.5e+21` (ECMAScript writes the sign).
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::lore::Lorebook;

    #[test]
    fn fingerprint_changes_with_any_field_and_not_with_the_book() {
        let a = Lorebook::from_json(
            "A",
            br#"{"entries": {"0": {"key": ["x"], "content": "c"}}}"#,
            &Limits::default(),
        )
        .unwrap();
        let b = Lorebook::from_json(
            "B",
            br#"{"entries": {"0": {"content": "c", "key": ["x"]}}}"#,
            &Limits::default(),
        )
        .unwrap();
        let c = Lorebook::from_json(
            "A",
            br#"{"entries": {"0": {"key": ["x"], "content": "d"}}}"#,
            &Limits::default(),
        )
        .unwrap();
        let fa = fingerprint(&a.entries[0]);
        assert_eq!(fa.len(), 16);
        assert_eq!(fa, fingerprint(&b.entries[0]));
        assert_ne!(fa, fingerprint(&c.entries[0]));
    }

    #[test]
    fn another_state_version_is_refused() {
        assert!(serde_json::from_str::<WiState>(r#"{"version": 2, "effects": []}"#).is_err());
        assert!(serde_json::from_str::<WiState>(r#"{"effects": []}"#).is_ok());
    }

    #[test]
    fn numbers_are_written_as_ecmascript_writes_them() {
        assert_eq!(es_number(0.000001), "0.000001");
        assert_eq!(es_number(1e-7), "1e-7");
        assert_eq!(es_number(50.5), "50.5");
        assert_eq!(es_number(1e21), "1e+21");
        assert_eq!(es_number(0.1), "0.1");
    }
}
