//! The prompt list SillyTavern builds from a preset file (SPEC §17.1.2; notes rules 4–9),
//! resolved once per compiled preset: PromptManager's `sanitizeServiceSettings` (the
//! `character_id` 100001 order, else ST's default order; missing default prompts added) and
//! the fields `getPromptCollection` and `populateChatCompletion` read, with JavaScript's
//! comparisons kept (`enabled` truthy, `injection_position === 1`, `system_prompt === false`).

use std::sync::Arc;

use serde_json::Value;

use crate::limits::Limits;
use crate::node::CompiledNode;
use crate::role::Role;

/// What a prompt is to the request builder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `main`.
    Main,
    /// `jailbreak` (Post-History Instructions).
    Jailbreak,
    /// A prompt ST fills itself (rule 15), whatever its own content.
    Marker(Marker),
    /// `chatHistory`.
    ChatHistory,
    /// `dialogueExamples`.
    DialogueExamples,
    /// Any other prompt: its own content.
    Custom,
}

/// The prompts whose content ST supplies (`preparePromptsForChatCompletion`'s list).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Marker {
    WorldInfoBefore,
    WorldInfoAfter,
    CharDescription,
    CharPersonality,
    Scenario,
    PersonaDescription,
    Impersonate,
    QuietPrompt,
    GroupNudge,
    Bias,
}

impl Marker {
    pub(crate) const ALL: [Marker; 10] = [
        Marker::WorldInfoBefore,
        Marker::WorldInfoAfter,
        Marker::CharDescription,
        Marker::CharPersonality,
        Marker::Scenario,
        Marker::Impersonate,
        Marker::QuietPrompt,
        Marker::GroupNudge,
        Marker::Bias,
        Marker::PersonaDescription,
    ];

    pub(crate) fn identifier(self) -> &'static str {
        match self {
            Marker::WorldInfoBefore => "worldInfoBefore",
            Marker::WorldInfoAfter => "worldInfoAfter",
            Marker::CharDescription => "charDescription",
            Marker::CharPersonality => "charPersonality",
            Marker::Scenario => "scenario",
            Marker::PersonaDescription => "personaDescription",
            Marker::Impersonate => "impersonate",
            Marker::QuietPrompt => "quietPrompt",
            Marker::GroupNudge => "groupNudge",
            Marker::Bias => "bias",
        }
    }

    fn of(identifier: &str) -> Option<Marker> {
        Marker::ALL
            .into_iter()
            .find(|m| m.identifier() == identifier)
    }

    /// The role ST gives the marker's prompt when the preset gives none.
    pub(crate) fn default_role(self) -> Role {
        match self {
            Marker::Bias => Role::Model,
            _ => Role::System,
        }
    }
}

/// The prompts a render finds by identifier (ST's `prompts.index("…")` with a literal): the
/// markers and six more. Resolved when the plan is built, so a render looks them up by
/// position, never by hashing or comparing identifiers (that was a tenth of a short render).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Named {
    Marker(Marker),
    Main,
    Nsfw,
    Jailbreak,
    EnhanceDefinitions,
    ChatHistory,
    DialogueExamples,
}

impl Named {
    /// How many there are (the length of a table by [`slot`](Self::slot)).
    pub(crate) const COUNT: usize = Marker::ALL.len() + 6;

    /// The name's place in a table of [`COUNT`](Self::COUNT).
    pub(crate) fn slot(self) -> usize {
        let markers = Marker::ALL.len();
        match self {
            Named::Marker(m) => m as usize,
            Named::Main => markers,
            Named::Nsfw => markers + 1,
            Named::Jailbreak => markers + 2,
            Named::EnhanceDefinitions => markers + 3,
            Named::ChatHistory => markers + 4,
            Named::DialogueExamples => markers + 5,
        }
    }

    fn of(identifier: &str) -> Option<Named> {
        Some(match identifier {
            "main" => Named::Main,
            "nsfw" => Named::Nsfw,
            "jailbreak" => Named::Jailbreak,
            "enhanceDefinitions" => Named::EnhanceDefinitions,
            "chatHistory" => Named::ChatHistory,
            "dialogueExamples" => Named::DialogueExamples,
            other => return Marker::of(other).map(Named::Marker),
        })
    }
}

/// One entry of the prompt order, with its prompt.
#[derive(Debug)]
pub(crate) struct Entry {
    pub identifier: Arc<str>,
    /// The identifier when a render looks it up by name.
    pub named: Option<Named>,
    pub kind: Kind,
    /// The prompt's `role` when it is one of the three (`None`: absent or another string; a
    /// relative message is then `system`, and an in-chat prompt is never injected).
    pub role: Option<Role>,
    /// Whether the prompt has a `role` key at all (a marker keeps ST's `system` without one).
    pub has_role: bool,
    /// Its compiled content (`None`: no content).
    pub text: Option<usize>,
    /// The order entry's `enabled`, truthy as JavaScript reads it.
    pub enabled: bool,
    /// `injection_trigger` (empty: every generation type).
    pub triggers: Vec<String>,
    /// `injection_position === 1`.
    pub in_chat: bool,
    /// `injection_depth`, when it is an integer in `0..=10000` (else never injected).
    pub depth: Option<u32>,
    /// `injection_order ?? 100`.
    pub order: f64,
    /// `system_prompt === false`: a custom prompt ST sends in relative position.
    pub relative: bool,
    /// `forbid_overrides === true`.
    pub forbid_overrides: bool,
}

/// A preset's prompt list as SillyTavern reads it, with each prompt's content compiled.
#[derive(Debug, Default)]
pub(crate) struct StPlan {
    pub entries: Vec<Entry>,
    pub nodes: Vec<CompiledNode>,
    /// The templates renders bring (card fields, lore, settings), compiled once.
    pub templates: super::templates::TemplateCache,
    /// The entry of each [`Named`] identifier, by [`Named::slot`] (each identifier has one
    /// entry: repeats are dropped).
    named: [Option<usize>; Named::COUNT],
    /// The prompt ST adds for each marker the collection lacks (`Marker as usize`): default
    /// role, order 100, relative.
    pub markers: Vec<Entry>,
}

/// ST's default order (`promptManagerDefaultPromptOrder`) with each entry's `enabled`.
const DEFAULT_ORDER: [(&str, bool); 12] = [
    ("main", true),
    ("worldInfoBefore", true),
    ("personaDescription", true),
    ("charDescription", true),
    ("charPersonality", true),
    ("scenario", true),
    ("enhanceDefinitions", false),
    ("nsfw", true),
    ("worldInfoAfter", true),
    ("dialogueExamples", true),
    ("chatHistory", true),
    ("jailbreak", true),
];

/// ST's default prompts (`chatCompletionDefaultPrompts`): identifier, role, content (`None`:
/// a marker). All are `system_prompt: true`.
const DEFAULT_PROMPTS: [(&str, Option<&str>); 12] = [
    (
        "main",
        Some(
            "Write {{char}}'s next reply in a fictional chat between {{charIfNotGroup}} and {{user}}.",
        ),
    ),
    ("nsfw", Some("")),
    ("dialogueExamples", None),
    ("jailbreak", Some("")),
    ("chatHistory", None),
    ("worldInfoAfter", None),
    ("worldInfoBefore", None),
    (
        "enhanceDefinitions",
        Some(
            "If you have more knowledge of {{char}}, add to the character's lore and personality to enhance them but keep the Character Sheet's definitions absolute.",
        ),
    ),
    ("charDescription", None),
    ("charPersonality", None),
    ("scenario", None),
    ("personaDescription", None),
];

/// `{{//` with only whitespace before `}}` is no comment to SillyTavern 1.18's engine: it
/// stays in the text as written. Escaped here so that the template renders it literally.
fn literal_blank_comments(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains("{{//") {
        return text.into();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("{{//") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 4..];
        let ws = after.len() - after.trim_start().len();
        if ws > 0 && after[ws..].starts_with("}}") {
            out.push_str("\\{\\{//");
            out.push_str(&after[..ws]);
            out.push_str("\\}\\}");
            rest = &after[ws + 2..];
        } else {
            out.push_str("{{//");
            rest = after;
        }
    }
    out.push_str(rest);
    out.into()
}

fn role_of(v: Option<&Value>) -> Option<Role> {
    match v.and_then(Value::as_str) {
        Some("system") => Some(Role::System),
        Some("user") => Some(Role::User),
        Some("assistant") => Some(Role::Model),
        _ => None,
    }
}

/// A JSON number that is an integer in `0..=10000` (`injection_depth === i`).
fn depth_of(v: Option<&Value>) -> Option<u32> {
    let f = v?.as_f64()?;
    (f.fract() == 0.0 && (0.0..=10_000.0).contains(&f)).then_some(f as u32)
}

impl StPlan {
    /// Reads `root` (a preset file's object) as ST's PromptManager does and compiles every
    /// entry's content.
    pub fn new(root: &Value, limits: &Limits) -> StPlan {
        let empty = Vec::new();
        let mut prompts: Vec<&Value> = root
            .get("prompts")
            .and_then(Value::as_array)
            .unwrap_or(&empty)
            .iter()
            .filter(|p| p.is_object())
            .collect();
        // ST's defaults stand in for every default identifier the file lacks (all of them
        // when it has no prompts).
        let defaults: Vec<Value> = DEFAULT_PROMPTS
            .iter()
            .filter(|(id, _)| {
                !prompts
                    .iter()
                    .any(|p| p.get("identifier").and_then(Value::as_str) == Some(*id))
            })
            .map(|(id, content)| {
                let mut p = serde_json::json!({"identifier": id, "system_prompt": true});
                match content {
                    Some(c) => {
                        p["role"] = "system".into();
                        p["content"] = (*c).into();
                    }
                    None => p["marker"] = true.into(),
                }
                p
            })
            .collect();
        prompts.extend(defaults.iter());
        // ST's `prompts.find(p => p.identifier === id)` per order entry, as one map of each
        // identifier's first prompt: 20,000 entries cost 20,000 lookups, not 4·10⁸ compares.
        let mut first: std::collections::HashMap<&str, &Value> = Default::default();
        for p in &prompts {
            if let Some(id) = p.get("identifier").and_then(Value::as_str) {
                first.entry(id).or_insert(p);
            }
        }
        let prompt = |id: &str| first.get(id).copied();

        // The `character_id` 100001 list (compared as strings); without one, ST's default
        // order is appended and used. A list that is there but empty stays empty: ST's `find`
        // keeps returning it.
        let lists = root.get("prompt_order").and_then(Value::as_array);
        let list = lists.and_then(|lists| {
            lists.iter().find(|l| {
                let id = l.get("character_id");
                id.and_then(Value::as_str) == Some("100001")
                    || id.and_then(Value::as_u64) == Some(100_001)
                    || id.and_then(Value::as_f64) == Some(100_001.0)
            })
        });
        let order: Vec<(String, bool)> = match list {
            Some(l) => l
                .get("order")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(|e| {
                            let id = e.get("identifier")?.as_str()?;
                            Some((id.to_string(), crate::jstext::js_truthy(e.get("enabled"))))
                        })
                        .collect()
                })
                .unwrap_or_default(),
            None => DEFAULT_ORDER
                .iter()
                .map(|(id, on)| ((*id).to_string(), *on))
                .collect(),
        };

        let mut plan = StPlan::default();
        // A prompt listed more than once is taken once, at its first entry (deliberate: ST
        // would run an in-chat one's macros and inject it once per entry, so a file of a few
        // hundred kilobytes of repeats could make gigabytes; docs/sillytavern.md).
        let mut seen = std::collections::HashSet::new();
        for (id, enabled) in order {
            if !seen.insert(id.clone()) {
                continue;
            }
            // Order references to identifiers with no prompt are removed.
            let Some(p) = prompt(&id) else { continue };
            let kind = match id.as_str() {
                "main" => Kind::Main,
                "jailbreak" => Kind::Jailbreak,
                "chatHistory" => Kind::ChatHistory,
                "dialogueExamples" => Kind::DialogueExamples,
                other => Marker::of(other).map_or(Kind::Custom, Kind::Marker),
            };
            let text = match (kind, p.get("content").and_then(Value::as_str)) {
                (Kind::Main | Kind::Jailbreak | Kind::Custom, Some(c)) => {
                    let c = literal_blank_comments(c);
                    plan.nodes.push(CompiledNode::compile(&id, &c, limits));
                    Some(plan.nodes.len() - 1)
                }
                _ => None,
            };
            let triggers = p
                .get("injection_trigger")
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            let order = match p.get("injection_order") {
                None | Some(Value::Null) => 100.0,
                Some(v) => v
                    .as_f64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
                    .unwrap_or(100.0),
            };
            plan.entries.push(Entry {
                named: Named::of(&id),
                identifier: id.as_str().into(),
                kind,
                role: role_of(p.get("role")),
                has_role: p.get("role").is_some_and(|r| !r.is_null()),
                text,
                enabled,
                triggers,
                in_chat: p.get("injection_position").and_then(Value::as_f64) == Some(1.0),
                depth: depth_of(p.get("injection_depth")),
                order,
                relative: p.get("system_prompt") == Some(&Value::Bool(false)),
                forbid_overrides: p.get("forbid_overrides") == Some(&Value::Bool(true)),
            });
        }
        for (i, e) in plan.entries.iter().enumerate() {
            if let Some(n) = e.named {
                plan.named[n.slot()] = Some(i);
            }
        }
        // In declaration order, so that `Marker as usize` finds each one.
        let mut markers = Marker::ALL;
        markers.sort_by_key(|m| *m as usize);
        plan.markers = markers
            .into_iter()
            .map(|m| Entry {
                identifier: m.identifier().into(),
                named: Some(Named::Marker(m)),
                kind: Kind::Marker(m),
                role: Some(m.default_role()),
                has_role: false,
                text: None,
                enabled: true,
                triggers: Vec::new(),
                in_chat: false,
                depth: None,
                order: 100.0,
                relative: false,
                forbid_overrides: false,
            })
            .collect();
        plan
    }
}

impl StPlan {
    /// Applies a host's switches (the previewer's, a library user's `set_enabled`): each sets
    /// `enabled` on every entry of that identifier in ST's list.
    /// The last switch of an identifier wins; one pass over the list whatever the count.
    pub fn switch(&mut self, toggles: &[(String, bool)]) {
        let last: std::collections::HashMap<&str, bool> =
            toggles.iter().map(|(id, on)| (id.as_str(), *on)).collect();
        for e in &mut self.entries {
            if let Some(&on) = last.get(&*e.identifier) {
                e.enabled = on;
            }
        }
    }

    /// The entry of a named identifier (ST's `prompts.find`).
    pub(crate) fn named(&self, name: Named) -> Option<&Entry> {
        self.named[name.slot()].and_then(|i| self.entries.get(i))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan(v: Value) -> StPlan {
        StPlan::new(&v, &Limits::default())
    }

    #[test]
    fn only_the_100001_list_is_read_and_missing_defaults_are_added() {
        let p = plan(serde_json::json!({
            "prompts": [{"identifier": "x", "content": "X", "system_prompt": false}],
            "prompt_order": [
                {"character_id": 100000, "order": [{"identifier": "x", "enabled": true}]},
                {"character_id": "100001", "order": [
                    {"identifier": "main", "enabled": true},
                    {"identifier": "x"},
                    {"identifier": "ghost", "enabled": true},
                    {"identifier": "chatHistory", "enabled": 1}]}]
        }));
        let ids: Vec<&str> = p.entries.iter().map(|e| &*e.identifier).collect();
        assert_eq!(ids, ["main", "x", "chatHistory"]);
        let enabled: Vec<bool> = p.entries.iter().map(|e| e.enabled).collect();
        assert_eq!(enabled, [true, false, true]);
        // ST's default main stands in for the missing one.
        assert!(
            p.nodes[0]
                .tree
                .source
                .starts_with("Write {{char}}'s next reply")
        );
        assert!(p.entries[1].relative);
    }

    #[test]
    fn without_a_100001_list_the_default_order_is_used() {
        let p = plan(serde_json::json!({"prompts": [
            {"identifier": "main", "content": "M", "injection_position": 1, "injection_depth": 2.0}]}));
        assert_eq!(p.entries.len(), 12);
        assert_eq!(p.entries[0].kind, Kind::Main);
        assert!(p.entries[0].in_chat);
        assert_eq!(p.entries[0].depth, Some(2));
        assert!(!p.entries[6].enabled, "enhanceDefinitions is off");
    }

    #[test]
    fn each_marker_and_named_identifier_has_its_own_place() {
        let p = plan(serde_json::json!({}));
        // `StPlan::markers` is read by `Marker as usize`.
        for m in Marker::ALL {
            assert_eq!(p.markers[m as usize].kind, Kind::Marker(m));
            assert_eq!(Named::of(m.identifier()), Some(Named::Marker(m)));
        }
        let mut slots: Vec<usize> = Marker::ALL
            .into_iter()
            .map(Named::Marker)
            .chain([
                Named::Main,
                Named::Nsfw,
                Named::Jailbreak,
                Named::EnhanceDefinitions,
                Named::ChatHistory,
                Named::DialogueExamples,
            ])
            .map(Named::slot)
            .collect();
        slots.sort_unstable();
        assert_eq!(slots, (0..Named::COUNT).collect::<Vec<_>>());
        // The default order's `main` is found by name.
        assert_eq!(p.named(Named::Main).map(|e| &*e.identifier), Some("main"));
    }

    #[test]
    fn depths_must_be_integers_in_range() {
        for (v, want) in [
            (serde_json::json!(4), Some(4)),
            (serde_json::json!(-1), None),
            (serde_json::json!(1.5), None),
            (serde_json::json!("4"), None),
            (serde_json::json!(10001), None),
        ] {
            assert_eq!(depth_of(Some(&v)), want, "{v}");
        }
    }
}
