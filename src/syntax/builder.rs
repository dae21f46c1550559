//! Tokens → tree. One linear pass pairs `{{` with `}}` on a frame stack, then each finished
//! scope (the template body, an argument, a condition operand) pairs its blocks on a block stack
//! and applies the recovery rules of SPEC §1.2. Nothing here recurses on input structure.

use std::collections::HashMap;

use super::catalog::{MacroKind, Scope, ShOp};
use super::lexer::{TokKind, Token, ident_end, name_end};
use super::tree::BlockState;
use super::tree::{Arg, Block, BlockKind, Call, CallShape, List, Node, Span, Tree};
use crate::diagnostic::{DiagnosticKind, Finding};
use crate::limits::Limits;

/// Which closer a block expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Closer {
    If,
    Unless,
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Opener {
    pub(super) kind: BlockKind,
    pub(super) closer: Closer,
    pub(super) cond: Option<u32>,
    pub(super) malformed: bool,
    /// `{{if}}` branches are auto-trimmed (T, SPEC §11.3); Handlebars and TomoriBot are not.
    pub(super) trim: bool,
}

/// A frame on the one stack of a level (SPEC §11.3 step 3).
#[derive(Debug, Clone, Copy)]
pub(super) enum OpenFrame {
    Block(OpenBlock),
    /// A confirmed scoped opener: item `opener`, its call at `pending[at]`, its content after
    /// it. `blocks_below` counts the block frames under it when it opened.
    Scoped {
        opener: usize,
        at: usize,
        blocks_below: usize,
    },
}

/// A block being filled in while its level is built.
#[derive(Debug, Clone, Copy)]
pub(super) struct OpenBlock {
    pub(super) opener: Opener,
    pub(super) span: Span,
    pub(super) then_start: usize,
    pub(super) else_start: Option<usize>,
    pub(super) faults: bool,
}

/// What a finished tag (or a raw token) contributes to the scope around it.
#[derive(Debug, Clone, Copy)]
pub(super) enum ItemKind {
    Node(Node),
    Sep,
    Open(Opener),
    Else {
        malformed: bool,
    },
    Close {
        closer: Closer,
        trailing: bool,
    },
    /// A scoped closer `{{/NAME}}` (SPEC §11.3). `call` renders it as literal text when it
    /// closes nothing.
    ScopedClose {
        call: u32,
        name: Span,
    },
    /// A scoped comment's opener (`{{//}}`) or closer (`{{///…}}`), SPEC §11.4: paired and
    /// removed with everything between them before a level is built.
    CommentMark {
        opener: bool,
    },
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Item {
    pub(super) span: Span,
    pub(super) kind: ItemKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FrameKind {
    Macro {
        name: Span,
        flags: u8,
    },
    Shorthand {
        scope: Scope,
        ident: Span,
        flags: u8,
    },
    TimeUtc {
        arg: Span,
    },
    Open,
    Comment,
    /// `value_if`: a `{{if}}` opener, whose condition follows SPEC §11.2 (`value_if`).
    Cond {
        closer: Closer,
        negate: bool,
        value_if: bool,
    },
    Else,
    Close(Closer),
    ScopedClose {
        name: Span,
    },
}

/// An open `{{`. `base` indexes its literal fallback item (the opener's own text); the tag's
/// content follows it on the shared item stack. If the tag never closes, or turns out to be
/// unparsable, that fallback simply stays: nothing has to be moved.
#[derive(Debug, Clone, Copy)]
struct Frame {
    kind: FrameKind,
    base: usize,
    /// Findings made before the tag opened; a comment drops the ones made inside it.
    findings: usize,
}

/// How a tag's text after the macro name splits into arguments.
enum Form {
    NoArgs,
    /// `::`-separated arguments, starting at this item.
    DoubleColon(usize),
    /// One argument (`:x`, ` x`) made of the items from here to the end of the tag.
    Single(usize),
}

pub(crate) struct Builder<'s> {
    src: &'s str,
    pub(super) limits: &'s Limits,
    pub(super) nodes: Vec<Node>,
    pub(super) calls: Vec<Call>,
    args: Vec<Arg>,
    pub(super) blocks: Vec<Block>,
    pub(super) items: Vec<Item>,
    frames: Vec<Frame>,
    pub(super) pending: Vec<Node>,
    /// Open block and scoped frames of the levels being built (`blocks`).
    pub(super) open: Vec<OpenFrame>,
    /// How many of `open` are block frames.
    pub(super) open_blocks: usize,
    /// Eligible scoped openers (SPEC §11.3) by call: the macro name as written.
    pub(super) openers: HashMap<u32, Span>,
    /// Whether any scoped closer was pushed (`blocks::scoped_pairs` scans only then).
    pub(super) has_scoped_closers: bool,
    arg_scratch: Vec<(usize, usize, Span)>,
    pub(super) findings: Vec<Finding>,
    pub(super) slots: u32,
    had_comment: bool,
    /// Whether any scoped-comment mark was pushed (`blocks::comment_ranges` scans only then).
    pub(super) has_comment_marks: bool,
}

impl<'s> Builder<'s> {
    pub fn new(src: &'s str, limits: &'s Limits) -> Self {
        Builder {
            src,
            limits,
            nodes: Vec::with_capacity(src.len() / 32 + 4),
            calls: Vec::new(),
            args: Vec::new(),
            blocks: Vec::new(),
            items: Vec::new(),
            frames: Vec::new(),
            pending: Vec::new(),
            open: Vec::new(),
            open_blocks: 0,
            openers: HashMap::new(),
            has_scoped_closers: false,
            arg_scratch: Vec::new(),
            findings: Vec::new(),
            slots: 0,
            had_comment: false,
            has_comment_marks: false,
        }
    }

    /// Consumes the token stream and returns the finished tree parts.
    pub fn build(mut self, tokens: &[Token]) -> (Tree, Vec<Finding>) {
        // Sized once: growing by doubling copied the items a few times per template. Live items
        // stay close to one per token (a closed tag replaces its own), so this costs about the
        // memory the tokens already take.
        self.items.reserve(tokens.len());
        // Inside a tag past the tag-nesting limit: (start, depth).
        let mut literal: Option<(u32, u32)> = None;
        for tok in tokens {
            if let Some((start, depth)) = literal.as_mut() {
                if tok.kind.opens_tag() {
                    *depth += 1;
                } else if tok.kind == TokKind::Close {
                    *depth -= 1;
                    if *depth == 0 {
                        let span = Span {
                            start: *start,
                            end: tok.span.end,
                        };
                        self.push_item(span, ItemKind::Node(Node::Verbatim(span)));
                        literal = None;
                    }
                }
                continue;
            }
            match tok.kind {
                k if k.opens_tag() => {
                    if self.frames.len() >= self.limits.tag_nesting {
                        self.finding(
                            DiagnosticKind::LimitReached,
                            tok.span,
                            format!(
                                "tag nested deeper than {} levels stays literal text",
                                self.limits.tag_nesting
                            ),
                        );
                        literal = Some((tok.span.start, 1));
                    } else {
                        self.open_frame(k, tok.span);
                    }
                }
                TokKind::Close => match self.frames.pop() {
                    Some(frame) => self.close_frame(frame, tok.span),
                    None => self.push_item(tok.span, ItemKind::Node(Node::Text(tok.span))),
                },
                TokKind::Sep => self.push_item(tok.span, ItemKind::Sep),
                TokKind::Text => self.push_item(tok.span, ItemKind::Node(Node::Text(tok.span))),
                TokKind::Escape(b) => self.push_item(tok.span, ItemKind::Node(Node::Escape(b))),
                TokKind::Placeholder => {
                    self.push_item(tok.span, ItemKind::Node(Node::Placeholder(tok.span)))
                }
                TokKind::Compat(who) => {
                    self.push_item(tok.span, ItemKind::Node(Node::Compat(who, tok.span)))
                }
                TokKind::Tomori { negate, ns, name } => {
                    let opener = Opener {
                        kind: BlockKind::Tomori { negate, ns, name },
                        closer: Closer::If,
                        cond: None,
                        malformed: false,
                        trim: false,
                    };
                    self.push_item(tok.span, ItemKind::Open(opener));
                }
                // `opens_tag` kinds are handled above.
                _ => {}
            }
        }
        if let Some((start, _)) = literal {
            let span = Span::new(start as usize, self.src.len());
            self.push_item(span, ItemKind::Node(Node::Verbatim(span)));
        }
        // Unclosed tags: their fallback text is already in place, so dropping the frames leaves
        // `{{` as literal text with the inside parsed normally. Those that began like a macro or
        // a directive are typos worth telling (`{{user}'s`, SPEC §11.14): at most one per frame,
        // and frames are bounded by the tag-nesting limit.
        for frame in std::mem::take(&mut self.frames) {
            if matches!(frame.kind, FrameKind::Open | FrameKind::Comment) {
                continue;
            }
            let head = self.items[frame.base].span;
            let message = format!(
                "`{}` has no closing `}}}}`: it stays literal text",
                crate::diagnostic::excerpt(self.text(head).trim_end())
            );
            self.finding(DiagnosticKind::UnclosedTag, head, message);
        }
        let root = self.build_list(0, self.items.len());
        let comment_only = self.had_comment && self.is_comment_only(root);
        let mut findings = self.findings;
        findings.sort_by_key(|f| f.span.start);
        let tree = Tree {
            source: Box::default(),
            nodes: self.nodes,
            calls: self.calls,
            args: self.args,
            blocks: self.blocks,
            root,
            slots: self.slots,
            comment_only,
            lines: Default::default(),
        };
        (tree, findings)
    }

    pub(super) fn finding(&mut self, kind: DiagnosticKind, span: Span, message: String) {
        self.findings.push(Finding {
            kind,
            span,
            message,
        });
    }

    fn push_item(&mut self, span: Span, kind: ItemKind) {
        self.items.push(Item { span, kind });
    }

    pub(super) fn text(&self, span: Span) -> &'s str {
        self.src.get(span.range()).unwrap_or("")
    }

    fn open_frame(&mut self, kind: TokKind, span: Span) {
        let kind = match kind {
            TokKind::Macro { name, flags } => FrameKind::Macro { name, flags },
            TokKind::TimeUtc { arg } => FrameKind::TimeUtc { arg },
            TokKind::Shorthand {
                global,
                ident,
                flags,
            } => FrameKind::Shorthand {
                scope: if global { Scope::Global } else { Scope::Local },
                ident,
                flags,
            },
            TokKind::Comment => FrameKind::Comment,
            TokKind::HashIf => FrameKind::Cond {
                closer: Closer::If,
                negate: false,
                value_if: false,
            },
            TokKind::ValueIf => FrameKind::Cond {
                closer: Closer::If,
                negate: false,
                value_if: true,
            },
            TokKind::HashUnless => FrameKind::Cond {
                closer: Closer::Unless,
                negate: true,
                value_if: false,
            },
            TokKind::Else => FrameKind::Else,
            TokKind::CloseIf => FrameKind::Close(Closer::If),
            TokKind::CloseUnless => FrameKind::Close(Closer::Unless),
            TokKind::ScopedClose { name } => FrameKind::ScopedClose { name },
            _ => FrameKind::Open,
        };
        let base = self.items.len();
        self.push_item(span, ItemKind::Node(Node::Text(span)));
        let findings = self.findings.len();
        self.frames.push(Frame {
            kind,
            base,
            findings,
        });
    }

    fn close_frame(&mut self, frame: Frame, close: Span) {
        let open = self.items[frame.base].span;
        let tag = Span {
            start: open.start,
            end: close.end,
        };
        let content = frame.base + 1;
        let result = match frame.kind {
            FrameKind::Comment => {
                self.had_comment = true;
                self.items.truncate(frame.base);
                self.findings.truncate(frame.findings);
                // The comment's text follows `//`: blank opens a scoped comment, a leading
                // `/` closes one (`{{///}}`); anything else is an ordinary comment.
                let text = self.text(Span {
                    start: open.end,
                    end: close.start,
                });
                if text.trim().is_empty() || text.starts_with('/') {
                    let opener = !text.starts_with('/');
                    self.has_comment_marks = true;
                    self.push_item(tag, ItemKind::CommentMark { opener });
                }
                return;
            }
            FrameKind::Open => None,
            FrameKind::TimeUtc { arg } => {
                // The grammar saw `}}` right after the digits, so the tag has no other content.
                let at = self.items.len();
                self.push_item(arg, ItemKind::Node(Node::Text(arg)));
                let to = self.items.len();
                let id = self.call(MacroKind::Time, tag, Form::Single(at), to, close.start);
                Some(ItemKind::Node(Node::Call(id)))
            }
            FrameKind::Macro { name, flags } => {
                let id = self.macro_call(name, tag, content, close);
                if let Some(id) = id {
                    let call = &mut self.calls[id as usize];
                    let kind = call.kind;
                    if kind.opens_scope(call.args.len()) {
                        call.keep_ws = flags & super::lexer::FLAG_HASH != 0;
                        self.openers.insert(id, name);
                    }
                    if kind != MacroKind::Unknown {
                        self.ignored_flags(flags, tag);
                    }
                }
                id.map(|id| ItemKind::Node(Node::Call(id)))
            }
            FrameKind::Shorthand {
                scope,
                ident,
                flags,
            } => {
                let to = self.items.len();
                let id = self.shorthand(scope, ident, tag, (content, to), close);
                if self.calls[id as usize].shape == CallShape::Ok {
                    self.ignored_flags(flags, tag);
                }
                Some(ItemKind::Node(Node::Call(id)))
            }
            FrameKind::Cond { value_if: true, .. } => Some(self.value_if(tag, content, close)),
            FrameKind::Cond { closer, negate, .. } => {
                let (cond, negate, malformed) = match self.condition(content, close) {
                    Some((id, neg)) => (Some(id), negate ^ neg, false),
                    None => {
                        self.malformed_condition(content, self.items.len());
                        (None, negate, true)
                    }
                };
                Some(ItemKind::Open(Opener {
                    kind: BlockKind::Value { negate },
                    closer,
                    cond,
                    malformed,
                    trim: false,
                }))
            }
            FrameKind::Else => Some(ItemKind::Else {
                malformed: !self.blank(content, self.items.len()),
            }),
            FrameKind::ScopedClose { name } => Some(self.scoped_closer(name, tag, content, close)),
            FrameKind::Close(closer) => Some(ItemKind::Close {
                closer,
                trailing: !self.blank(content, self.items.len()),
            }),
        };
        match result {
            Some(kind) => {
                self.items.truncate(frame.base);
                self.push_item(tag, kind);
            }
            // Unparsable: `{{` and `}}` are literal text, the inside stays as parsed.
            None => self.push_item(close, ItemKind::Node(Node::Text(close))),
        }
    }

    /// `{{/NAME}}` may close a scoped pair; `{{/NAME…}}` with anything else after NAME is a
    /// closer with arguments, which never pairs and stays literal with its nested tags
    /// evaluated (SPEC §11.3 step 4). Either way it is prepared as a literal call: of a catalog
    /// name `Closer` (its `StrayCloser` is a parse diagnostic), else `Unknown` (`UnknownMacro`
    /// where it is evaluated).
    fn scoped_closer(&mut self, name: Span, tag: Span, from: usize, close: Span) -> ItemKind {
        let kind = match MacroKind::lookup(self.text(name)) {
            MacroKind::Unknown => MacroKind::Unknown,
            _ => MacroKind::Closer,
        };
        let to = self.items.len();
        self.arg_scratch.clear();
        if self.blank(from, to) {
            self.has_scoped_closers = true;
            let call = self.finish_call(kind, tag, CallShape::Ok);
            return ItemKind::ScopedClose { call, name };
        }
        let start = self.items[from].span.start;
        self.arg_scratch.push((
            from,
            to,
            Span {
                start,
                end: close.start,
            },
        ));
        let call = self.finish_call(kind, tag, CallShape::Ok);
        if kind == MacroKind::Closer {
            self.stray_closer(tag);
        }
        ItemKind::Node(Node::Call(call))
    }

    /// True when items[from..to] are only whitespace text.
    fn blank(&self, from: usize, to: usize) -> bool {
        self.items[from..to].iter().all(|it| match it.kind {
            ItemKind::Node(Node::Text(s)) => self.text(s).trim_ascii().is_empty(),
            _ => false,
        })
    }

    /// Reads the argument form after a macro name; `None` when the tag is unparsable.
    fn form(&mut self, from: usize, to: usize) -> Option<Form> {
        if from == to {
            return Some(Form::NoArgs);
        }
        let first = self.items[from];
        match first.kind {
            ItemKind::Sep => Some(Form::DoubleColon(from + 1)),
            ItemKind::Node(Node::Text(t)) => {
                let s = self.text(t);
                if s.trim_ascii().is_empty() {
                    if from + 1 == to {
                        return Some(Form::NoArgs);
                    }
                    if matches!(self.items[from + 1].kind, ItemKind::Sep) {
                        return Some(Form::DoubleColon(from + 2));
                    }
                }
                let b = s.as_bytes().first().copied().unwrap_or(b'!');
                if b == b':' || b.is_ascii_whitespace() {
                    // Drop the one-byte separator; the argument is trimmed when evaluated.
                    let rest = Span {
                        start: t.start + 1,
                        end: t.end,
                    };
                    self.items[from] = Item {
                        span: rest,
                        kind: ItemKind::Node(Node::Text(rest)),
                    };
                    Some(Form::Single(from))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    fn macro_call(&mut self, name: Span, tag: Span, from: usize, close: Span) -> Option<u32> {
        let to = self.items.len();
        let kind = MacroKind::lookup(self.text(name));
        let form = self.form(from, to)?;
        Some(self.call(kind, tag, form, to, close.start))
    }

    /// Splits items[from..to] into arguments per `form`, builds each, and records the call.
    fn call(&mut self, kind: MacroKind, span: Span, form: Form, to: usize, end: u32) -> u32 {
        self.arg_scratch.clear();
        match form {
            Form::NoArgs => {}
            Form::Single(first) => {
                let start = self.items.get(first).map_or(end, |it| it.span.start);
                self.arg_scratch.push((first, to, Span { start, end }));
            }
            Form::DoubleColon(first) => {
                let mut start = first;
                let mut start_off = self.items[first - 1].span.end;
                let max_split = if kind.raw_value() { 1 } else { usize::MAX };
                for i in first..to {
                    if self.arg_scratch.len() < max_split
                        && matches!(self.items[i].kind, ItemKind::Sep)
                    {
                        let sep = self.items[i].span;
                        self.arg_scratch.push((
                            start,
                            i,
                            Span {
                                start: start_off,
                                end: sep.start,
                            },
                        ));
                        start = i + 1;
                        start_off = sep.end;
                    }
                }
                self.arg_scratch.push((
                    start,
                    to,
                    Span {
                        start: start_off,
                        end,
                    },
                ));
            }
        }
        let shape = if kind.arity().accepts(self.arg_scratch.len()) {
            CallShape::Ok
        } else {
            CallShape::BadArguments
        };
        self.finish_call(kind, span, shape)
    }

    /// Builds the arguments gathered in `arg_scratch` and records the call.
    pub(super) fn finish_call(&mut self, kind: MacroKind, span: Span, shape: CallShape) -> u32 {
        let first_arg = self.args.len() as u32;
        for i in 0..self.arg_scratch.len() {
            let (a, b, aspan) = self.arg_scratch[i];
            // Building an argument never creates calls, so the scratch list stays intact.
            let body = self.build_list(a, b);
            self.args.push(Arg { span: aspan, body });
        }
        let slot = if kind.needs_slot() && shape == CallShape::Ok {
            self.slots += 1;
            self.slots - 1
        } else {
            u32::MAX
        };
        self.calls.push(Call {
            span,
            kind,
            shape,
            args: first_arg..self.args.len() as u32,
            slot,
            content: None,
            keep_ws: false,
        });
        (self.calls.len() - 1) as u32
    }

    /// Parses a Handlebars block condition (SPEC §1.2): `[!]name[::args]`,
    /// `[!]{{nested tag}}`, or a shorthand expression `[!].v [OP R]` (SPEC §11.2). Returns the
    /// condition call and whether `!` negates it; `None` when malformed. (`{{if}}` conditions
    /// follow other rules: `if_condition`.)
    fn condition(&mut self, from: usize, close: Span) -> Option<(u32, bool)> {
        let to = self.items.len();
        let mut i = from;
        // Skip leading whitespace-only text.
        while i < to {
            match self.items[i].kind {
                ItemKind::Node(Node::Text(s)) if self.text(s).trim_ascii().is_empty() => i += 1,
                _ => break,
            }
        }
        let mut negate = false;
        let it = *self.items.get(i)?;
        match it.kind {
            ItemKind::Node(Node::Call(id)) => self.blank(i + 1, to).then_some((id, false)),
            ItemKind::Node(Node::Text(t)) => {
                let s = self.text(t);
                let lead = s.len() - s.trim_ascii_start().len();
                let mut at = t.start as usize + lead;
                if self.src.as_bytes()[at] == b'!' {
                    negate = true;
                    at += 1;
                    if at == t.end as usize {
                        // `!{{nested}}`: the operand is the very next item.
                        return match self.items.get(i + 1).map(|x| x.kind) {
                            Some(ItemKind::Node(Node::Call(id))) if self.blank(i + 2, to) => {
                                Some((id, true))
                            }
                            _ => None,
                        };
                    }
                }
                let bytes = self.src.as_bytes();
                if matches!(bytes[at], b'.' | b'$') {
                    return self
                        .shorthand_condition(i, at, t, to, close)
                        .map(|id| (id, negate));
                }
                let name_end = name_end(bytes, at, t.end as usize)?;
                if !bytes[name_end..t.end as usize]
                    .iter()
                    .all(u8::is_ascii_whitespace)
                {
                    return None; // legacy `:x` / ` x` forms, `! name`, stray text
                }
                let name = Span::new(at, name_end);
                let kind = MacroKind::lookup(self.text(name));
                let span = Span {
                    start: name.start,
                    end: close.start,
                };
                let form = if self.blank(i + 1, to) {
                    Form::NoArgs
                } else if matches!(self.items[i + 1].kind, ItemKind::Sep) {
                    Form::DoubleColon(i + 2)
                } else {
                    return None;
                };
                let id = self.call(kind, span, form, to, close.start);
                Some((id, negate))
            }
            _ => None,
        }
    }

    /// One `IgnoredFlag` (info) for a tag carrying flags SillyTavern reserves but does not
    /// implement (SPEC §11.7): they may change meaning when it does.
    fn ignored_flags(&mut self, flags: u8, tag: Span) {
        if flags & super::lexer::FLAG_IGNORED != 0 {
            self.finding(
                DiagnosticKind::IgnoredFlag,
                tag,
                "flags `!`, `?`, `~`, `>` are ignored (SillyTavern reserves them)".into(),
            );
        }
    }

    /// `{{if COND}}`, `{{if:COND}}`, `{{if::COND}}` (block openers) and `{{if::COND::THEN}}`
    /// (inline, a whole block in one tag) per SPEC §11.2. items[from..] are the tag's content.
    fn value_if(&mut self, tag: Span, from: usize, close: Span) -> ItemKind {
        let to = self.items.len();
        let opener = |cond: Option<(u32, bool)>| {
            ItemKind::Open(Opener {
                kind: BlockKind::Value {
                    negate: cond.is_some_and(|(_, n)| n),
                },
                closer: Closer::If,
                cond: cond.map(|(id, _)| id),
                malformed: cond.is_none(),
                trim: true,
            })
        };
        match self.form(from, to) {
            // `{{if}}`, `{{if }}`: no condition at all.
            None | Some(Form::NoArgs) => opener(None),
            // `{{if COND}}`, `{{if:COND}}`: one argument, `::` included.
            Some(Form::Single(first)) => opener(self.checked_if_condition(first, to, close)),
            Some(Form::DoubleColon(first)) => {
                let seps: Vec<usize> = (first..to)
                    .filter(|&i| matches!(self.items[i].kind, ItemKind::Sep))
                    .take(2)
                    .collect();
                match seps[..] {
                    [] => opener(self.checked_if_condition(first, to, close)),
                    [sep] => self.inline_if(tag, (first, sep), (sep + 1, to)),
                    _ => {
                        let id = self.call(
                            MacroKind::If,
                            tag,
                            Form::DoubleColon(first),
                            to,
                            close.start,
                        );
                        ItemKind::Node(Node::Call(id))
                    }
                }
            }
        }
    }

    /// `{{if::COND::THEN}}`: THEN splits at its first top-level `{{else}}`; a second one makes
    /// the whole tag a malformed block (it renders nothing).
    fn inline_if(
        &mut self,
        tag: Span,
        (cond_from, cond_to): (usize, usize),
        (then_from, then_to): (usize, usize),
    ) -> ItemKind {
        let mut depth = 0usize;
        let mut elses = Vec::new();
        // Scoped comments go first (SPEC §11.3 step 1): an `{{else}}` or block tag inside a
        // `{{//}}…{{///}}` pair is removed, never a split. A top-level `{{else}}` outside every
        // pair lies outside every pair of its segment too, so each segment, built on its own,
        // finds the same comment pairs.
        let comments = self.comment_ranges(then_from, then_to);
        for i in Self::uncommented(then_from, then_to, &comments) {
            match self.items[i].kind {
                ItemKind::Open(_) => depth += 1,
                ItemKind::Close { .. } => depth = depth.saturating_sub(1),
                ItemKind::Else { .. } if depth == 0 => elses.push(i),
                _ => {}
            }
        }
        let cond_end = self.items[cond_to].span.start;
        let cond = self.checked_if_condition(
            cond_from,
            cond_to,
            Span {
                start: cond_end,
                end: cond_end,
            },
        );
        let mut malformed = cond.is_none() || elses.len() > 1;
        if let Some(&e) = elses.first() {
            malformed |= matches!(self.items[e].kind, ItemKind::Else { malformed: true });
        }
        let split = elses.first().copied().unwrap_or(then_to);
        let then = self.build_list(then_from, split);
        let otherwise = elses.first().map(|&e| {
            let end = elses.get(1).copied().unwrap_or(then_to);
            self.build_list(e + 1, end)
        });
        // Segments after a second top-level `{{else}}` belong to the omitted block: built only
        // for their structural diagnostics.
        for (k, &e) in elses.iter().enumerate().skip(1) {
            let end = elses.get(k + 1).copied().unwrap_or(then_to);
            self.build_list(e + 1, end);
        }
        if malformed {
            self.finding(
                DiagnosticKind::MalformedBlock,
                tag,
                "malformed inline `if` renders nothing".into(),
            );
        }
        self.blocks.push(Block {
            span: tag,
            kind: BlockKind::Value {
                negate: cond.is_some_and(|(_, n)| n),
            },
            cond: cond.map(|(id, _)| id),
            then,
            otherwise,
            state: if malformed {
                BlockState::Malformed
            } else {
                BlockState::Closed
            },
            trim: true,
        });
        ItemKind::Node(Node::Block((self.blocks.len() - 1) as u32))
    }

    /// `if_condition`, and a malformed one still reports its tags (`malformed_condition`).
    fn checked_if_condition(&mut self, from: usize, to: usize, close: Span) -> Option<(u32, bool)> {
        let cond = self.if_condition(from, to, close);
        if cond.is_none() {
            self.malformed_condition(from, to);
        }
        cond
    }

    /// A malformed condition is omitted with its block, but the structural diagnostics of the
    /// tags inside it are still reported, once each (SPEC §1.2, §11.13.3): its items are built
    /// once, for those alone (nothing else builds a malformed condition's items).
    fn malformed_condition(&mut self, from: usize, to: usize) {
        self.build_list(from, to);
    }

    /// A `{{if}}` condition, items[from..to] as written (SPEC §11.2): one leading `!` (and the
    /// whitespace after it) inverts; then `capability:`/`tool:`/`tool_family:` is malformed
    /// (`None`); a whole shorthand expression, a catalog macro that takes no argument, or a
    /// catalog `NAME::ARGS` is evaluated; anything else is literal text with its nested tags
    /// evaluated (`CondText`). Returns the condition call and whether it is inverted.
    fn if_condition(&mut self, from: usize, to: usize, close: Span) -> Option<(u32, bool)> {
        let mut from = from;
        // The argument's own leading whitespace (`{{if  x}}`, `{{if:: x}}`) is not COND.
        while from < to && self.is_blank_text(from) {
            from += 1;
        }
        let mut negate = false;
        if let Some(ItemKind::Node(Node::Text(t))) = self.items.get(from).map(|it| it.kind) {
            let s = self.text(t);
            let lead = s.len() - s.trim_start().len();
            let mut at = t.start as usize + lead;
            if self.src.as_bytes().get(at) == Some(&b'!') {
                negate = true;
                let rest = &self.src[at + 1..t.end as usize];
                at += 1 + rest.len() - rest.trim_start().len();
            }
            let c = &self.src[at..t.end as usize];
            if ["capability:", "tool:", "tool_family:"].iter().any(|ns| {
                c.as_bytes()
                    .get(..ns.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(ns.as_bytes()))
            }) {
                return None;
            }
            let rest = Span::new(at, t.end as usize);
            self.items[from] = Item {
                span: rest,
                kind: ItemKind::Node(Node::Text(rest)),
            };
            if let Some(id) = self.evaluated_condition(from, to, close) {
                return Some((id, negate));
            }
        }
        // (e) literal text.
        let start = self.items.get(from).map_or(close.start, |it| it.span.start);
        let span = Span {
            start,
            end: close.start.max(start),
        };
        self.arg_scratch.clear();
        self.arg_scratch.push((from, to, span));
        Some((
            self.finish_call(MacroKind::CondText, span, CallShape::Ok),
            negate,
        ))
    }

    /// Cases (b)–(d) of SPEC §11.2: COND (starting at text item `from`) evaluated as a tag.
    fn evaluated_condition(&mut self, from: usize, to: usize, close: Span) -> Option<u32> {
        let ItemKind::Node(Node::Text(t)) = self.items[from].kind else {
            return None;
        };
        let at = t.start as usize;
        let bytes = self.src.as_bytes();
        match bytes.get(at) {
            Some(b'.' | b'$') => {
                let id = self.shorthand_condition(from, at, t, to, close)?;
                Some(id)
            }
            Some(b) if b.is_ascii_alphabetic() => {
                let name_end = name_end(bytes, at, t.end as usize)?;
                let tail_blank = bytes[name_end..t.end as usize]
                    .iter()
                    .all(u8::is_ascii_whitespace);
                let name = Span::new(at, name_end);
                let kind = MacroKind::lookup(self.text(name));
                if kind == MacroKind::Unknown || !tail_blank {
                    return None;
                }
                let span = Span {
                    start: name.start,
                    end: close.start,
                };
                if self.blank(from + 1, to) && kind.arity().accepts(0) {
                    return Some(self.call(kind, span, Form::NoArgs, to, close.start));
                }
                if name_end == t.end as usize
                    && from + 1 < to
                    && matches!(self.items[from + 1].kind, ItemKind::Sep)
                {
                    return Some(self.call(
                        kind,
                        span,
                        Form::DoubleColon(from + 2),
                        to,
                        close.start,
                    ));
                }
                None
            }
            _ => None,
        }
    }

    fn is_blank_text(&self, i: usize) -> bool {
        matches!(self.items[i].kind, ItemKind::Node(Node::Text(s)) if self.text(s).trim().is_empty())
    }

    /// A shorthand tag (SPEC §11.5): IDENT is known, items[from..] hold the operator and the
    /// value. Any other shape (`{{.x y}}`, `{{.x++5}}`) keeps the tag literal with
    /// `BadArguments`, its nested tags evaluated: its arguments are then IDENT and the rest.
    fn shorthand(
        &mut self,
        scope: Scope,
        ident: Span,
        span: Span,
        (from, to): (usize, usize),
        close: Span,
    ) -> u32 {
        // The key is pushed past `to`: the operator and value are items[from..to] only (an
        // inline `if`'s condition must not take its `::THEN` too, or THEN would be built twice
        // per level: an exponential tree).
        let key_at = self.items.len();
        self.push_item(ident, ItemKind::Node(Node::Text(ident)));
        self.arg_scratch.clear();
        self.arg_scratch.push((key_at, key_at + 1, ident));
        let rest_start = self.items.get(from).map_or(close.start, |it| it.span.start);
        let (op, shape) = match self.operator(from, to) {
            Some((op, value_from)) => {
                if let Some(value_from) = value_from {
                    let start = self
                        .items
                        .get(value_from)
                        .map_or(close.start, |it| it.span.start);
                    self.arg_scratch.push((
                        value_from,
                        to,
                        Span {
                            start,
                            end: close.start,
                        },
                    ));
                }
                (op, CallShape::Ok)
            }
            None => {
                let rest = Span {
                    start: rest_start,
                    end: close.start,
                };
                self.arg_scratch.push((from, to, rest));
                (ShOp::Read, CallShape::BadArguments)
            }
        };
        self.finish_call(MacroKind::Shorthand(op, scope), span, shape)
    }

    /// The operator at the start of items[from..to] (after whitespace) and where the value
    /// starts (`None` for a read, `++` and `--`, which take none); `None` when what follows
    /// IDENT is anything else. The operator's text item is cut down to what follows it.
    fn operator(&mut self, from: usize, to: usize) -> Option<(ShOp, Option<usize>)> {
        let (op, rest) = self.read_operator(from, to)?;
        let Some(rest) = rest else {
            return Some((op, None));
        };
        self.items[from] = Item {
            span: rest,
            kind: ItemKind::Node(Node::Text(rest)),
        };
        Some((op, Some(from)))
    }

    /// `operator` without its effect: the operator and, for one that takes a value, the span
    /// of its text item after the operator. Lets a caller know the shape before building.
    fn read_operator(&self, from: usize, to: usize) -> Option<(ShOp, Option<Span>)> {
        if self.blank(from, to) {
            return Some((ShOp::Read, None));
        }
        let ItemKind::Node(Node::Text(t)) = self.items[from].kind else {
            return None;
        };
        let s = self.text(t);
        let lead = s.len() - s.trim_start().len();
        let s = &s[lead..];
        let &(sym, op) = ShOp::ALL.iter().find(|(sym, _)| s.starts_with(sym))?;
        let after = t.start as usize + lead + sym.len();
        let rest = Span::new(after, t.end as usize);
        if matches!(op, ShOp::Inc | ShOp::Dec) {
            // Only whitespace may follow `++` / `--`.
            let clean = self.text(rest).trim().is_empty() && self.blank(from + 1, to);
            return clean.then_some((op, None));
        }
        Some((op, Some(rest)))
    }

    /// A shorthand expression as a condition: `.`/`$` at byte `at` of text item `i`, the
    /// condition being items[i..to]. `None` (and the item as it was) when it is not one.
    fn shorthand_condition(
        &mut self,
        i: usize,
        at: usize,
        t: Span,
        to: usize,
        close: Span,
    ) -> Option<u32> {
        let scope = if self.src.as_bytes()[at] == b'$' {
            Scope::Global
        } else {
            Scope::Local
        };
        let text = &self.src[at + 1..t.end as usize];
        let ident_start = at + 1 + (text.len() - text.trim_ascii_start().len());
        let ident_end = ident_end(self.src.as_bytes(), ident_start, t.end as usize)?;
        let ident = Span::new(ident_start, ident_end);
        let rest = Span::new(ident_end, t.end as usize);
        let original = self.items[i];
        self.items[i] = Item {
            span: rest,
            kind: ItemKind::Node(Node::Text(rest)),
        };
        // Not a whole shorthand expression: leave the items unbuilt. The caller builds them
        // once as what they are instead (a `{{if}}`'s literal text); building them here too
        // would report their structural diagnostics twice and pair their scoped macros twice.
        if self.read_operator(i, to).is_none() {
            self.items[i] = original;
            return None;
        }
        let span = Span {
            start: at as u32,
            end: close.start,
        };
        let id = self.shorthand(scope, ident, span, (i, to), close);
        debug_assert_eq!(self.calls[id as usize].shape, CallShape::Ok);
        Some(id)
    }

    fn is_comment_only(&self, root: List) -> bool {
        self.nodes[root.range()].iter().all(|n| match *n {
            Node::Text(s) => self.text(s).trim_ascii().is_empty(),
            Node::Call(id) => {
                let call = &self.calls[id as usize];
                call.kind == MacroKind::Trim && call.content.is_none()
            }
            _ => false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::parse;
    use crate::syntax::tree::BlockState;

    fn tree(src: &str) -> (Tree, Vec<DiagnosticKind>) {
        let (t, f) = parse(src.into(), &Limits::default());
        (t, f.into_iter().map(|f| f.kind).collect())
    }

    #[test]
    fn text_runs_merge() {
        let (t, _) = tree("a::b {{ }} c");
        assert_eq!(t.list(t.root), [Node::Text(Span::new(0, 12))]);
    }

    #[test]
    fn call_arguments_and_spans() {
        let (t, _) = tree("{{setvar:: k ::a::b}}");
        let call = &t.calls[0];
        assert_eq!(
            call.kind,
            MacroKind::SetVar(crate::syntax::catalog::Scope::Local)
        );
        assert_eq!(call.shape, CallShape::Ok);
        let args: Vec<&str> = t.call_args(call).iter().map(|a| t.text(a.span)).collect();
        assert_eq!(args, [" k ", "a::b"]);
        assert_eq!(call.slot, 0);
        let (t, _) = tree("{{random: a::b }}");
        let args: Vec<&str> = t
            .call_args(&t.calls[0])
            .iter()
            .map(|a| t.text(a.span))
            .collect();
        assert_eq!(args, [" a::b "]);
        let (t, _) = tree("{{user::x}}");
        assert_eq!(t.calls[0].shape, CallShape::BadArguments);
        assert_eq!(t.calls[0].slot, u32::MAX);
    }

    #[test]
    fn block_states_and_findings() {
        use DiagnosticKind::*;
        let (t, f) = tree("{{#if a}}x{{else}}y{{/if}}");
        assert!(f.is_empty());
        let b = &t.blocks[0];
        assert_eq!(b.state, BlockState::Closed);
        assert_eq!(t.list(b.then), [Node::Text(Span::new(9, 10))]);
        assert!(b.otherwise.is_some());
        let (t, f) = tree("{{#unless a}}x{{/if}}");
        assert_eq!(t.blocks[0].state, BlockState::Malformed);
        assert_eq!(f, [MalformedBlock]);
        let (t, f) = tree("{{if tool:x}}{{#if a}}");
        assert_eq!(f, [UnclosedBlock, UnclosedBlock]);
        assert!(t.blocks.iter().all(|b| b.state == BlockState::Unclosed));
        let (_, f) = tree("{{else}}{{/unless}}{{#if}}{{/if}}");
        assert_eq!(f, [StrayElse, StrayCloser, MalformedBlock]);
    }

    #[test]
    fn conditions_become_calls() {
        let (t, _) = tree("{{#if !getvar::x}}{{/if}}{{#if {{user}}}}{{/if}}");
        assert_eq!(t.blocks[0].kind, BlockKind::Value { negate: true });
        let c = &t.calls[t.blocks[0].cond.unwrap() as usize];
        assert_eq!(
            c.kind,
            MacroKind::GetVar(crate::syntax::catalog::Scope::Local)
        );
        let c = &t.calls[t.blocks[1].cond.unwrap() as usize];
        assert_eq!(c.kind, MacroKind::User);
    }

    #[test]
    fn comments_drop_their_findings() {
        let (t, f) = tree("{{// {{else}} {{foo::{{/if}}}} }}");
        assert!(f.is_empty());
        assert!(t.list(t.root).is_empty());
        assert!(t.comment_only);
    }
}
