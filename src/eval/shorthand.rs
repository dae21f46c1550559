//! Variable shorthand (SPEC §11.5): `{{.v}}`, `{{$v = R}}`, `{{.n++}}`, `{{.v || R}}`,
//! `{{.v > 3}}`. Declarations run in pass 1 and render what they recorded; selections are
//! decided in pass 1 like a block; reads and comparisons see the final map in pass 2. Inside
//! conditions and declaration values every form runs at once.

use std::cmp::Ordering;

use super::run::{Mode, Run, truthy};
use super::{text, vars};
use crate::diagnostic::DiagnosticKind;
use crate::syntax::catalog::{Scope, ShOp};
use crate::syntax::tree::Call;

/// A selection's pass-1 choice, kept in its record.
pub(super) const CHOSE_VALUE: u8 = 1;
pub(super) const CHOSE_RIGHT: u8 = 2;

impl Run<'_, '_> {
    /// The variable name: the call's first argument, always plain text.
    fn key(&self, call: &Call) -> &str {
        let tree = self.tree();
        tree.call_args(call)
            .first()
            .map_or("", |a| tree.text(a.span))
    }

    /// R: the value argument expanded, then trimmed (as SillyTavern). Empty when absent.
    fn right(&mut self, call: &Call, mode: Mode) -> String {
        let tree = self.tree();
        let mut s = String::new();
        if let Some(arg) = tree.call_args(call).get(1) {
            self.expand(arg.body, mode.for_args(), &mut s);
        }
        text::trim_in_place(&mut s);
        s
    }

    /// Whether a selection takes V (`||`: V is true; `??`: v is present), against the map
    /// as it stands.
    fn selects_value(&self, op: ShOp, scope: Scope, key: &str) -> bool {
        match op {
            ShOp::Or => truthy(self.eng.vars.get(scope, key)),
            _ => self.eng.vars.contains(scope, key),
        }
    }

    /// Pass 1 over a selection: decide now, and if R is chosen walk it so its declarations
    /// run in source order; R is never touched otherwise. Returns the choice to record.
    pub(super) fn select(&mut self, call: &Call, op: ShOp, scope: Scope) -> u8 {
        if self.selects_value(op, scope, self.key(call)) {
            return CHOSE_VALUE;
        }
        if let Some(arg) = self.tree().call_args(call).get(1) {
            self.walk(arg.body);
        }
        CHOSE_RIGHT
    }

    /// A read, comparison or selection: writes its value to `out`. `choice` is the pass-1
    /// record of a selection in pass 2.
    pub(super) fn shorthand_value(
        &mut self,
        call: &Call,
        op: ShOp,
        scope: Scope,
        mode: Mode,
        choice: Option<u8>,
        out: &mut String,
    ) {
        let key = self.key(call).to_string();
        match op {
            ShOp::Read => out.push_str(self.eng.vars.get(scope, &key)),
            ShOp::Or | ShOp::Null => {
                let value = match choice {
                    Some(c) => c == CHOSE_VALUE,
                    None => self.selects_value(op, scope, &key),
                };
                if value {
                    out.push_str(self.eng.vars.get(scope, &key));
                } else {
                    let r = self.right(call, mode);
                    out.push_str(&r);
                }
            }
            _ => {
                let r = self.right(call, mode);
                let v = self.eng.vars.get(scope, &key);
                let result = match op {
                    ShOp::Eq => Some(v == r),
                    ShOp::Ne => Some(v != r),
                    _ => vars::compare(v, &r).map(|ord| match op {
                        ShOp::Gt => ord == Ordering::Greater,
                        ShOp::Ge => ord != Ordering::Less,
                        ShOp::Lt => ord == Ordering::Less,
                        _ => ord != Ordering::Greater,
                    }),
                };
                if result.is_none() {
                    self.report(
                        DiagnosticKind::BadArguments,
                        call,
                        "a comparison needs numbers on both sides: it is false",
                    );
                }
                out.push_str(if result == Some(true) {
                    "true"
                } else {
                    "false"
                });
            }
        }
    }

    /// A shorthand declaration, now (pass 1, or inside a condition or declaration value).
    /// Writes what it renders to `out`.
    pub(super) fn shorthand_declare(
        &mut self,
        call: &Call,
        op: ShOp,
        scope: Scope,
        mode: Mode,
        out: &mut String,
    ) {
        let key = self.key(call).to_string();
        let capped = match op {
            ShOp::Set | ShOp::Add => {
                let r = self.right(call, mode);
                if !self.charge(key.len() + r.len()) {
                    return;
                }
                if op == ShOp::Set {
                    self.eng.vars.set(scope, &key, &r).is_err()
                } else {
                    self.eng.vars.add(scope, &key, &r).is_err()
                }
            }
            ShOp::Sub => {
                let r = self.right(call, mode);
                match self.eng.vars.subtract(scope, &key, &r) {
                    Some(res) => res.is_err(),
                    None => {
                        self.report(
                            DiagnosticKind::BadArguments,
                            call,
                            "`-=` needs numbers on both sides: the variable is unchanged",
                        );
                        false
                    }
                }
            }
            ShOp::Inc | ShOp::Dec => {
                let delta = if op == ShOp::Inc { 1 } else { -1 };
                let (stored, res) = self.eng.vars.step(scope, &key, delta);
                out.push_str(&stored);
                res.is_err()
            }
            // `||=` / `??=`: R is expanded only when the assignment happens (lazy: its
            // declarations and draws run at most once, and only then).
            _ => {
                let assign = !self.selects_value(
                    if op == ShOp::OrAssign {
                        ShOp::Or
                    } else {
                        ShOp::Null
                    },
                    scope,
                    &key,
                );
                let mut capped = false;
                if assign {
                    let r = self.right(call, mode);
                    if !self.charge(key.len() + r.len()) {
                        return;
                    }
                    capped = self.eng.vars.set(scope, &key, &r).is_err();
                }
                out.push_str(self.eng.vars.get(scope, &key));
                capped
            }
        };
        if capped {
            self.report(
                DiagnosticKind::LimitReached,
                call,
                "variable cut to fit the variable memory limits",
            );
        }
    }
}
