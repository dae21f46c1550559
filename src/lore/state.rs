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
/// let state: stpreset::WiState = serde_json::from_str(r#"{"version": 1, "effects": []}"#).unwrap();
/// assert!(state.effects.is_empty());
/// assert_eq!(serde_json::to_string(&state).unwrap(), r#"{"version":1,"effects":[]}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WiState {
    /// Always 1.
    #[serde(default = "version_one")]
    pub version: u32,
    /// Sticky effects, then cooldowns.
    #[serde(default)]
    pub effects: Vec<Effect>,
}

fn version_one() -> u32 {
    1
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
///
/// serde_json (without `preserve_order`) writes a `Value`'s object keys sorted by bytes, which
/// is RFC 8785's UTF-16 order for the ASCII field names; strings are escaped as `JSON.stringify`
/// does and integers print as integers, so the bytes are the canonical form.
pub(crate) fn fingerprint(entry: &Entry) -> String {
    let value = serde_json::to_value(entry).unwrap_or(serde_json::Value::Null);
    let text = serde_json::to_string(&value).unwrap_or_default();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
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
}
