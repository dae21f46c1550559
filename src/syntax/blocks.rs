//! Block pairing for one scope (SPEC §1.2): the template body, an argument, or a condition
//! operand. Openers, `else` and closers of both dialects share one stack; the recovery rules
//! (stray, malformed, unclosed, nesting limit) are applied here and reported once each.

use super::builder::{Builder, ItemKind, OpenBlock};
use super::tree::{Block, BlockKind, BlockState, List, Node, Span};
use crate::diagnostic::DiagnosticKind;

impl Builder<'_> {
    pub(super) fn push_node(&mut self, node: Node) {
        // Adjacent literal runs merge, so a placeholder scan or copy sees one run.
        match (self.pending.last_mut(), node) {
            (Some(Node::Text(prev)), Node::Text(s))
            | (Some(Node::Verbatim(prev)), Node::Verbatim(s))
                if prev.end == s.start =>
            {
                prev.end = s.end;
            }
            _ => self.pending.push(node),
        }
    }

    fn commit(&mut self, from: usize) -> List {
        let start = self.nodes.len() as u32;
        self.nodes.extend_from_slice(&self.pending[from..]);
        self.pending.truncate(from);
        List {
            start,
            len: self.nodes.len() as u32 - start,
        }
    }

    /// The scoped comments of one level (SPEC §11.4): a closer takes the most recent
    /// unmatched opener; each outermost pair covers a range to remove, everything between
    /// included. Unmatched marks are removed alone (they are comments). Linear: one stack.
    fn comment_ranges(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        if !self.has_comment_marks {
            // The common case: no scoped comment anywhere in the node, no scan.
            return ranges;
        }
        let mut open: Vec<usize> = Vec::new();
        for i in from..to {
            match self.items[i].kind {
                ItemKind::CommentMark { opener: true } => open.push(i),
                ItemKind::CommentMark { opener: false } => match open.pop() {
                    Some(start) if open.is_empty() => ranges.push((start, i)),
                    Some(_) => {}
                    None => ranges.push((i, i)),
                },
                _ => {}
            }
        }
        ranges.extend(open.into_iter().map(|i| (i, i)));
        ranges.sort_unstable();
        ranges
    }

    /// Builds one scope (items[from..to]) into a list, pairing its blocks.
    pub(super) fn build_list(&mut self, from: usize, to: usize) -> List {
        let pending_base = self.pending.len();
        let open_base = self.open.len();
        let mut literal_depth = 0u32;
        let comments = self.comment_ranges(from, to);
        let mut next_comment = 0;
        let mut i = from;
        while i < to {
            if let Some(&(start, end)) = comments.get(next_comment)
                && start == i
            {
                next_comment += 1;
                i = end + 1;
                continue;
            }
            let it = self.items[i];
            i += 1;
            if literal_depth > 0 {
                match it.kind {
                    ItemKind::Open(_) => {
                        literal_depth += 1;
                        self.nesting_limit(it.span);
                    }
                    ItemKind::Close { .. } => literal_depth -= 1,
                    ItemKind::Else { .. } => {}
                    ItemKind::Node(n) => {
                        self.push_node(n);
                        continue;
                    }
                    ItemKind::Sep => {
                        self.push_node(Node::Text(it.span));
                        continue;
                    }
                    // Removed by `comment_ranges` before this loop sees them.
                    ItemKind::CommentMark { .. } => continue,
                }
                self.push_node(Node::Verbatim(it.span));
                continue;
            }
            match it.kind {
                ItemKind::Node(n) => self.push_node(n),
                ItemKind::Sep => self.push_node(Node::Text(it.span)),
                ItemKind::CommentMark { .. } => {}
                ItemKind::Open(opener) => {
                    if self.open.len() - open_base >= self.limits.block_nesting {
                        literal_depth = 1;
                        self.nesting_limit(it.span);
                        self.push_node(Node::Verbatim(it.span));
                    } else {
                        self.open.push(OpenBlock {
                            opener,
                            span: it.span,
                            then_start: self.pending.len(),
                            else_start: None,
                            faults: opener.malformed,
                        });
                    }
                }
                ItemKind::Else { malformed } => {
                    if self.open.len() == open_base {
                        self.finding(
                            DiagnosticKind::StrayElse,
                            it.span,
                            "`{{else}}` outside any block is dropped".into(),
                        );
                    } else {
                        let len = self.pending.len();
                        if let Some(top) = self.open.last_mut() {
                            if top.else_start.is_some() || malformed {
                                top.faults = true;
                            }
                            top.else_start.get_or_insert(len);
                        }
                    }
                }
                ItemKind::Close { closer, trailing } => {
                    if self.open.len() == open_base {
                        self.finding(
                            DiagnosticKind::StrayCloser,
                            it.span,
                            "closer without an open block is dropped".into(),
                        );
                    } else if let Some(mut top) = self.open.pop() {
                        if trailing || top.opener.closer != closer {
                            top.faults = true;
                        }
                        self.finish_block(top, false);
                    }
                }
            }
        }
        while self.open.len() > open_base {
            if let Some(top) = self.open.pop() {
                self.finish_block(top, true);
            }
        }
        self.commit(pending_base)
    }

    fn nesting_limit(&mut self, span: Span) {
        let limit = self.limits.block_nesting;
        self.finding(
            DiagnosticKind::NestingLimit,
            span,
            format!("block nested deeper than {limit} levels stays literal text"),
        );
    }

    fn finish_block(&mut self, b: OpenBlock, unclosed: bool) {
        let end = self.pending.len();
        let then_end = b.else_start.unwrap_or(end);
        let then = {
            let start = self.nodes.len() as u32;
            self.nodes
                .extend_from_slice(&self.pending[b.then_start..then_end]);
            List {
                start,
                len: (then_end - b.then_start) as u32,
            }
        };
        let otherwise = b.else_start.map(|_| {
            let start = self.nodes.len() as u32;
            self.nodes.extend_from_slice(&self.pending[then_end..end]);
            List {
                start,
                len: (end - then_end) as u32,
            }
        });
        self.pending.truncate(b.then_start);
        if unclosed {
            self.finding(
                DiagnosticKind::UnclosedBlock,
                b.span,
                match b.opener.kind {
                    BlockKind::Tomori { .. } => {
                        "block not closed before the end of its text is omitted".into()
                    }
                    BlockKind::Value { .. } => {
                        "block not closed before the end of its text ends there".into()
                    }
                },
            );
        }
        if b.faults {
            self.finding(
                DiagnosticKind::MalformedBlock,
                b.span,
                "malformed block is omitted with everything inside it".into(),
            );
        }
        let state = if b.faults {
            BlockState::Malformed
        } else if unclosed {
            BlockState::Unclosed
        } else {
            BlockState::Closed
        };
        self.blocks.push(Block {
            span: b.span,
            kind: b.opener.kind,
            cond: b.opener.cond,
            then,
            otherwise,
            state,
            trim: b.opener.trim,
        });
        let id = (self.blocks.len() - 1) as u32;
        self.pending.push(Node::Block(id));
    }
}
