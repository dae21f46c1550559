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

/// [`text_hash`] of several byte strings, each preceded by its length (so no two lists of
/// strings hash as one), streamed: nothing is joined.
pub(crate) fn parts_hash(parts: &[&[u8]]) -> u128 {
    let mut h = twox_hash::XxHash3_128::with_seed(seed());
    for part in parts {
        h.write(&(part.len() as u64).to_le_bytes());
        h.write(part);
    }
    h.finish_128()
}

fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    // std's `RandomState` carries random keys per process: one hash of it is the seed.
    *SEED.get_or_init(|| {
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), 0u8)
    })
}
