//! Block pairing for one scope (SPEC §1.2): the template body, an argument, or a condition
//! operand. Openers, `else` and closers of both dialects share one stack; the recovery rules
//! (stray, malformed, unclosed, nesting limit) are applied here and reported once each.

use std::collections::HashMap;

use super::builder::{Builder, ItemKind, OpenBlock, OpenFrame};
use super::catalog::MacroKind;
use super::tree::{Arg, Block, BlockKind, BlockState, CallShape, List, Node, Span};
use crate::diagnostic::DiagnosticKind;

/// Confirmed scoped pairs of a level, both ways (item index → partner item index).
type Partners = HashMap<usize, usize>;

/// `opened` marker for a pair past the depth limit.
const LITERAL_PAIR: usize = usize::MAX;

impl Builder<'_> {
    /// Item indices of from..to outside the (sorted, disjoint) comment ranges.
    pub(super) fn uncommented(
        from: usize,
        to: usize,
        comments: &[(usize, usize)],
    ) -> impl Iterator<Item = usize> + '_ {
        let mut next = 0;
        let mut i = from;
        std::iter::from_fn(move || {
            while let Some(&(start, end)) = comments.get(next)
                && start == i
            {
                next += 1;
                i = end + 1;
            }
            (i < to).then(|| {
                i += 1;
                i - 1
            })
        })
    }

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
    pub(super) fn comment_ranges(&self, from: usize, to: usize) -> Vec<(usize, usize)> {
        let mut ranges = Vec::new();
        if !self.has_comment_marks {
            // The common case: no scoped comment anywhere in the node, no scan.
            return ranges;
        }
        let mut marks = Vec::new();
        let mut open: Vec<usize> = Vec::new();
        for i in from..to {
            match self.items[i].kind {
                ItemKind::CommentMark { opener: true } => open.push(i),
                ItemKind::CommentMark { opener: false } => match open.pop() {
                    Some(start) => marks.push((start, i)),
                    None => marks.push((i, i)),
                },
                _ => {}
            }
        }
        marks.extend(open.into_iter().map(|i| (i, i)));
        // Keep the outermost: pairs nest, so after sorting, a range that starts inside the
        // last kept one lies inside it.
        marks.sort_unstable();
        let mut reach = None;
        for (start, end) in marks {
            if reach.is_none_or(|r| start > r) {
                ranges.push((start, end));
                reach = Some(end);
            }
        }
        ranges
    }

    /// Step 2 of SPEC §11.3: each eligible opener is pushed on a stack for its name (as
    /// written, ASCII case ignored), each scoped closer pops its name's stack. Blocks and other
    /// names play no part. Returns the confirmed pairs, both ways (item index → partner).
    /// Linear: one pass, one stack per name.
    fn scoped_pairs(&self, from: usize, to: usize, comments: &[(usize, usize)]) -> Partners {
        let mut partner = Partners::new();
        if !self.has_scoped_closers {
            return partner;
        }
        let mut stacks: HashMap<String, Vec<usize>> = HashMap::new();
        for i in Self::uncommented(from, to, comments) {
            match self.items[i].kind {
                ItemKind::Node(Node::Call(id)) => {
                    if let Some(&name) = self.openers.get(&id) {
                        let key = self.text(name).to_ascii_lowercase();
                        stacks.entry(key).or_default().push(i);
                    }
                }
                ItemKind::ScopedClose { name, .. } => {
                    let key = self.text(name).to_ascii_lowercase();
                    if let Some(opener) = stacks.get_mut(&key).and_then(Vec::pop) {
                        partner.insert(opener, i);
                        partner.insert(i, opener);
                    }
                }
                _ => {}
            }
        }
        partner
    }

    /// Builds one level (items[from..to]) into a list (SPEC §1.2, §11.3, §11.4): scoped
    /// comments removed, scoped pairs confirmed, then block and scoped frames on one stack.
    pub(super) fn build_list(&mut self, from: usize, to: usize) -> List {
        let pending_base = self.pending.len();
        let open_base = self.open.len();
        let blocks_base = self.open_blocks;
        let mut literal_depth = 0u32;
        let comments = self.comment_ranges(from, to);
        let partner = self.scoped_pairs(from, to, &comments);
        // Confirmed openers met so far: their frame's index in `open` (still theirs only if
        // the frame there has the same opener), or `LITERAL_PAIR` for a pair past the depth
        // limit, whose closer then stays verbatim too.
        let mut opened: HashMap<usize, usize> = HashMap::new();
        for i in Self::uncommented(from, to, &comments) {
            let it = self.items[i];
            if literal_depth > 0 {
                match it.kind {
                    ItemKind::Open(_) => {
                        literal_depth += 1;
                        self.nesting_limit(it.span);
                    }
                    ItemKind::Close { .. } => literal_depth -= 1,
                    ItemKind::Else { .. } => {}
                    // Scoped tags of a pair stay literal here and never open a region.
                    ItemKind::Node(Node::Call(_)) | ItemKind::ScopedClose { .. }
                        if partner.contains_key(&i) => {}
                    ItemKind::ScopedClose { call, .. } => {
                        self.stray(call, it.span);
                        continue;
                    }
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
                ItemKind::Node(Node::Call(call)) if partner.contains_key(&i) => {
                    if self.open.len() - open_base >= self.limits.block_nesting {
                        self.nesting_limit(it.span);
                        self.push_node(Node::Verbatim(it.span));
                        opened.insert(i, LITERAL_PAIR);
                    } else {
                        opened.insert(i, self.open.len());
                        self.open.push(OpenFrame::Scoped {
                            opener: i,
                            at: self.pending.len(),
                            blocks_below: self.open_blocks,
                        });
                        // Until its closer comes, the opener is an ordinary inline tag.
                        self.pending.push(Node::Call(call));
                    }
                }
                ItemKind::Node(n) => self.push_node(n),
                ItemKind::Sep => self.push_node(Node::Text(it.span)),
                ItemKind::CommentMark { .. } => {}
                ItemKind::ScopedClose { call, .. } => {
                    let opener = partner.get(&i).copied();
                    let at = opener.and_then(|o| opened.get(&o).map(|&at| (o, at)));
                    match at {
                        Some((_, LITERAL_PAIR)) => self.push_node(Node::Verbatim(it.span)),
                        Some((o, at)) if self.frame_is(at, o) => self.close_scoped(at, it.span),
                        _ => self.stray(call, it.span),
                    }
                }
                ItemKind::Open(opener) => {
                    if self.open.len() - open_base >= self.limits.block_nesting {
                        literal_depth = 1;
                        self.nesting_limit(it.span);
                        self.push_node(Node::Verbatim(it.span));
                    } else {
                        self.open_blocks += 1;
                        self.open.push(OpenFrame::Block(OpenBlock {
                            opener,
                            span: it.span,
                            then_start: self.pending.len(),
                            else_start: None,
                            faults: opener.malformed,
                        }));
                    }
                }
                ItemKind::Else { malformed } => {
                    if self.open_blocks == blocks_base {
                        self.finding(
                            DiagnosticKind::StrayElse,
                            it.span,
                            "`{{else}}` outside any block is dropped".into(),
                        );
                    } else {
                        self.dissolve_above_block();
                        let len = self.pending.len();
                        if let Some(OpenFrame::Block(top)) = self.open.last_mut() {
                            if top.else_start.is_some() || malformed {
                                top.faults = true;
                            }
                            top.else_start.get_or_insert(len);
                        }
                    }
                }
                ItemKind::Close { closer, trailing } => {
                    if self.open_blocks == blocks_base {
                        self.finding(
                            DiagnosticKind::StrayCloser,
                            it.span,
                            "closer without an open block is dropped".into(),
                        );
                    } else {
                        self.dissolve_above_block();
                        if let Some(OpenFrame::Block(mut top)) = self.open.pop() {
                            self.open_blocks -= 1;
                            if trailing || top.opener.closer != closer {
                                top.faults = true;
                            }
                            self.finish_block(top, false);
                        }
                    }
                }
            }
        }
        // End of the level, innermost first: blocks are unclosed, scoped frames dissolve.
        while self.open.len() > open_base {
            if let Some(OpenFrame::Block(top)) = self.open.pop() {
                self.open_blocks -= 1;
                self.finish_block(top, true);
            }
        }
        self.commit(pending_base)
    }

    /// Whether `open[at]` is still the scoped frame of the opener at item `opener`, with no
    /// block frame above it (a closer crossing a block is stray).
    fn frame_is(&self, at: usize, opener: usize) -> bool {
        matches!(self.open.get(at), Some(&OpenFrame::Scoped { opener: o, blocks_below, .. })
            if o == opener && blocks_below == self.open_blocks)
    }

    /// Dissolves the scoped frames above the innermost block: their openers stay ordinary
    /// inline tags and their content stays where it is, so dropping the frame is all it takes.
    fn dissolve_above_block(&mut self) {
        while matches!(self.open.last(), Some(OpenFrame::Scoped { .. })) {
            self.open.pop();
        }
    }

    /// Closes the scoped frame at `open[at]` (dissolving the scoped frames above it): the
    /// nodes after its opener become the call's content (SPEC §11.3).
    fn close_scoped(&mut self, at: usize, closer: Span) {
        self.open.truncate(at + 1);
        let Some(OpenFrame::Scoped { at: opener_at, .. }) = self.open.pop() else {
            return;
        };
        let Some(&Node::Call(id)) = self.pending.get(opener_at) else {
            return;
        };
        let body = self.commit(opener_at + 1);
        let call = &mut self.calls[id as usize];
        call.content = Some(Arg {
            span: Span {
                start: call.span.end,
                end: closer.start,
            },
            body,
        });
        call.span.end = closer.end;
        call.shape = CallShape::Ok;
        if call.kind.needs_slot() && call.slot == u32::MAX {
            call.slot = self.slots;
            self.slots += 1;
        }
    }

    /// A scoped closer that closes nothing stays literal text (SPEC §11.3 step 4).
    fn stray(&mut self, call: u32, span: Span) {
        if self.calls[call as usize].kind == MacroKind::Closer {
            self.stray_closer(span);
        }
        self.push_node(Node::Call(call));
    }

    pub(super) fn stray_closer(&mut self, span: Span) {
        self.finding(
            DiagnosticKind::StrayCloser,
            span,
            "scoped closer that closes nothing stays literal text".into(),
        );
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::syntax::parse;

    #[test]
    fn uncommented_skips_ranges() {
        let got: Vec<usize> = Builder::uncommented(0, 10, &[(1, 3), (4, 4), (8, 9)]).collect();
        assert_eq!(got, [0, 5, 6, 7]);
        assert_eq!(Builder::uncommented(2, 2, &[]).count(), 0);
    }

    #[test]
    fn a_confirmed_pair_is_one_call_with_its_content() {
        let (t, f) = parse(
            "a{{setvar::k}}b{{user}}{{/SETVAR}}c".into(),
            &Limits::default(),
        );
        assert!(f.is_empty());
        let root = t.list(t.root);
        assert_eq!(root.len(), 3);
        let Node::Call(id) = root[1] else {
            panic!("{root:?}")
        };
        let call = &t.calls[id as usize];
        assert_eq!(t.text(call.span), "{{setvar::k}}b{{user}}{{/SETVAR}}");
        assert_eq!(call.shape, CallShape::Ok);
        assert_ne!(call.slot, u32::MAX);
        let content = call.content.expect("content");
        assert_eq!(t.text(content.span), "b{{user}}");
        assert_eq!(t.list(content.body).len(), 2);
    }

    #[test]
    fn dissolved_frames_leave_their_opener_inline() {
        let (t, f) = parse(
            "{{setvar::k}}a{{#if x}}{{/setvar}}{{/if}}".into(),
            &Limits::default(),
        );
        assert_eq!(
            f.iter().map(|f| f.kind).collect::<Vec<_>>(),
            [DiagnosticKind::StrayCloser]
        );
        let call = &t.calls[0];
        assert!(call.content.is_none());
        assert_eq!(call.shape, CallShape::BadArguments);
    }
}
