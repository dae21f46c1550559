//! Template syntax: pest tokens (`lexer`), the macro catalog the compiler resolves names against
//! (`catalog`), the pairing pass (`builder`) and the tree it produces (`tree`).

mod blocks;
mod builder;
pub(crate) mod catalog;
pub(crate) mod lexer;
mod lines;
pub(crate) use lines::LineIndex;
pub(crate) mod tree;

pub(crate) use crate::span::Span;
pub(crate) use tree::Tree;

use crate::diagnostic::{DiagnosticKind, Finding};
use crate::limits::Limits;

/// Parses one template into a tree. Never fails: every string parses to some tree. Text past
/// `limits.template_bytes` is cut off (reported), so every offset fits a `u32` span.
pub(crate) fn parse(source: Box<str>, limits: &Limits) -> (Tree, Vec<Finding>) {
    let limits = &limits.clamped();
    let (source, cut) = cut_to_limit(source, limits.template_bytes);
    let tokens = lexer::tokenize(&source).unwrap_or_else(|()| {
        // pest only gives up when a host set a call limit; keep the text as it is.
        vec![lexer::Token {
            kind: lexer::TokKind::Text,
            span: Span::new(0, source.len()),
        }]
    });
    // The builder borrows the source while building; the tree takes ownership afterwards.
    let (mut tree, mut findings) = builder::Builder::new(&source, limits).build(&tokens);
    if let Some(size) = cut {
        let end = source.len();
        findings.insert(
            0,
            Finding {
                kind: DiagnosticKind::LimitReached,
                span: Span::new(end, end),
                message: format!(
                    "template is {size} bytes, over the limit of {} bytes: the rest is cut",
                    limits.template_bytes
                ),
            },
        );
    }
    tree.source = source;
    (tree, findings)
}

/// `source` cut to `limit` bytes at a char boundary, and its original size when it was cut.
fn cut_to_limit(source: Box<str>, limit: usize) -> (Box<str>, Option<usize>) {
    if source.len() <= limit {
        return (source, None);
    }
    let size = source.len();
    let keep = crate::limits::fit(&source, limit).len();
    let mut s = String::from(source);
    s.truncate(keep);
    (s.into_boxed_str(), Some(size))
}
