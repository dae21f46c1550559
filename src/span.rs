//! Byte ranges into a template's source, shared by the tree and diagnostics.

use std::ops::Range;

/// A byte range into a template's source.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Span {
    /// First byte.
    pub(crate) start: u32,
    /// One past the last byte.
    pub(crate) end: u32,
}

impl Span {
    pub(crate) fn new(start: usize, end: usize) -> Span {
        // Sources are capped far below 4 GiB (SPEC §8), so offsets fit in u32.
        Span {
            start: start as u32,
            end: end as u32,
        }
    }
    pub(crate) fn range(self) -> Range<usize> {
        self.start as usize..self.end as usize
    }
    pub(crate) fn len(self) -> usize {
        (self.end - self.start) as usize
    }
}
