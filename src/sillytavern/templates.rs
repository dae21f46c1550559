//! The templates a render brings besides the preset's prompts (the card's fields, the lore's
//! text, the settings' formats and nudges, the author's note), compiled once and kept by the
//! compiled preset: on a repeated turn they are the same texts, and parsing them again was
//! the largest part of a render in this layout with a real card.
//!
//! The texts come from strangers (cards, lorebooks, chat files), so the cache is bounded in
//! bytes and entries, never keeps a text it would have cut, and a hit is checked against the
//! text itself, not only its hash.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::limits::Limits;
use crate::node::CompiledNode;

/// Most source bytes one compiled preset keeps compiled: a few cards with their lore (a card's
/// fields are typically tens of kilobytes). Small on purpose: the store keeps up to
/// `cache_capacity` compiled presets (1,024 by default), each with its own cache.
const CACHE_BYTES: usize = 1 << 20;
/// Most templates kept; a full cache starts over (a bot's working set fits many times).
const CACHE_ENTRIES: usize = 1024;

/// Compiled templates by (identifier, text, the limits parsing reads).
#[derive(Debug, Default)]
pub(crate) struct TemplateCache {
    inner: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    map: HashMap<u128, Arc<CompiledNode>, crate::keyhash::KeyHasher>,
    bytes: usize,
}

impl TemplateCache {
    /// Each `(identifier, text)` compiled, from the cache where an earlier render compiled it.
    pub(crate) fn compile_all<'a>(
        &self,
        texts: impl Iterator<Item = (&'static str, &'a str)>,
        limits: &Limits,
    ) -> Vec<Arc<CompiledNode>> {
        let limits = limits.clamped();
        let limit_bytes = limit_bytes(&limits);
        // A poisoned lock (a panic elsewhere mid-insert) only costs the cache.
        let mut kept = self.inner.lock().ok();
        texts
            .map(|(id, text)| {
                // The render hands over only the templates that are not plain text (plain ones,
                // the empty fields among them, are their own text: `sillytavern::plain`).
                let cacheable =
                    text.len() <= limits.template_bytes && text.len() <= CACHE_BYTES / 4;
                let Some(kept) = kept.as_deref_mut().filter(|_| cacheable) else {
                    return Arc::new(CompiledNode::compile(id, text, &limits));
                };
                let key = key(id, text, &limit_bytes);
                if let Some(node) = kept.map.get(&key)
                    && &*node.id == id
                    && &*node.tree.source == text
                {
                    return node.clone();
                }
                let node = Arc::new(CompiledNode::compile(id, text, &limits));
                if kept.map.len() >= CACHE_ENTRIES || kept.bytes + text.len() > CACHE_BYTES {
                    kept.map.clear();
                    kept.bytes = 0;
                }
                if let Some(old) = kept.map.insert(key, node.clone()) {
                    kept.bytes -= old.tree.source.len();
                }
                kept.bytes += text.len();
                node
            })
            .collect()
    }
}

/// The limits parsing reads, as the bytes a key starts with (once per render, not per text).
fn limit_bytes(limits: &Limits) -> [u8; 24] {
    let mut bytes = [0u8; 24];
    let numbers = [
        limits.block_nesting,
        limits.tag_nesting,
        limits.template_bytes,
    ];
    for (chunk, n) in bytes.chunks_exact_mut(8).zip(numbers) {
        chunk.copy_from_slice(&(n as u64).to_le_bytes());
    }
    bytes
}

/// The key: the text's hash (seeded per process) over everything parsing reads (a card's
/// fields are hashed every render; they are not copied to be hashed).
fn key(id: &str, text: &str, limits: &[u8; 24]) -> u128 {
    crate::keyhash::parts_hash(&[limits, id.as_bytes(), text.as_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(
        list: &[(&'static str, &'static str)],
    ) -> impl Iterator<Item = (&'static str, &'static str)> {
        list.iter().copied()
    }

    #[test]
    fn a_repeated_text_is_compiled_once_and_renders_the_same() {
        let cache = TemplateCache::default();
        let limits = Limits::default();
        let list = [
            ("description", "{{char}} tends the shrine; {{user}} visits."),
            ("persona", "{{user}} is a student of the old songs."),
        ];
        let first = cache.compile_all(texts(&list), &limits);
        let second = cache.compile_all(texts(&list), &limits);
        for (a, b) in first.iter().zip(&second) {
            assert!(Arc::ptr_eq(a, b));
        }
        let fresh = CompiledNode::compile(list[0].0, list[0].1, &limits);
        assert_eq!(format!("{:?}", first[0].tree), format!("{:?}", fresh.tree));
    }

    #[test]
    fn the_identifier_and_the_limits_are_part_of_the_key() {
        let cache = TemplateCache::default();
        let limits = Limits::default();
        let text = "{{#if a}}{{#if b}}deep{{/if}}{{/if}} and more text";
        let a = cache.compile_all(texts(&[("description", text)]), &limits);
        let b = cache.compile_all(texts(&[("persona", text)]), &limits);
        assert_eq!(&*b[0].id, "persona");
        assert!(!Arc::ptr_eq(&a[0], &b[0]));
        let shallow = Limits {
            block_nesting: 1,
            ..Limits::default()
        };
        let c = cache.compile_all(texts(&[("description", text)]), &shallow);
        assert!(!Arc::ptr_eq(&a[0], &c[0]));
        let fresh = CompiledNode::compile("description", text, &shallow);
        assert_eq!(
            format!("{:?}", c[0].findings),
            format!("{:?}", fresh.findings)
        );
    }

    #[test]
    fn the_cache_stays_within_its_bytes() {
        let cache = TemplateCache::default();
        let limits = Limits::default();
        let big: Vec<String> = (0..40)
            .map(|i| format!("{i:>8}{}", "x".repeat(200_000)))
            .collect();
        for text in &big {
            let node = cache.compile_all([("description", text.as_str())].into_iter(), &limits);
            assert_eq!(&*node[0].tree.source, text.as_str());
            let kept = cache.inner.lock().unwrap();
            assert!(kept.bytes <= CACHE_BYTES);
            assert_eq!(
                kept.bytes,
                kept.map
                    .values()
                    .map(|n| n.tree.source.len())
                    .sum::<usize>()
            );
        }
        // Texts past the template limit are cut when compiled, so they are never kept.
        let small = Limits {
            template_bytes: 100,
            ..Limits::default()
        };
        let long = "y".repeat(300);
        let node = cache.compile_all([("description", long.as_str())].into_iter(), &small);
        assert_eq!(node[0].tree.source.len(), 100);
        let again = cache.compile_all([("description", long.as_str())].into_iter(), &small);
        assert!(!Arc::ptr_eq(&node[0], &again[0]));
    }
}
