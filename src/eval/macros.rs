//! What each value macro of the catalog produces (SPEC §3). Declarations live in `Run::declare`.

use std::borrow::Cow;

use rand::RngExt;

use super::{HostValue, Run, Signals, chance, clock};
use crate::context::{Role, Tag};
use crate::syntax::catalog::MacroKind;
use crate::syntax::tree::Call;

/// A macro refused its arguments (`BadArguments`).
pub(super) enum Bad {
    /// Missing key or an argument the macro cannot use (`time::UTC+99`, `space::x`): the
    /// macro stays literal, like a wrong argument count. The text says which.
    Literal(&'static str),
    /// An invalid dice formula renders empty.
    Empty,
}

/// Why `space::N` / `newline::N` refused N.
const COUNT: &str = "the count must be a whole number from 0 to 1000";

impl Run<'_, '_> {
    /// Writes the value of a non-declaration macro into `out`.
    pub(super) fn value(
        &mut self,
        call: &Call,
        args: &[Cow<'_, str>],
        out: &mut String,
    ) -> Result<(), Bad> {
        use MacroKind::*;
        let ctx = self.ctx();
        let arg = |i: usize| args.get(i).map_or("", |a| a.trim());
        // Scoped content is text, not argument-trimmed: it was auto-trimmed (T) unless the
        // opener carried `#` (SPEC §11.13.1). Keys, counts, dice and offsets still trim.
        let text = |i: usize| match call.content {
            Some(_) => args.get(i).map_or("", |a| a.as_ref()),
            None => arg(i),
        };
        match call.kind {
            User => self.name(&ctx.user, 0, out),
            Char => match self.eng.script.as_ref().and_then(|f| f.speaker.as_deref()) {
                Some(speaker) => out.push_str(speaker),
                None => self.name(&ctx.char, 1, out),
            },
            Description => self.host_value(HostValue::Description, Signals::DESCRIPTION, out),
            Personality => self.host_value(HostValue::Personality, Signals::PERSONALITY, out),
            Scenario => self.host_value(HostValue::Scenario, Signals::SCENARIO, out),
            Persona => self.host_value(HostValue::Persona, Signals::PERSONA, out),
            MesExamples => self.host_value(HostValue::MesExamples, Signals::default(), out),
            MesExamplesRaw => self.host_value(HostValue::MesExamplesRaw, Signals::default(), out),
            Model => self.host_value(HostValue::Model, Signals::default(), out),
            CharVersion => self.host_value(HostValue::CharVersion, Signals::default(), out),
            CharPrompt => self.host_value(HostValue::CharPrompt, Signals::default(), out),
            CharInstruction => self.host_value(HostValue::CharInstruction, Signals::default(), out),
            Outlet => {
                if let Some(text) = ctx.outlets.get(arg(0)) {
                    out.push_str(text);
                }
            }
            Group | GroupNotMuted | NotChar => {
                let i = match call.kind {
                    Group => 0,
                    GroupNotMuted => 1,
                    _ => 2,
                };
                out.push_str(&self.groups()[i]);
            }
            LastMessage => self.host_value(HostValue::LastMessage, Signals::default(), out),
            LastUserMessage => self.host_value(HostValue::LastUserMessage, Signals::default(), out),
            LastCharMessage => self.host_value(HostValue::LastCharMessage, Signals::default(), out),
            Time => match args.first().map(|a| a.trim()) {
                None | Some("") => self.clock(clock::TIME, out),
                Some(utc) => {
                    let hours = clock::utc_offset_hours(utc).ok_or(Bad::Literal(
                        "the offset must be UTC+N or UTC-N with N at most 15",
                    ))?;
                    if self.eng.clock.is_some() {
                        clock::format(clock::local(self.eng.now, hours * 60), clock::TIME, out);
                    }
                }
            },
            Date => self.clock(clock::DATE, out),
            Weekday => self.clock(clock::WEEKDAY, out),
            IsoTime => self.clock(clock::ISOTIME, out),
            IsoDate => self.clock(clock::ISODATE, out),
            DateTimeFormat => self.clock(text(0), out),
            IdleDuration => {
                if ctx.time_awareness {
                    let now = self.eng.now;
                    let idle = self.eng.idle.get_or_insert_with(|| {
                        let history = ctx
                            .items
                            .iter()
                            .filter(|i| i.tag == Some(Tag::DialogueHistory));
                        let since = if self.node.st_engine {
                            // ST's `getTimeSinceLastMessage`: the newest message is skipped,
                            // then the latest user message's time.
                            history
                                .rev()
                                .skip(1)
                                .find(|i| i.role == Role::User)
                                .and_then(|i| i.time)
                        } else {
                            history
                                .filter(|i| i.role == Role::User)
                                .filter_map(|i| i.time)
                                .next_back()
                        };
                        clock::idle(now, since)
                    });
                    out.push_str(idle);
                }
            }
            GetVar(scope) => {
                let key = arg(0);
                if key.is_empty() {
                    return Err(Bad::Literal("empty key"));
                }
                out.push_str(self.eng.vars.get(scope, key));
            }
            GetVarKey(scope) => {
                let name = arg(0);
                if name.is_empty() {
                    return Err(Bad::Literal("empty key"));
                }
                // Parsing the variable's JSON is linear in its text: charged like output.
                let cost = self.eng.vars.get(scope, name).len();
                if self.charge(cost) {
                    out.push_str(&self.eng.vars.get_key(scope, name, arg(1)));
                }
            }
            HasVar(scope) => {
                let key = arg(0);
                if key.is_empty() {
                    return Err(Bad::Literal("empty key"));
                }
                out.push_str(if self.eng.vars.contains(scope, key) {
                    "true"
                } else {
                    "false"
                });
            }
            Random | Pick => {
                let items = chance::items(args);
                if !items.is_empty() {
                    let i = if call.kind == Random && self.eng.first_random {
                        0
                    } else if let (Random, Some(x)) = (call.kind, ctx.options.random) {
                        // SPEC §17.3.1: item ⌊x·n⌋, as ST's arithmetic over a constant draw.
                        ((x * items.len() as f64) as usize).min(items.len() - 1)
                    } else if call.kind == Random {
                        self.eng.rng.random_range(0..items.len())
                    } else if self.node.st_engine {
                        // SillyTavern's seeded pick (core-macros.js, SPEC §17.3.7): seedrandom
                        // of the hash of chat id hash, text hash, offset and reroll seed.
                        let source = &self.node.tree.source;
                        let at = (call.span.start as usize).min(source.len());
                        let offset = source.get(..at).map_or(0, |p| p.encode_utf16().count());
                        let st = &ctx.user_settings;
                        let chat = st
                            .chat_id_hash
                            .unwrap_or_else(|| chance::st_string_hash(&ctx.chat_id));
                        let mut seed =
                            format!("{chat}-{}-{offset}", chance::st_string_hash(source));
                        if let Some(r) = &st.pick_reroll_seed {
                            seed.push('-');
                            seed.push_str(r);
                        }
                        let r =
                            chance::seedrandom_first(&chance::st_string_hash(&seed).to_string());
                        ((r * items.len() as f64) as usize).min(items.len() - 1)
                    } else {
                        let offset = call.span.start.to_le_bytes();
                        let h = chance::stable_hash(&[
                            ctx.chat_id.as_bytes(),
                            self.node.id.as_bytes(),
                            &offset,
                        ]);
                        (h % items.len() as u64) as usize
                    };
                    out.push_str(&items[i]);
                }
            }
            Roll => {
                let l = &self.eng.limits;
                let dice =
                    chance::parse_dice(arg(0), (l.dice_count, l.dice_sides, l.dice_modifier))
                        .ok_or(Bad::Empty)?;
                let mut sum = dice.modifier;
                for _ in 0..dice.count {
                    sum += match ctx.options.random {
                        // droll: `1 + floor(Math.random() * sides)` per die (SPEC §17.3.1).
                        Some(x) => {
                            (1 + (x * dice.sides as f64) as u64).min(dice.sides as u64) as i64
                        }
                        None => self.eng.rng.random_range(1..=dice.sides) as i64,
                    };
                }
                out.push_str(&sum.to_string());
            }
            Newline | Space => {
                // `newline::N` / `space::N`: N ASCII digits up to 1000; empty renders empty
                // (SPEC §11.6, §11.13.2).
                let unit = if call.kind == Newline { '\n' } else { ' ' };
                let n = match args.first().map(|a| a.trim()) {
                    None => 1,
                    Some("") => 0,
                    Some(n) if n.bytes().all(|b| b.is_ascii_digit()) && n.len() <= 4 => n
                        .parse::<usize>()
                        .ok()
                        .filter(|&n| n <= 1000)
                        .ok_or(Bad::Literal(COUNT))?,
                    Some(_) => return Err(Bad::Literal(COUNT)),
                };
                out.extend(std::iter::repeat_n(unit, n));
            }
            // Unpaired `{{trim}}` marks the node (SPEC §2.3.3); `{{trim}}…{{/trim}}` and
            // `{{trim::x}}` render their (trimmed) text instead.
            Trim => match args.first() {
                // SillyTavern's engine leaves `{{trim}}` in place and then deletes it with the
                // newlines around it (SPEC §17, `docs/sillytavern.md`).
                None if self.node.st_engine => out.push_str(super::st_trim_marker()),
                None => self.sig.add(Signals::TRIM),
                Some(_) => out.push_str(text(0)),
            },
            Noop | Banned | Comment => {}
            Reverse => out.extend(text(0).chars().rev()),
            ScriptValue => {
                let frame = self.eng.script.as_ref();
                let value = arg(0)
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| frame?.values.get(i));
                out.push_str(value.map_or("", String::as_str));
            }
            ChatIndex(_) | Greeting | CreatorNotes | CharDepthPrompt | SystemPrompt
            | DefaultSystemPrompt | Instruct | ContextTemplate | TokenLimit(_) | TimeDiff
            | LastGenerationType | IsMobile | HasExtension | Input => {
                self.state_value(call.kind, args, out)?
            }
            // Declarations, unknown and unsupported macros never reach here.
            // A literal `{{if}}` condition is its text.
            CondText => out.push_str(args.first().map_or("", |a| a.as_ref())),
            SetVar(_) | AddVar(_) | IncVar(_) | DecVar(_) | DeleteVar(_) | SetVarKey(_)
            | Shorthand(..) | If | Closer | Unknown => {}
        }
        Ok(())
    }

    /// `{{user}}` (`which` 0) or `{{char}}` (1); an empty one is noted once per render, with the
    /// node that first used it.
    fn name(&mut self, value: &str, which: usize, out: &mut String) {
        if value.is_empty() {
            let node = self.node.id;
            self.eng.empty_names[which].get_or_insert_with(|| node.to_string());
        }
        out.push_str(value);
    }

    fn clock(&mut self, fmt: &str, out: &mut String) {
        if let Some(t) = self.eng.clock {
            clock::format(t, fmt, out);
        }
    }

    /// Inserts a host value, identity-converted once per render (borrowed when it has no
    /// placeholders), and signals when non-empty.
    fn host_value(&mut self, which: HostValue, signal: Signals, out: &mut String) {
        let ctx = self.ctx();
        // Already identity-converted by whoever set it.
        if let (HostValue::Personality, Some(own)) = (which, self.node.personality) {
            if !own.is_empty() {
                out.push_str(own);
                self.sig.add(signal);
            }
            return;
        }
        let slot = &mut self.eng.host_values[which as usize];
        let value = slot.get_or_insert_with(|| {
            let raw = match which {
                HostValue::Description => ctx.description.as_str(),
                HostValue::Personality => &ctx.personality,
                HostValue::Scenario => &ctx.scenario,
                HostValue::Persona => &ctx.persona,
                HostValue::MesExamples => &ctx.mes_examples,
                HostValue::MesExamplesRaw => &ctx.mes_examples_raw,
                HostValue::Model => &ctx.model,
                HostValue::CharVersion => &ctx.char_version,
                HostValue::CharPrompt => &ctx.char_prompt,
                HostValue::CharInstruction => &ctx.char_instruction,
                HostValue::LastMessage => last(ctx, None),
                HostValue::LastUserMessage => last(ctx, Some(Role::User)),
                HostValue::LastCharMessage => last(ctx, Some(Role::Model)),
            };
            crate::identity::convert_identities(raw, &ctx.user, &ctx.char)
        });
        if !value.is_empty() {
            out.push_str(value);
            self.sig.add(signal);
        }
    }
}

impl Run<'_, '_> {
    /// `group`, `groupNotMuted`, `notChar` (and `<GROUP>`), worked out on first use.
    pub(super) fn groups(&mut self) -> &[String; 3] {
        let ctx = self.ctx();
        self.eng.groups.get_or_insert_with(|| groups(ctx))
    }
}

/// The group macros (SPEC §11.14.2): `group`, `groupNotMuted`, `notChar`, each the members
/// joined with `, `. Outside a group: `char`, `char`, `user`.
fn groups(ctx: &crate::context::Context) -> [String; 3] {
    if ctx.group.is_empty() {
        return [ctx.char.clone(), ctx.char.clone(), ctx.user.clone()];
    }
    let muted: std::collections::HashSet<&str> =
        ctx.group_muted.iter().map(String::as_str).collect();
    let join = |keep: &dyn Fn(&str) -> bool| {
        let kept: Vec<&str> = ctx
            .group
            .iter()
            .map(String::as_str)
            .filter(|m| keep(m))
            .collect();
        kept.join(", ")
    };
    [
        join(&|_| true),
        join(&|m| !muted.contains(m)),
        join(&|m| !muted.contains(m) && m != ctx.char),
    ]
}

/// Text of the last `DIALOGUE_HISTORY` item (of a role, if given).
fn last(ctx: &crate::context::Context, role: Option<Role>) -> &str {
    // A swipe's replaced reply is the newest message still (SPEC §18.1).
    if let Some(s) = ctx.swiped.as_deref()
        && role.is_none_or(|r| s.role == r)
    {
        return &s.text;
    }
    ctx.items
        .iter()
        .rfind(|i| i.tag == Some(Tag::DialogueHistory) && role.is_none_or(|r| i.role == r))
        .map_or("", |i| i.text.as_str())
}
