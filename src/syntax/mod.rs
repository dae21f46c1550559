//! Template syntax: pest tokens (`lexer`), the macro catalog the compiler resolves names against
//! (`catalog`), the pairing pass (`builder`) and the tree it produces (`tree`).

mod blocks;
mod builder;
pub(crate) mod catalog;
pub(crate) mod lexer;
mod lines;
pub(crate) mod tree;

pub use tree::Span;
pub(crate) use tree::Tree;

use crate::diagnostic::Finding;
use crate::limits::Limits;

/// Parses one template into a tree. Never fails: every string parses to some tree.
pub(crate) fn parse(source: Box<str>, limits: &Limits) -> (Tree, Vec<Finding>) {
    let tokens = lexer::tokenize(&source).unwrap_or_else(|()| {
        // pest only gives up when a host set a call limit; keep the text as it is.
        vec![lexer::Token {
            kind: lexer::TokKind::Text,
            span: Span::new(0, source.len()),
        }]
    });
    // The builder borrows the source while building; the tree takes ownership afterwards.
    let (mut tree, findings) = builder::Builder::new(&source, limits).build(&tokens);
    tree.source = source;
    (tree, findings)
}
