//! The compiled form of one template: a flat arena of nodes that point into the source by span.
//!
//! Lists of nodes are stored contiguously in `Tree::nodes` and referenced by `List` ranges, so a
//! tree is a handful of vectors: dropping or walking it never recurses through boxes.

use std::ops::Range;
use std::sync::OnceLock;

use super::catalog::MacroKind;
use super::lines::LineIndex;
pub(crate) use crate::span::Span;

/// The namespace of a TomoriBot predicate (`{{if capability:x}}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Namespace {
    Capability,
    Tool,
    ToolFamily,
}

/// Who an identity placeholder or compatibility placeholder names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Identity {
    User,
    Char,
    Bot,
    /// `<GROUP>`, `<CHARIFNOTGROUP>`: the group's members, or `char` (compatibility only).
    Group,
}

/// A contiguous run of nodes in `Tree::nodes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct List {
    /// First byte.
    pub start: u32,
    pub len: u32,
}

impl List {
    pub fn range(self) -> Range<usize> {
        self.start as usize..(self.start + self.len) as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Node {
    /// Literal template text.
    Text(Span),
    /// Text kept verbatim: structural tags past the nesting limit, tags past the tag-nesting limit.
    Verbatim(Span),
    /// `\{` or `\}`: a plain brace that never takes part in a tag or placeholder.
    Escape(u8),
    /// `{name}`: a tool or identity placeholder (in body text); plain text in arguments.
    Placeholder(Span),
    /// `<USER>`, `<BOT>`, `<CHAR>`, `<GROUP>`, `<CHARIFNOTGROUP>` in any case; the span is the
    /// written text, kept once the work budget is spent.
    Compat(Identity, Span),
    /// A value macro: index into `Tree::calls`.
    Call(u32),
    /// A block: index into `Tree::blocks`.
    Block(u32),
}

/// How a call fared at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallShape {
    Ok,
    /// A known macro with the wrong number of arguments: stays literal (`BadArguments`).
    BadArguments,
}

#[derive(Debug, Clone)]
pub(crate) struct Call {
    /// The whole tag, `{{` to `}}` (for a bare condition: the condition text).
    pub span: Span,
    pub kind: MacroKind,
    pub shape: CallShape,
    /// Range into `Tree::args`.
    pub args: Range<u32>,
    /// Declarations (`setvar` & co.) own a slot for what pass 1 records; others `u32::MAX`.
    pub slot: u32,
    /// A scoped macro's content (SPEC §11.3), its last argument; `span` then runs from the
    /// opener to the end of the closer.
    pub content: Option<Arg>,
    /// The opener carried `#`: the content is not auto-trimmed.
    pub keep_ws: bool,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Arg {
    /// Where the argument's text sits in the source (for literal re-rendering).
    pub span: Span,
    pub body: List,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockKind {
    /// `{{#if}}` and `{{if}}` (value condition); `negate` for `#unless` and `!`.
    Value { negate: bool },
    /// `{{if [!]ns:name}}`, answered by the host.
    Tomori {
        negate: bool,
        ns: Namespace,
        name: Span,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BlockState {
    Closed,
    /// Reached the end of its scope without a closer.
    Unclosed,
    /// Omitted whole (`MalformedBlock`).
    Malformed,
}

#[derive(Debug, Clone)]
pub(crate) struct Block {
    /// The opener tag.
    pub span: Span,
    pub kind: BlockKind,
    /// The condition call of a value block.
    pub cond: Option<u32>,
    pub then: List,
    pub otherwise: Option<List>,
    pub state: BlockState,
    /// `{{if}}` blocks auto-trim their taken branch (T, SPEC §11.3).
    pub trim: bool,
}

/// A parsed template. Built by `syntax::parse`, read by `eval`.
#[derive(Debug)]
pub(crate) struct Tree {
    pub source: Box<str>,
    pub nodes: Vec<Node>,
    pub calls: Vec<Call>,
    pub args: Vec<Arg>,
    pub blocks: Vec<Block>,
    pub root: List,
    /// Number of declaration slots (see `Call::slot`).
    pub slots: u32,
    /// Whether the template contains anything but comments, `{{trim}}` and whitespace.
    pub comment_only: bool,
    pub lines: OnceLock<LineIndex>,
}

impl Tree {
    pub fn text(&self, span: Span) -> &str {
        // Spans come from the tokenizer and always fall on char boundaries.
        self.source.get(span.range()).unwrap_or("")
    }
    pub fn list(&self, list: List) -> &[Node] {
        &self.nodes[list.range()]
    }
    /// The arguments written in the tag.
    pub fn call_args(&self, call: &Call) -> &[Arg] {
        &self.args[call.args.start as usize..call.args.end as usize]
    }
    /// The written arguments, then a scoped macro's content.
    pub fn all_args<'t>(&'t self, call: &'t Call) -> impl Iterator<Item = &'t Arg> + 't {
        self.call_args(call).iter().chain(call.content.as_ref())
    }
    /// Every call reachable from the root: both branches of every block (malformed ones too),
    /// conditions and arguments, in no particular order. Iterative: input depth cannot grow
    /// the stack.
    pub fn reachable_calls(&self) -> Vec<&Call> {
        let mut out = Vec::new();
        let mut todo = vec![self.root];
        while let Some(list) = todo.pop() {
            for node in self.list(list) {
                match *node {
                    Node::Call(c) => {
                        let call = &self.calls[c as usize];
                        out.push(call);
                        todo.extend(self.all_args(call).map(|a| a.body));
                    }
                    Node::Block(b) => {
                        let block = &self.blocks[b as usize];
                        todo.push(block.then);
                        todo.extend(block.otherwise);
                        if let Some(c) = block.cond {
                            let call = &self.calls[c as usize];
                            out.push(call);
                            todo.extend(self.call_args(call).iter().map(|a| a.body));
                        }
                    }
                    _ => {}
                }
            }
        }
        out.sort_by_key(|c| c.span.start);
        out
    }

    /// 1-based line and byte column of a byte offset.
    pub fn line_col(&self, offset: u32) -> (u32, u32) {
        self.lines
            .get_or_init(|| LineIndex::new(&self.source))
            .line_col(offset)
    }
}
