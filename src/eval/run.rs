//! One node's walk over the tree: pass 1 (`walk`: select value blocks, apply declarations in
//! order), and the expansion shared by both passes (`expand`: conditions and declaration values
//! in pass 1, body text in pass 2, where TomoriBot blocks and placeholders are decided).

use std::borrow::Cow;

use super::{Engine, EvalNode, NodeState, Record, Signals, diagnostic, text};
use crate::context::{Context, ToolText};
use crate::diagnostic::{Diagnostic, DiagnosticKind};
use crate::syntax::Span;
use crate::syntax::catalog::MacroKind;
use crate::syntax::tree::{
    Arg, Block, BlockKind, BlockState, Call, CallShape, Identity, List, Namespace, Node, Tree,
};

/// Where an expansion happens, which decides how unknown macros, placeholders and declarations
/// behave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// Pass 1, inside a condition (at any depth): macros that would stay literal are empty.
    Cond,
    /// Pass 1, inside a declaration's arguments.
    Decl,
    /// Pass 2. `literal` is true in the node's literal template text (where tool and identity
    /// placeholders apply), false inside a known macro's arguments.
    Body { literal: bool },
}

impl Mode {
    pub(super) fn for_args(self) -> Mode {
        match self {
            Mode::Body { .. } => Mode::Body { literal: false },
            m => m,
        }
    }
}

/// Evaluated arguments; most calls have at most three, kept inline.
type Args<'t> = smallvec::SmallVec<[Cow<'t, str>; 3]>;

/// One node's pass over the engine.
pub(super) struct Run<'r, 'a> {
    pub(super) eng: &'r mut Engine<'a>,
    pub(super) node: &'r EvalNode<'r>,
    tree: &'r Tree,
    st: &'r NodeState,
    /// Signals gathered in the current scope (node body, or one declaration's arguments).
    pub(super) sig: Signals,
    /// Recursion depth of `walk`/`expand` (bounded by the nesting limits, but deep enough to
    /// exhaust a small thread stack: see `guarded`).
    depth: u32,
}

/// Free stack below which `guarded` moves evaluation onto a fresh heap-allocated segment.
const RED_ZONE: usize = 128 * 1024;
const SEGMENT: usize = 1024 * 1024;

const WRONG_COUNT: &str = "wrong number of arguments: the macro stays literal";

/// What SillyTavern's stock extensions make of their macros on a fresh install (no summary,
/// no Author's Note, the default reasoning template), for the SillyTavern engine: a macro
/// without arguments, its name ASCII case-insensitive.
fn stock_extension_macro(name: &str) -> Option<&'static str> {
    const STOCK: [(&str, &str); 7] = [
        ("summary", ""),
        ("authorsNote", ""),
        ("charAuthorsNote", ""),
        ("defaultAuthorsNote", ""),
        ("reasoningPrefix", "<think>"),
        ("reasoningSuffix", "</think>"),
        ("reasoningSeparator", "\n"),
    ];
    STOCK
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| *v)
}

/// The name of a macro call as written (`{{ name::args }}` → `name`), for host macros.
fn host_macro_name(tag: &str) -> Option<&str> {
    let inner = tag.strip_prefix("{{")?.strip_suffix("}}")?;
    let name = inner.split("::").next()?.trim();
    (!name.is_empty()).then_some(name)
}

/// Value-condition truthiness (SPEC §11.2.3): trimmed, ASCII case ignored, `""`, `false`, `0`
/// and `off` are false.
pub(super) fn truthy(s: &str) -> bool {
    let t = s.trim();
    !(t.is_empty() || t == "0" || t.eq_ignore_ascii_case("false") || t.eq_ignore_ascii_case("off"))
}

impl<'r, 'a> Run<'r, 'a> {
    pub(super) fn new(eng: &'r mut Engine<'a>, node: &'r EvalNode<'r>, st: &'r NodeState) -> Self {
        Run {
            eng,
            node,
            tree: node.tree,
            st,
            sig: Signals::default(),
            depth: 0,
        }
    }

    /// Runs `f` one recursion level deeper. Tag nesting (64) times block nesting per argument
    /// (32) allows ~2,000 levels, more than a 256 KiB thread stack holds, so every few levels
    /// the remaining stack is checked and, when short, evaluation continues on a new segment.
    fn guarded(&mut self, f: impl FnOnce(&mut Self)) {
        self.depth += 1;
        if self.depth.is_multiple_of(4) {
            stacker::maybe_grow(RED_ZONE, SEGMENT, || f(self));
        } else {
            f(self);
        }
        self.depth -= 1;
    }

    pub(super) fn tree(&self) -> &'r Tree {
        self.tree
    }

    /// A diagnostic at a call.
    pub(super) fn report(&mut self, kind: DiagnosticKind, call: &Call, message: &str) {
        self.diag(kind, call.span, message.into());
    }

    fn diag(&mut self, kind: DiagnosticKind, span: Span, message: String) {
        let d = diagnostic(self.node, kind, span, message);
        self.eng.diags.push(d);
    }

    /// Counts `n` produced bytes against the work budget; false once it is spent.
    // Called for every text piece and macro: the common case inlines to a compare and a
    // subtraction; running out is the cold path.
    #[inline]
    pub(super) fn charge(&mut self, n: usize) -> bool {
        if n <= self.eng.work_left && !self.eng.work_out {
            self.eng.work_left -= n;
            return true;
        }
        self.spent()
    }

    /// The work budget ran out (reported once); nothing more is charged.
    #[cold]
    #[inline(never)]
    fn spent(&mut self) -> bool {
        if !self.eng.work_out {
            self.eng.work_left = 0;
            self.eng.work_out = true;
            if self.eng.work_metered {
                return false;
            }
            let limit = self.eng.limits.work_bytes;
            self.eng.diags.push(Diagnostic::new(
                DiagnosticKind::LimitReached,
                Some(self.node.id),
                format!("work budget of {limit} bytes spent: further macros render empty"),
            ));
        }
        false
    }

    pub(super) fn ctx(&self) -> &'a Context {
        self.eng.ctx
    }

    // ---- pass 1 -------------------------------------------------------------------------

    /// Pass 1 over kept text: select value blocks, apply declarations in source order.
    pub(super) fn walk(&mut self, list: List) {
        self.guarded(|run| run.walk_list(list));
    }

    fn walk_list(&mut self, list: List) {
        let tree = self.tree;
        for &node in tree.list(list) {
            match node {
                Node::Block(b) => {
                    let blk = &tree.blocks[b as usize];
                    match (blk.state, blk.kind) {
                        (BlockState::Malformed, _)
                        | (BlockState::Unclosed, BlockKind::Tomori { .. }) => {}
                        (_, BlockKind::Value { negate }) => {
                            let taken = self.condition(blk, negate);
                            self.eng.decisions[self.st.block_base + b as usize] =
                                if taken { 1 } else { 2 };
                            if let Some(branch) = branch(blk, taken) {
                                self.walk(branch);
                            }
                        }
                        // Decided by the host in pass 2; both branches declare now.
                        (_, BlockKind::Tomori { .. }) => {
                            self.walk(blk.then);
                            if let Some(e) = blk.otherwise {
                                self.walk(e);
                            }
                        }
                    }
                }
                Node::Call(c) => {
                    let call = &tree.calls[c as usize];
                    if let MacroKind::Shorthand(op, scope) = call.kind
                        && call.kind.is_selection()
                        && call.slot != u32::MAX
                    {
                        let choice = self.select(call, op, scope);
                        self.eng.records[self.st.slot_base + call.slot as usize].choice = choice;
                    } else if call.slot != u32::MAX {
                        let saved = std::mem::take(&mut self.sig);
                        let mut out = String::new();
                        let declared = self.declare(call, Mode::Decl, &mut out);
                        let signals = std::mem::replace(&mut self.sig, saved);
                        let rejected = declared == Declared::Rejected;
                        if rejected && let Some(content) = &call.content {
                            // Ordinary body text now: its blocks and declarations in pass 1.
                            self.walk(content.body);
                        }
                        self.eng.records[self.st.slot_base + call.slot as usize] = Record {
                            output: out,
                            signals,
                            choice: 0,
                            rejected,
                        };
                    } else {
                        // A declaration with the wrong argument count is still attempted in
                        // pass 1 (SPEC §2.1.4), so it reports there, also in a TomoriBot branch
                        // the host later drops; pass 2 renders its literal text silently.
                        if call.shape == CallShape::BadArguments && call.kind.is_declaration() {
                            self.diag(DiagnosticKind::BadArguments, call.span, WRONG_COUNT.into());
                        }
                        for arg in tree.all_args(call) {
                            self.walk(arg.body);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// Evaluates a value block's condition now (pass 1). Conditions never signal.
    fn condition(&mut self, blk: &Block, negate: bool) -> bool {
        let Some(c) = blk.cond else { return false };
        let saved = std::mem::take(&mut self.sig);
        let mut s = String::new();
        self.call(c, Mode::Cond, &mut s);
        self.sig = saved;
        truthy(&s) != negate
    }

    /// Applies a declaration (`setvar` & co.), writing what it renders to `out`.
    ///
    /// A scoped `setvar`/`addvar` whose key is empty is refused before its content is
    /// expanded: the pair then renders as written with the content as ordinary text of the
    /// enclosing branch (SPEC §11.13.2), so this returns `Rejected` and the caller decides how
    /// that text is rendered (pass 1 walks it as body text; inside an argument it is literal).
    fn declare(&mut self, call: &Call, mode: Mode, out: &mut String) -> Declared {
        if self.eng.work_out {
            return Declared::Done;
        }
        if let MacroKind::Shorthand(op, scope) = call.kind {
            self.shorthand_declare(call, op, scope, mode, out);
            return Declared::Done;
        }
        let tree = self.tree;
        let mut args = Args::new();
        if call.content.is_some()
            && call.kind.raw_value()
            && let Some(key) = tree.call_args(call).first()
        {
            let key = self.arg(key, mode);
            if key.trim().is_empty() {
                self.diag(
                    DiagnosticKind::BadArguments,
                    call.span,
                    "variable key is empty: the scoped macro stays literal".into(),
                );
                return Declared::Rejected;
            }
            args.push(key);
        }
        self.declare_with(call, args, mode, out);
        Declared::Done
    }

    /// `declare` once the arguments (those already evaluated, then the rest) are known.
    fn declare_with(&mut self, call: &Call, mut args: Args<'r>, mode: Mode, out: &mut String) {
        let tree: &'r Tree = self.tree;
        for arg in tree.all_args(call).skip(args.len()) {
            let text = self.arg(arg, mode);
            args.push(text);
        }
        let raw = self.trim_content(call, &mut args);
        if let MacroKind::SetVarKey(scope) = call.kind {
            self.set_var_key(call, scope, &args);
            return;
        }
        let key = args[0].trim();
        if key.is_empty() {
            self.diag(
                DiagnosticKind::BadArguments,
                call.span,
                "variable key is empty: the macro stays literal".into(),
            );
            restore_content(&mut args, raw);
            self.literal_from(call, &args, out);
            return;
        }
        let value = args.get(1).map_or("", |v| v.as_ref());
        // SillyTavern's engine leaves the whitespace at an argument's edges out of it (its
        // lexer skips it), the value's too; whitespace next to a nested macro stays.
        let value = match tree.all_args(call).nth(1).filter(|_| self.node.st_engine) {
            Some(raw) => {
                let raw = tree.text(raw.span);
                if raw.trim().is_empty() {
                    ""
                } else {
                    let lead = raw.len() - raw.trim_start().len();
                    let trail = raw.len() - raw.trim_end().len();
                    value
                        .get(lead..value.len().saturating_sub(trail))
                        .unwrap_or(value)
                }
            }
            None => value,
        };
        // Storing copies bytes: an `addvar` loop on a large value must spend the budget.
        let stored = match call.kind {
            MacroKind::AddVar(scope) => self.eng.vars.get(scope, key).len() + value.len(),
            _ => value.len(),
        };
        if !self.charge(key.len() + stored) {
            return;
        }
        let capped = match call.kind {
            MacroKind::DeleteVar(scope) => {
                self.eng.vars.delete(scope, key);
                false
            }
            MacroKind::SetVar(scope) => self.eng.vars.set(scope, key, value).is_err(),
            MacroKind::AddVar(scope) => self.eng.vars.add(scope, key, value).is_err(),
            MacroKind::IncVar(scope) | MacroKind::DecVar(scope) => {
                let delta = if matches!(call.kind, MacroKind::IncVar(_)) {
                    1
                } else {
                    -1
                };
                let (stored, res) = self.eng.vars.step(scope, key, delta);
                out.push_str(&stored);
                res.is_err()
            }
            _ => false,
        };
        if capped {
            self.diag(
                DiagnosticKind::LimitReached,
                call.span,
                format!(
                    "variable `{}` cut to fit the variable memory limits",
                    crate::diagnostic::excerpt(key)
                ),
            );
        }
    }

    /// `{{setvarkey::NAME::KEY::VALUE}}` (`Vars::set_key`): SillyTavern's engine trims each
    /// argument. Reading and writing the variable's JSON is charged as the bytes it handles.
    fn set_var_key(
        &mut self,
        call: &Call,
        scope: crate::syntax::catalog::Scope,
        args: &[Cow<'r, str>],
    ) {
        let arg = |i: usize| args.get(i).map_or("", |a| a.trim());
        let (name, key, value) = (arg(0), arg(1), arg(2));
        if name.is_empty() {
            self.diag(
                DiagnosticKind::BadArguments,
                call.span,
                "variable name is empty: nothing is set".into(),
            );
            return;
        }
        let old = self.eng.vars.get(scope, name).len();
        if !self.charge(2 * old + key.len() + value.len()) {
            return;
        }
        if self.eng.vars.set_key(scope, name, key, value).is_err() {
            self.diag(
                DiagnosticKind::LimitReached,
                call.span,
                format!(
                    "variable `{}` left as it was: its JSON would not fit the variable memory \
                     limits",
                    crate::diagnostic::excerpt(name)
                ),
            );
        }
    }

    // ---- both passes --------------------------------------------------------------------

    /// Evaluates a call's arguments to strings (not yet trimmed). An argument that is plain
    /// text (the common case) is borrowed from the source.
    fn args(&mut self, call: &Call, mode: Mode) -> Args<'r> {
        let tree: &'r Tree = self.tree;
        let mut out = Args::new();
        for arg in tree.all_args(call) {
            let text = self.arg(arg, mode);
            out.push(text);
        }
        out
    }

    /// One argument's text (not yet trimmed); plain text is borrowed from the source.
    fn arg(&mut self, arg: &Arg, mode: Mode) -> Cow<'r, str> {
        let tree: &'r Tree = self.tree;
        match tree.list(arg.body) {
            [] => Cow::Borrowed(""),
            [Node::Text(span)] => {
                self.charge(span.len());
                Cow::Borrowed(tree.text(*span))
            }
            _ => {
                let mut s = String::new();
                // Argument bytes are charged as they are produced (text, macro outputs).
                self.expand(arg.body, mode.for_args(), &mut s);
                Cow::Owned(s)
            }
        }
    }

    /// Auto-trims (T) a scoped macro's content, the last argument, unless its opener carried
    /// `#` (SPEC §11.3). Returns the content as expanded, for when the macro rejects its
    /// arguments and the pair renders as written (§11.13.2). T charges its input and leaves
    /// the text as it is once the work budget is spent (§11.13.6).
    fn trim_content(&mut self, call: &Call, args: &mut Args<'r>) -> Option<Cow<'r, str>> {
        if call.content.is_none() || call.keep_ws {
            return None;
        }
        let last = args.last_mut()?;
        if !self.charge(last.len()) {
            return None;
        }
        let trimmed = match text::auto_trim(last) {
            Cow::Borrowed(t) if t.len() == last.len() => return None,
            t => Cow::Owned(t.into_owned()),
        };
        Some(std::mem::replace(last, trimmed))
    }

    /// Expands an `{{if}}` branch and auto-trims it (T, SPEC §11.3): T charges its input and,
    /// once the work budget is spent, leaves the text as it is (§11.13.6).
    fn expand_trimmed(&mut self, list: List, mode: Mode, out: &mut String) {
        let mut s = String::new();
        self.expand(list, mode, &mut s);
        if self.charge(s.len()) {
            out.push_str(&text::auto_trim(&s));
        } else {
            out.push_str(&s);
        }
    }

    /// Expands a list into `out`.
    pub(super) fn expand(&mut self, list: List, mode: Mode, out: &mut String) {
        self.guarded(|run| run.expand_list(list, mode, out));
    }

    fn expand_list(&mut self, list: List, mode: Mode, out: &mut String) {
        let tree = self.tree;
        for &node in tree.list(list) {
            match node {
                Node::Text(s) | Node::Verbatim(s) => {
                    self.charge(s.len());
                    out.push_str(tree.text(s));
                }
                Node::Escape(b) => out.push(b as char),
                Node::Placeholder(s) => {
                    // The §2.3.2 host passes do not run in regex scripts (SPEC §13.5.1).
                    if mode == (Mode::Body { literal: true }) && self.eng.script.is_none() {
                        self.placeholder(s, out);
                    } else {
                        out.push_str(tree.text(s));
                    }
                }
                Node::Compat(who, written) => {
                    let ctx = self.ctx();
                    let len = match who {
                        Identity::User => ctx.user.len(),
                        Identity::Char | Identity::Bot => ctx.char.len(),
                        Identity::Group => self.groups()[0].len(),
                    };
                    // Once the work budget is spent, placeholders stay as written (SPEC §10).
                    if !self.charge(len) {
                        out.push_str(tree.text(written));
                        continue;
                    }
                    let before = out.len();
                    let speaker = self.eng.script.as_ref().and_then(|f| f.speaker.as_deref());
                    out.push_str(match who {
                        Identity::User => &ctx.user,
                        Identity::Char | Identity::Bot => speaker.unwrap_or(&ctx.char),
                        Identity::Group => self.eng.groups.as_ref().map_or("", |g| &g[0]),
                    });
                    self.escape_output(mode, out, before);
                }
                Node::Block(b) => {
                    let blk = &tree.blocks[b as usize];
                    let taken = match (blk.state, blk.kind) {
                        (BlockState::Malformed, _)
                        | (BlockState::Unclosed, BlockKind::Tomori { .. }) => continue,
                        (_, BlockKind::Value { negate }) => match mode {
                            Mode::Body { .. } => {
                                self.eng.decisions[self.st.block_base + b as usize] == 1
                            }
                            _ => self.condition(blk, negate),
                        },
                        (_, BlockKind::Tomori { negate, ns, name }) => {
                            self.tomori(ns, name, negate, blk.span)
                        }
                    };
                    if let Some(branch) = branch(blk, taken) {
                        if blk.trim {
                            self.expand_trimmed(branch, mode, out);
                        } else {
                            self.expand(branch, mode, out);
                        }
                    }
                }
                Node::Call(c) => self.call(c, mode, out),
            }
        }
    }

    /// Asks the host about `[!]ns:name`. Unknown capabilities and families are false either way.
    fn tomori(&mut self, ns: Namespace, name: Span, negate: bool, span: Span) -> bool {
        let name = text::ascii_lower(self.tree.text(name));
        let answer = match ns {
            Namespace::Tool => Some(self.eng.host.tool(&name)),
            Namespace::Capability => self.eng.host.capability(&name),
            Namespace::ToolFamily => self.eng.host.tool_family(&name),
        };
        match answer {
            Some(v) => v != negate,
            None => {
                let what = match ns {
                    Namespace::Capability => "capability",
                    _ => "tool family",
                };
                self.diag(
                    DiagnosticKind::UnknownCondition,
                    span,
                    format!("the host does not know {what} `{name}`: the condition is false"),
                );
                false
            }
        }
    }

    /// A `{key}` placeholder in literal template text: tool name, tool phrase, or identity.
    fn placeholder(&mut self, span: Span, out: &mut String) {
        let raw = self.tree.text(span);
        let key = &raw[1..raw.len() - 1];
        let ctx = self.ctx();
        let host = self.eng.host;
        let lower = text::ascii_lower(key);
        let replacement: Option<std::borrow::Cow<'_, str>> = match host.tool_text(&lower) {
            Some(ToolText::Name(n)) => Some(format!("`{n}`").into()),
            Some(ToolText::Phrase(p)) => Some(p.into()),
            None => crate::identity::identity(key, &ctx.user, &ctx.char).map(Into::into),
        };
        match replacement {
            Some(r) if self.charge(r.len()) => out.push_str(&r),
            _ => out.push_str(raw),
        }
    }

    /// The host callback's answer for the call at `span` (issue 39), asked once per call text
    /// per render. A panic in the callback is reported and leaves the macro literal.
    fn host_callback(&mut self, span: Span) -> Option<String> {
        let f = self.eng.host.macro_fn()?;
        let tag = self.tree.text(span);
        if let Some(known) = self.eng.macro_calls.get(tag) {
            return known.clone();
        }
        let inner = tag.strip_prefix("{{")?.strip_suffix("}}")?;
        let mut parts = inner.split("::");
        let name = parts.next()?.trim();
        let args: Vec<&str> = parts.collect();
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(name, &args)));
        let value = match answer {
            Ok(Ok(value)) => value,
            failed => {
                let why = match failed {
                    Ok(Err(message)) => format!(" ({})", crate::diagnostic::excerpt(&message)),
                    _ => String::new(),
                };
                self.diag(
                    DiagnosticKind::HostMacroFailed,
                    span,
                    format!(
                        "the host's macro callback failed on `{}`{why}: the macro stays literal",
                        crate::diagnostic::excerpt(name)
                    ),
                );
                None
            }
        };
        // Kept for the render unless it is larger than what the render may still produce.
        if value.as_ref().is_none_or(|v| v.len() <= self.eng.work_left) {
            self.eng.macro_calls.insert(tag.to_string(), value.clone());
        }
        value
    }

    /// A macro of SillyTavern's catalog that §3 lacks, for the SillyTavern engine: the stock
    /// extensions' at a fresh install's values, and `{{lastMessageId}}` (the index of the
    /// chat's last message, `''` without one).
    fn st_macro(&self, tag: &str) -> Option<std::borrow::Cow<'static, str>> {
        let name = tag.strip_prefix("{{")?.strip_suffix("}}")?.trim();
        if name.eq_ignore_ascii_case("lastMessageId") {
            let ctx = self.ctx();
            let n = ctx
                .items
                .iter()
                .filter(|i| i.tag == Some(crate::context::Tag::DialogueHistory))
                .count();
            return Some(
                n.checked_sub(1)
                    .map_or(String::new(), |i| i.to_string())
                    .into(),
            );
        }
        stock_extension_macro(name).map(Into::into)
    }

    /// Evaluates one call into `out`.
    fn call(&mut self, c: u32, mode: Mode, out: &mut String) {
        if self.eng.work_out {
            return;
        }
        let tree = self.tree;
        let call = &tree.calls[c as usize];
        if call.kind == MacroKind::Unknown {
            // The host's value first (issue 39): data, charged like any output.
            let host = self.eng.host;
            if let Some(value) = host_macro_name(tree.text(call.span))
                .and_then(|name| host.host_macro(&text::ascii_lower(name)))
            {
                if self.charge(value.len()) {
                    out.push_str(value);
                }
                return;
            }
            if let Some(value) = self.host_callback(call.span) {
                if self.charge(value.len()) {
                    out.push_str(&value);
                }
                return;
            }
            if self.node.st_engine
                && let Some(value) = self.st_macro(tree.text(call.span))
            {
                out.push_str(&value);
                return;
            }
        }
        let stays_literal = match (call.shape, call.kind) {
            (CallShape::BadArguments, MacroKind::Shorthand(..)) => Some((
                DiagnosticKind::BadArguments,
                "a shorthand is `.name`, `.name OP value`, `.name++` or `.name--`: it stays literal",
            )),
            (CallShape::BadArguments, _) => Some((DiagnosticKind::BadArguments, WRONG_COUNT)),
            (_, MacroKind::Unknown) => Some((
                DiagnosticKind::UnknownMacro,
                "unknown macro stays literal (a host can supply it: the context's `macros`)",
            )),
            (_, MacroKind::ScriptValue) if self.eng.script.is_none() => {
                Some((DiagnosticKind::UnknownMacro, "unknown macro stays literal"))
            }
            // A stray scoped closer: literal, reported when the tree was built.
            (_, MacroKind::Closer) => {
                if mode != Mode::Cond {
                    self.literal(call, mode, out);
                }
                return;
            }
            _ => None,
        };
        if let Some((kind, message)) = stays_literal {
            let reported_in_pass_1 = matches!(mode, Mode::Body { .. })
                && call.shape == CallShape::BadArguments
                && call.kind.is_declaration();
            if !reported_in_pass_1 {
                self.diag(kind, call.span, message.into());
            }
            if mode != Mode::Cond {
                self.literal(call, mode, out);
            }
            return;
        }
        if call.kind.is_declaration() {
            match mode {
                Mode::Body { .. } => {
                    let rec = &self.eng.records[self.st.slot_base + call.slot as usize];
                    if rec.rejected {
                        // Refused in pass 1: the pair as written, its content as body text.
                        return self.literal(call, mode, out);
                    }
                    out.push_str(&rec.output);
                    let signals = rec.signals;
                    self.sig.add(signals);
                }
                Mode::Cond => {
                    if self.declare(call, mode, out) == Declared::Rejected {
                        // Empty in a condition, but the content's declarations still run.
                        self.literal(call, mode, &mut String::new());
                    }
                }
                Mode::Decl => {
                    if self.declare(call, mode, out) == Declared::Rejected {
                        self.literal(call, mode, out);
                    }
                }
            }
            return;
        }
        if let MacroKind::Shorthand(op, scope) = call.kind {
            let choice = match mode {
                Mode::Body { .. } if call.slot != u32::MAX => {
                    Some(self.eng.records[self.st.slot_base + call.slot as usize].choice)
                }
                _ => None,
            };
            let before = out.len();
            self.shorthand_value(call, op, scope, mode, choice, out);
            let produced = out.len() - before;
            if !self.charge(produced) {
                out.truncate(before);
            }
            self.escape_output(mode, out, before);
            return;
        }
        let mut args = self.args(call, mode);
        let raw = self.trim_content(call, &mut args);
        let before = out.len();
        if let Err(bad) = self.value(call, &args, out) {
            out.truncate(before);
            let (literal, message) = match bad {
                super::macros::Bad::Literal(why) => (
                    mode != Mode::Cond,
                    format!("{why}: the macro stays literal"),
                ),
                super::macros::Bad::Empty => (
                    false,
                    "invalid argument: the macro renders empty".to_string(),
                ),
            };
            self.diag(DiagnosticKind::BadArguments, call.span, message);
            if literal {
                restore_content(&mut args, raw);
                self.literal_from(call, &args, out);
            }
        }
        let produced = out.len() - before;
        if !self.charge(produced) {
            out.truncate(before);
        }
        self.escape_output(mode, out, before);
    }

    /// In an escaped find template (SPEC §13.5.4), escapes what an outermost macro or
    /// placeholder wrote at `out[from..]` for a pattern.
    fn escape_output(&mut self, mode: Mode, out: &mut String, from: usize) {
        if mode != (Mode::Body { literal: true })
            || !self.eng.script.as_ref().is_some_and(|f| f.escape)
            || from >= out.len()
        {
            return;
        }
        let produced = out.split_off(from);
        for c in produced.chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{b}' => out.push_str("\\v"),
                '\u{c}' => out.push_str("\\f"),
                '\0' => out.push_str("\\0"),
                '.' | '^' | '$' | '*' | '+' | '?' | '{' | '}' | '[' | ']' | '\\' | '/' | '|'
                | '(' | ')' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }

    /// Writes a call as written, with each nested tag replaced by its output.
    fn literal(&mut self, call: &Call, mode: Mode, out: &mut String) {
        let tree = self.tree;
        let mut at = call.span.start;
        for arg in tree.all_args(call) {
            out.push_str(tree.text(Span {
                start: at,
                end: arg.span.start,
            }));
            self.expand(arg.body, mode, out);
            at = arg.span.end;
        }
        out.push_str(tree.text(Span {
            start: at,
            end: call.span.end,
        }));
    }

    /// Like `literal`, from arguments already evaluated.
    fn literal_from(&mut self, call: &Call, args: &[Cow<'_, str>], out: &mut String) {
        let tree = self.tree;
        let mut at = call.span.start;
        for (arg, text) in tree.all_args(call).zip(args) {
            out.push_str(tree.text(Span {
                start: at,
                end: arg.span.start,
            }));
            out.push_str(text);
            at = arg.span.end;
        }
        out.push_str(tree.text(Span {
            start: at,
            end: call.span.end,
        }));
    }
}

/// Whether a declaration ran or refused its arguments before expanding its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Declared {
    Done,
    Rejected,
}

/// Puts a scoped macro's content back as expanded (before T), see `Run::trim_content`.
fn restore_content<'t>(args: &mut Args<'t>, raw: Option<Cow<'t, str>>) {
    if let (Some(raw), Some(last)) = (raw, args.last_mut()) {
        *last = raw;
    }
}

fn branch(blk: &Block, taken: bool) -> Option<List> {
    if taken { Some(blk.then) } else { blk.otherwise }
}
