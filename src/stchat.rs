//! A SillyTavern chat file (`.jsonl`, as ST saves and exports it) read as a context's history
//! (SPEC §17.5): the header's `chat_metadata` and one message object per line, hidden
//! (`is_system`) messages left out as ST's `Generate` leaves them out.

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use serde_json::Value;

use crate::context::{Context, ContextItem, Tag};
use crate::error::ContextError;
use crate::role::Role;

/// Largest chat file read (SPEC §17.5).
pub const CHAT_MAX_FILE_BYTES: usize = 64 << 20;
/// Most message lines a chat file may hold.
pub const CHAT_MAX_MESSAGES: usize = 100_000;
/// Longest message text.
const CHAT_MAX_TEXT_BYTES: usize = 1 << 20;

fn bad(field: String, problem: impl Into<String>) -> ContextError {
    ContextError::Field {
        field,
        problem: problem.into(),
    }
}

/// One JSON object of a chat file read one level deep: each member kept as its raw text until
/// it is read. SillyTavern's `JSON.parse` takes any depth, and extensions keep deep state in
/// `extra` and `chat_metadata`; serde_json's `Value` stops at 128 levels. Raw members are
/// skipped without recursion (serde_json's `ignore_value` keeps its own stack), so a member
/// 100,000 levels deep costs its bytes and is never read unless the layout needs it. A key
/// given twice keeps its last value, as `JSON.parse` does.
struct Shallow<'a>(std::collections::HashMap<String, &'a serde_json::value::RawValue>);

impl<'a> Shallow<'a> {
    fn parse(text: &'a str) -> Option<Shallow<'a>> {
        serde_json::from_str(text).ok().map(Shallow)
    }

    /// The member `key` as an object one level deep.
    fn object(&self, key: &str) -> Option<Shallow<'a>> {
        Shallow::parse(self.0.get(key)?.get())
    }

    /// The member `key` as a value; `None` when missing or nested past serde_json's limit.
    fn value(&self, key: &str) -> Option<Value> {
        serde_json::from_str(self.0.get(key)?.get()).ok()
    }

    /// JavaScript's truthiness of the member (`!!x.is_user`): any array or object is true,
    /// however deep.
    fn truthy(&self, key: &str) -> bool {
        match self.0.get(key).map(|r| r.get().trim_start()) {
            Some(raw) if raw.starts_with(['[', '{']) => true,
            Some(raw) => crate::jstext::js_truthy(serde_json::from_str(raw).ok().as_ref()),
            None => false,
        }
    }

    fn string(&self, key: &str) -> Option<String> {
        serde_json::from_str(self.0.get(key)?.get()).ok()
    }
}

impl Context {
    /// A context whose history is a SillyTavern chat file (SPEC §17.5).
    ///
    /// ```
    /// let chat = br#"{"user_name": "Alice", "character_name": "Sera", "chat_metadata": {"chat_id_hash": 7, "variables": {"n": 2}}}
    /// {"name": "Sera", "is_user": false, "mes": "Hello.", "send_date": "2025-06-15T13:50:00Z"}
    /// {"name": "Alice", "is_user": true, "is_system": true, "mes": "(hidden)"}
    /// {"name": "Alice", "is_user": true, "mes": "Hi!"}
    /// "#;
    /// let ctx = stpreset::Context::from_st_chat(chat).unwrap();
    /// assert_eq!(ctx.items.len(), 2);
    /// assert_eq!(ctx.items[1].name.as_deref(), Some("Alice"));
    /// assert_eq!(ctx.variables["n"], "2");
    /// assert_eq!(ctx.user_settings.chat_id_hash, Some(7));
    /// assert_eq!(ctx.lore.as_ref().and_then(|l| l.position), Some(3));
    /// ```
    pub fn from_st_chat(bytes: &[u8]) -> Result<Context, ContextError> {
        let mut ctx = Context::default();
        ctx.apply_st_chat(bytes)?;
        Ok(ctx)
    }

    /// Replaces this context's `DIALOGUE_HISTORY` items with a SillyTavern chat file's
    /// messages; its metadata fills only what the context leaves unset (SPEC §17.5). An
    /// error names the line (1-based) or the limit.
    pub fn apply_st_chat(&mut self, bytes: &[u8]) -> Result<(), ContextError> {
        if bytes.len() > CHAT_MAX_FILE_BYTES {
            return Err(bad(
                "chat".into(),
                format!("the chat file is over the limit of {CHAT_MAX_FILE_BYTES} bytes"),
            ));
        }
        let bytes = bytes
            .strip_prefix(crate::context::UTF8_BOM)
            .unwrap_or(bytes);
        if let Err(e) = std::str::from_utf8(bytes) {
            let line = 1 + memchr::memchr_iter(b'\n', &bytes[..e.valid_up_to()]).count();
            return Err(bad(
                format!("chat line {line}"),
                format!("not valid UTF-8 (byte {})", e.valid_up_to()),
            ));
        }
        // Lone UTF-16 surrogates in `\u` escapes (a message cut inside an emoji) read as
        // U+FFFD, as in a context file: JavaScript's `JSON.parse` takes them. The render's
        // `LoneSurrogate` note names their lines.
        let (text, at) = crate::surrogates::repair_json_at(bytes);
        let text = std::str::from_utf8(&text).map_err(|e| ContextError::Utf8 {
            offset: e.valid_up_to(),
        })?;
        if !at.is_empty() {
            let mut line = 1;
            let mut from = 0;
            for &offset in &at {
                line += memchr::memchr_iter(b'\n', &text.as_bytes()[from..offset]).count();
                from = offset;
                if self.surrogate_lines.last() != Some(&line) {
                    self.surrogate_lines.push(line);
                }
            }
            self.lone_surrogates += at.len();
        }
        let mut lines = text
            .split('\n')
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let Some((at, header)) = lines.next() else {
            return Err(bad("chat".into(), "the chat file is empty"));
        };
        let header = Shallow::parse(header)
            .filter(|h| !h.0.contains_key("mes"))
            .ok_or_else(|| {
                bad(
                    format!("chat line {}", at + 1),
                    "not the chat header (a SillyTavern chat file is one JSON object per line: a header, then the messages)",
                )
            })?;
        let mut items = Vec::new();
        let mut lines_seen = 0u64;
        for (i, line) in lines {
            let field = || format!("chat line {}", i + 1);
            lines_seen += 1;
            if lines_seen as usize > CHAT_MAX_MESSAGES {
                return Err(bad(
                    "chat".into(),
                    format!("the chat file has more than {CHAT_MAX_MESSAGES} messages"),
                ));
            }
            let m = match serde_json::from_str(line) {
                Ok(m) => Shallow(m),
                Err(e) if e.is_data() => return Err(bad(field(), "not a JSON object")),
                Err(e) => return Err(bad(field(), format!("not a JSON object: {e}"))),
            };
            // ST tests these flags as JavaScript does (`!x.is_system`, `x.is_user ? …`).
            if m.truthy("is_system") {
                continue;
            }
            let text = m
                .string("mes")
                .ok_or_else(|| bad(field(), "`mes` is not a string"))?;
            if text.len() > CHAT_MAX_TEXT_BYTES {
                return Err(bad(
                    field(),
                    format!("`mes` is over the limit of {CHAT_MAX_TEXT_BYTES} bytes"),
                ));
            }
            let role = if m.truthy("is_user") {
                Role::User
            } else if m.object("extra").and_then(|e| e.string("type")).as_deref()
                == Some("narrator")
            {
                Role::System
            } else {
                Role::Model
            };
            let mut item = ContextItem::new(Some(Tag::DialogueHistory), role, text);
            item.name = m.string("name");
            item.time = m.value("send_date").as_ref().and_then(parse_timestamp);
            // `{{lastSwipeId}}` / `{{currentSwipeId}}` read these as ST does: the length of a
            // `swipes` array, a numeric `swipe_id`.
            // Counted without building the swipes' texts.
            if let Some(raw) = m.0.get("swipes")
                && let Ok(swipes) = serde_json::from_str::<Vec<serde::de::IgnoredAny>>(raw.get())
            {
                item.swipes = u32::try_from(swipes.len()).ok();
            }
            item.swipe_id = m
                .value("swipe_id")
                .and_then(|v| v.as_u64())
                .and_then(|n| u32::try_from(n).ok());
            items.push(item);
        }
        self.items.retain(|i| i.tag != Some(Tag::DialogueHistory));
        self.items.extend(items);
        let meta = header.object("chat_metadata");
        let get = |key: &str| meta.as_ref().and_then(|m| m.value(key));
        if let Some(vars) = meta.as_ref().and_then(|m| m.object("variables")) {
            for (k, raw) in &vars.0 {
                // A value too deep for `Value` is kept as its JSON text, as a shallow one is.
                let v = match serde_json::from_str::<Value>(raw.get()) {
                    Ok(Value::String(s)) => s,
                    Ok(other) => other.to_string(),
                    Err(_) => raw.get().trim().to_string(),
                };
                self.variables.entry(k.clone()).or_insert(v);
            }
        }
        let st = &mut self.user_settings;
        if st.chat_id_hash.is_none() {
            st.chat_id_hash = get("chat_id_hash").as_ref().and_then(Value::as_u64);
        }
        if st.pick_reroll_seed.is_none() {
            st.pick_reroll_seed = get("pick_reroll_seed").and_then(|v| match v {
                Value::String(s) => Some(s.clone()),
                Value::Number(n) => Some(n.to_string()),
                _ => None,
            });
        }
        for (slot, key) in [
            (&mut st.chat_scenario, "scenario"),
            (&mut st.chat_mes_example, "mes_example"),
            (&mut st.chat_system_prompt, "system_prompt"),
        ] {
            if slot.is_empty()
                && let Some(v) = get(key).as_ref().and_then(Value::as_str)
            {
                *slot = v.to_string();
            }
        }
        let note = &mut st.author_note;
        let fresh = crate::layout::AuthorsNote::default();
        if *note == fresh {
            if let Some(t) = get("note_prompt").as_ref().and_then(Value::as_str) {
                note.text = t.to_string();
            }
            if let Some(n) = get("note_interval").as_ref().and_then(Value::as_u64) {
                note.interval = n;
            }
            if let Some(p) = get("note_position")
                .as_ref()
                .and_then(Value::as_u64)
                .filter(|p| *p <= 2)
            {
                note.position = p as u8;
            }
            if let Some(d) = get("note_depth").as_ref().and_then(Value::as_u64) {
                note.depth = d.min(10_000);
            }
            if let Some(r) = get("note_role").as_ref().and_then(Value::as_u64) {
                note.role = match r {
                    1 => Role::User,
                    2 => Role::Model,
                    _ => Role::System,
                };
            }
        }
        if (self.user.is_empty() || self.user == "User")
            && let Some(u) = header.string("user_name")
        {
            self.user = u.to_string();
        }
        if self.char.is_empty()
            && let Some(c) = header.string("character_name")
        {
            self.char = c.to_string();
        }
        // The timed-effect clock: ST's `chat.length`, hidden messages included.
        let lore = self.lore.get_or_insert_with(Default::default);
        if lore.position.is_none() {
            lore.position = Some(lines_seen);
        }
        Ok(())
    }
}

/// The context-file fields a SillyTavern chat file gives (SPEC §9, §17.5): `items` (its
/// messages as `DIALOGUE_HISTORY` items), and where the file has them `user`, `char`,
/// `variables`, `chat_id_hash`, `pick_reroll_seed`, `chat_scenario`, `chat_mes_example`,
/// `chat_system_prompt`, `author_note` and `position`; keys in byte order. What the packages
/// hand a bot that builds its context as an object.
///
/// ```
/// let v = stpreset::stchat::st_chat_context(b"{\"user_name\": \"Alice\"}\n{\"name\": \"Sera\", \"mes\": \"Hi\"}\n").unwrap();
/// assert_eq!(v["items"][0]["name"], "Sera");
/// assert_eq!((v["user"].as_str(), v["position"].as_u64()), (Some("Alice"), Some(1)));
/// ```
pub fn st_chat_context(bytes: &[u8]) -> Result<Value, ContextError> {
    let ctx = Context::from_st_chat(bytes)?;
    let role = |r: Role| match r {
        Role::System => "system",
        Role::User => "user",
        Role::Model => "model",
    };
    let items: Vec<Value> = ctx
        .items
        .iter()
        .map(|i| {
            let mut o = serde_json::json!({"tag": "DIALOGUE_HISTORY", "role": role(i.role), "text": i.text});
            if let Some(n) = &i.name {
                o["name"] = n.as_str().into();
            }
            if let Some(t) = i.time {
                o["time"] = t.to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true).into();
            }
            o
        })
        .collect();
    let mut v = serde_json::Map::new();
    v.insert("items".into(), items.into());
    if ctx.user != "User" {
        v.insert("user".into(), ctx.user.clone().into());
    }
    if !ctx.char.is_empty() {
        v.insert("char".into(), ctx.char.clone().into());
    }
    if !ctx.variables.is_empty() {
        v.insert(
            "variables".into(),
            serde_json::to_value(&ctx.variables).unwrap_or_default(),
        );
    }
    let st = &ctx.user_settings;
    if let Some(h) = st.chat_id_hash {
        v.insert("chat_id_hash".into(), h.into());
    }
    if let Some(r) = &st.pick_reroll_seed {
        v.insert("pick_reroll_seed".into(), r.clone().into());
    }
    for (key, value) in [
        ("chat_scenario", &st.chat_scenario),
        ("chat_mes_example", &st.chat_mes_example),
        ("chat_system_prompt", &st.chat_system_prompt),
    ] {
        if !value.is_empty() {
            v.insert(key.into(), value.clone().into());
        }
    }
    let note = &st.author_note;
    if *note != crate::layout::AuthorsNote::default() {
        v.insert(
            "author_note".into(),
            serde_json::json!({"text": note.text, "interval": note.interval, "position": note.position,
                "depth": note.depth, "role": match note.role { Role::Model => "assistant", r => role(r) }}),
        );
    }
    if let Some(p) = ctx.lore.as_ref().and_then(|l| l.position) {
        v.insert("position".into(), p.into());
    }
    Ok(Value::Object(v))
}

/// ST's `parseTimestamp`: Unix milliseconds, ISO 8601, `June 19, 2023 2:20pm`, or the
/// humanized `2024-07-12@01h31m37s[123ms]` (times without a zone read as UTC).
fn parse_timestamp(v: &Value) -> Option<DateTime<Utc>> {
    if let Some(n) = v.as_f64() {
        return (n.is_finite() && n >= 0.0)
            .then(|| Utc.timestamp_millis_opt(n as i64).single())
            .flatten();
    }
    let s = v.as_str()?.trim();
    if s.is_empty() {
        return None;
    }
    if s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse::<i64>()
            .ok()
            .and_then(|n| Utc.timestamp_millis_opt(n).single());
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    for f in [
        "%Y-%m-%dT%H:%M:%S%.f",
        "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%dT%H:%M",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some(t.and_utc());
        }
    }
    if let Ok(d) = NaiveDate::parse_from_str(s, "%Y-%m-%d") {
        return d.and_hms_opt(0, 0, 0).map(|t| t.and_utc());
    }
    // 2024-07-12@01h31m37s123ms, 2024-7-12@01h31m37s
    if let Some((date, time)) = s.split_once('@') {
        let time = time.trim().replace(' ', "");
        let d = NaiveDate::parse_from_str(date.trim(), "%Y-%m-%d").ok()?;
        let (h, rest) = time.split_once('h')?;
        let (m, rest) = rest.split_once('m')?;
        let (sec, rest) = rest.split_once('s')?;
        let ms = rest.strip_suffix("ms").unwrap_or("0");
        let ms: u32 = if ms.is_empty() { 0 } else { ms.parse().ok()? };
        return d
            .and_hms_milli_opt(h.parse().ok()?, m.parse().ok()?, sec.parse().ok()?, ms)
            .map(|t| t.and_utc());
    }
    // June 19, 2023 2:20pm
    let lower = s.to_ascii_lowercase();
    let pm = lower.ends_with("pm");
    if pm || lower.ends_with("am") {
        let body = &s[..s.len() - 2];
        let t = NaiveDateTime::parse_from_str(body, "%B %d, %Y %H:%M").ok()?;
        use chrono::Timelike;
        let hour = t.hour() % 12 + if pm { 12 } else { 0 };
        return t
            .date()
            .and_hms_opt(hour, t.minute(), 0)
            .map(|t| t.and_utc());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_as_sillytavern_parses_them() {
        let t = |s: &str| parse_timestamp(&Value::String(s.into())).map(|t| t.to_rfc3339());
        assert_eq!(
            t("2025-06-15T13:50:00Z").as_deref(),
            Some("2025-06-15T13:50:00+00:00")
        );
        assert_eq!(
            t("2024-07-12@01h31m37s123ms").as_deref(),
            Some("2024-07-12T01:31:37.123+00:00")
        );
        assert_eq!(
            t("2024-7-12@01h31m37s").as_deref(),
            Some("2024-07-12T01:31:37+00:00")
        );
        assert_eq!(
            t("June 19, 2023 2:20pm").as_deref(),
            Some("2023-06-19T14:20:00+00:00")
        );
        assert_eq!(
            t("1718459400000").as_deref(),
            Some("2024-06-15T13:50:00+00:00")
        );
        assert_eq!(t("whenever"), None);
    }

    #[test]
    fn bad_lines_are_named() {
        let err = Context::from_st_chat(b"{}\n{\"mes\": 3}\n").unwrap_err();
        assert!(err.to_string().contains("chat line 2"), "{err}");
        let err = Context::from_st_chat(b"{}\n[1]\n").unwrap_err();
        assert!(err.to_string().contains("chat line 2"), "{err}");
        assert!(Context::from_st_chat(b"").is_err());
    }

    #[test]
    fn lone_surrogates_truthy_flags_and_line_numbers() {
        let ctx = Context::from_st_chat(
            b"{}\n{\"mes\": \"cut \\ud83d\"}\n{\"mes\": \"hidden\", \"is_system\": 1}\n{\"mes\": \"me\", \"is_user\": \"yes\"}\n",
        )
        .unwrap();
        assert_eq!(ctx.items.len(), 2);
        assert_eq!(ctx.items[0].text, "cut \u{FFFD}");
        assert_eq!(ctx.items[1].role, Role::User);
        let err = Context::from_st_chat(b"\n\nnope\n").unwrap_err();
        assert!(err.to_string().contains("chat line 3"), "{err}");
        let err =
            Context::from_st_chat(b"{}\n{\"mes\": \"a\"}\n{\"mes\": \"\xff\"}\n").unwrap_err();
        assert!(err.to_string().contains("chat line 3"), "{err}");
    }

    #[test]
    fn deep_extra_and_metadata_are_read_as_sillytavern_reads_them() {
        // `JSON.parse` takes any depth: 100,000 levels of an extension's state in `extra`
        // or in the metadata leave the chat readable (and cost their bytes, no recursion).
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let chat = format!(
            "{{\"chat_metadata\": {{\"ext\": {deep}, \"variables\": {{\"v\": {deep}, \"n\": 2}}}}}}\n\
             {{\"name\": \"N\", \"mes\": \"x\", \"extra\": {{\"state\": {deep}, \"type\": \"narrator\"}}}}\n\
             {{\"mes\": \"y\", \"is_user\": {deep}, \"mes\": \"z\"}}\n"
        );
        let ctx = Context::from_st_chat(chat.as_bytes()).unwrap();
        assert_eq!(ctx.items.len(), 2);
        assert_eq!(ctx.items[0].role, Role::System);
        // An array is truthy; a key given twice keeps its last value.
        assert_eq!(
            (ctx.items[1].role, ctx.items[1].text.as_str()),
            (Role::User, "z")
        );
        assert_eq!(ctx.variables["n"], "2");
        assert_eq!(ctx.variables["v"].len(), 200_000);
    }

    #[test]
    fn lone_surrogates_are_noted_with_their_lines() {
        let ctx = Context::from_st_chat(
            b"{}\n{\"mes\": \"a \\ud83d\"}\n{\"mes\": \"b\"}\n{\"mes\": \"\\ude00 \\ud800\"}\n",
        )
        .unwrap();
        assert_eq!(ctx.lone_surrogates, 3);
        let note = ctx.surrogate_note().unwrap();
        assert_eq!(note.kind, crate::diagnostic::DiagnosticKind::LoneSurrogate);
        assert!(
            note.message.contains("chat file lines 2, 4"),
            "{}",
            note.message
        );
        assert!(
            note.message.contains("3 lone UTF-16 surrogates"),
            "{}",
            note.message
        );
    }

    #[test]
    fn narrators_and_hidden_messages() {
        let ctx = Context::from_st_chat(
            b"{\"chat_metadata\": {\"note_prompt\": \"AN\", \"scenario\": \"S\"}}\n{\"name\": \"N\", \"mes\": \"x\", \"extra\": {\"type\": \"narrator\"}}\n{\"mes\": \"h\", \"is_system\": true}\n",
        )
        .unwrap();
        assert_eq!(ctx.items.len(), 1);
        assert_eq!(ctx.items[0].role, Role::System);
        assert_eq!(ctx.user_settings.author_note.text, "AN");
        assert_eq!(ctx.user_settings.chat_scenario, "S");
        assert_eq!(ctx.lore.as_ref().and_then(|l| l.position), Some(2));
    }
}
