//! A hasher for maps whose keys are already hashes drawn under a per-process secret (the
//! regex cache's text hashes, the token-count cache's keys): chat text cannot aim at one
//! bucket, so the map uses the key's bits as they are instead of hashing them again with
//! SipHash (a fifth of a 200-message budgeted render went to that second hash).

#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct KeyHasher;

impl std::hash::BuildHasher for KeyHasher {
    type Hasher = KeyHash;
    fn build_hasher(&self) -> KeyHash {
        KeyHash(0)
    }
}

#[derive(Debug)]
pub(crate) struct KeyHash(u64);

impl std::hash::Hasher for KeyHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(5) ^ u64::from_le_bytes(b);
        }
    }
    fn write_u128(&mut self, n: u128) {
        self.0 = self.0.rotate_left(5) ^ (n as u64) ^ ((n >> 64) as u64);
    }
}

/// A text's cache hash: xxh3 with a seed drawn once per process, so the keys of chat text a
/// stranger wrote cannot be predicted (no crafted collisions, no crafted buckets).
pub(crate) fn text_hash(bytes: &[u8]) -> u128 {
    twox_hash::XxHash3_128::oneshot_with_seed(seed(), bytes)
}

/// [`text_hash`] of several byte strings: each part hashed on its own and chained into the
/// hash so far (so no two lists of strings hash as one, and nothing is joined or copied).
/// One-shot hashes only: twox-hash's streaming hasher allocates and derives a secret from the
/// seed on every call, which cost more than hashing a card's fields (a render hashes each of
/// its templates every turn).
pub(crate) fn parts_hash(parts: &[&[u8]]) -> u128 {
    let mut so_far = 0u128;
    let mut chained = [0u8; 32];
    for part in parts {
        chained[..16].copy_from_slice(&so_far.to_le_bytes());
        chained[16..].copy_from_slice(&text_hash(part).to_le_bytes());
        so_far = text_hash(&chained);
    }
    so_far
}

fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    // std's `RandomState` carries random keys per process: one hash of it is the seed.
    *SEED.get_or_init(|| {
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u8)
    })
}

#[cfg(test)]
mod tests {
    use super::parts_hash;

    #[test]
    fn parts_hash_tells_lists_apart() {
        let whole = parts_hash(&[b"ab", b"c"]);
        assert_eq!(whole, parts_hash(&[b"ab", b"c"]));
        for other in [
            parts_hash(&[b"a", b"bc"]),
            parts_hash(&[b"abc"]),
            parts_hash(&[b"c", b"ab"]),
            parts_hash(&[b"ab", b"c", b""]),
            parts_hash(&[b"", b"ab", b"c"]),
        ] {
            assert_ne!(whole, other);
        }
    }
}
