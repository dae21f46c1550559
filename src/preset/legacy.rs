//! Legacy text-completion presets (`context.story_string` + `sysprompt.content`) and the legacy
//! post-history fields (SPEC §6).

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::fields::kind;
use super::{PresetError, PresetNode};

/// Keyed story-string sections: key → the marker (or `main`) their placeholder stands for.
const KEYED: [(&str, &str); 6] = [
    ("system", "main"),
    ("wiBefore", "worldInfoBefore"),
    ("wiAfter", "worldInfoAfter"),
    ("description", "charDescription"),
    ("personality", "charPersonality"),
    ("mesExamples", "dialogueExamples"),
];

/// Sections whose content the host supplies elsewhere.
const DROPPED: [&str; 4] = ["persona", "scenario", "anchorBefore", "anchorAfter"];

fn text_at<'a>(
    root: &'a Map<String, Value>,
    object: &str,
    field: &str,
) -> Result<Option<&'a str>, PresetError> {
    let Some(obj) = root.get(object) else {
        return Ok(None);
    };
    let Some(obj) = obj.as_object() else {
        if obj.is_null() {
            return Ok(None);
        }
        return Err(PresetError::shape(object, "an object", kind(obj)));
    };
    match obj.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(PresetError::shape(
            format!("{object}.{field}"),
            "a string",
            kind(other),
        )),
    }
}

/// Converts a legacy story string into nodes, or `None` when the file has none.
pub(super) fn story(root: &Map<String, Value>) -> Result<Option<Vec<PresetNode>>, PresetError> {
    let story = text_at(root, "context", "story_string")?;
    let sysprompt = text_at(root, "sysprompt", "content")?;
    let (Some(story), Some(sysprompt)) = (story, sysprompt) else {
        return Ok(None);
    };
    if story.trim().is_empty() || sysprompt.trim().is_empty() {
        return Ok(None);
    }
    let mut b = StoryBuilder {
        sysprompt,
        nodes: Vec::new(),
        done: HashSet::new(),
        counter: 0,
    };
    let mut pos = 0;
    while pos < story.len() {
        let Some(start) = story[pos..].find("{{#if").map(|i| pos + i) else {
            b.outside(&story[pos..]);
            break;
        };
        b.outside(&story[pos..start]);
        let head_end = match story[start..].find("}}") {
            Some(i) => start + i,
            None => {
                b.outside(&story[start..]);
                break;
            }
        };
        let key = story[start + 5..head_end].trim();
        let body_start = head_end + 2;
        let (body_end, next) = match story[body_start..].find("{{/if}}") {
            Some(i) => (body_start + i, body_start + i + 7),
            None => (story.len(), story.len()),
        };
        b.section(key, &story[body_start..body_end]);
        pos = next;
    }
    b.nodes.push(PresetNode::marker("chatHistory"));
    Ok(Some(b.nodes))
}

struct StoryBuilder<'a> {
    sysprompt: &'a str,
    nodes: Vec<PresetNode>,
    /// Keys whose marker (or `main`) was already emitted.
    done: HashSet<&'static str>,
    counter: usize,
}

impl StoryBuilder<'_> {
    /// A synthetic custom node, after removing `{{trim}}`; whitespace-only pieces are dropped.
    fn custom(&mut self, text: &str) {
        let text = text.replace("{{trim}}", "");
        if text.trim().is_empty() {
            return;
        }
        self.counter += 1;
        let id = format!("legacy_{}", self.counter);
        self.nodes.push(PresetNode::custom(id, text, true));
    }

    /// The marker or `main` node of a key, the first time only.
    fn anchor(&mut self, key: &'static str, marker: &str) {
        if !self.done.insert(key) {
            return;
        }
        if marker == "main" {
            self.nodes.push(PresetNode::custom(
                "main".into(),
                self.sysprompt.to_string(),
                true,
            ));
        } else {
            self.nodes.push(PresetNode::marker(marker));
        }
    }

    /// Text outside sections: keyed placeholders act like their section's.
    fn outside(&mut self, text: &str) {
        // One forward pass over the `{{` positions: searching the rest of the text once per
        // key and placeholder made N placeholders cost N passes (quadratic).
        let mut piece_start = 0;
        let mut from = 0;
        while let Some(i) = memchr::memmem::find(&text.as_bytes()[from..], b"{{").map(|i| from + i)
        {
            let after = &text[i + 2..];
            let found = KEYED
                .iter()
                .find(|&&(key, _)| after.starts_with(key) && after[key.len()..].starts_with("}}"));
            match found {
                Some(&(key, marker)) => {
                    self.custom(&text[piece_start..i]);
                    self.anchor(key, marker);
                    piece_start = i + key.len() + 4;
                    from = piece_start;
                }
                None => from = i + 1,
            }
        }
        self.custom(&text[piece_start..]);
    }

    fn section(&mut self, key: &str, body: &str) {
        if DROPPED.contains(&key) {
            return;
        }
        let Some(&(key, marker)) = KEYED.iter().find(|(k, _)| *k == key) else {
            self.custom(body);
            return;
        };
        if self.done.contains(key) {
            return;
        }
        match body.find(&format!("{{{{{key}}}}}")) {
            Some(i) => {
                self.custom(&body[..i]);
                self.anchor(key, marker);
                self.custom(&body[i + key.len() + 4..]);
            }
            None => {
                // Without its placeholder the section is plain text (for `system`, the
                // sysprompt is then not imported).
                self.done.insert(key);
                self.custom(body);
            }
        }
    }
}

/// Appends the legacy post-history fields as depth-0 system nodes (SPEC §6).
pub(super) fn post_history(
    root: &Map<String, Value>,
    nodes: &mut Vec<PresetNode>,
) -> Result<(), PresetError> {
    let root_field = match root.get("post_history") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(other) => {
            return Err(PresetError::shape("post_history", "a string", kind(other)));
        }
    };
    let fields = [
        ("legacyPostHistory", root_field),
        (
            "legacySyspromptPostHistory",
            text_at(root, "sysprompt", "post_history")?,
        ),
        (
            "legacyContextPostHistory",
            text_at(root, "context", "post_history")?,
        ),
    ];
    // Most presets have none of them: then no sets are built (they hash every depth node).
    if fields.iter().all(|(_, text)| text.is_none()) {
        return Ok(());
    }
    let mut seen: HashSet<String> = nodes
        .iter()
        .filter(|n| n.is_depth())
        .map(|n| n.content.trim().to_string())
        .collect();
    // Identifiers stay unique (diagnostics and the store find nodes by identifier): a file
    // whose own prompt already uses `legacyPostHistory` gets `legacyPostHistory_2`.
    let mut taken: HashSet<String> = nodes.iter().map(|n| n.identifier.clone()).collect();
    for (id, text) in fields {
        let Some(text) = text else { continue };
        let trimmed = text.trim();
        if trimmed.is_empty() || !seen.insert(trimmed.to_string()) {
            continue;
        }
        let id = unique_id(id, &mut taken);
        let mut node = PresetNode::custom(id, text.to_string(), true);
        node.injection_position = 1;
        node.injection_depth = 0;
        node.injection_order = 10000;
        nodes.push(node);
    }
    Ok(())
}

/// `base`, or `base_2`, `base_3`, ... : the first not yet taken (then taken).
fn unique_id(base: &str, taken: &mut HashSet<String>) -> String {
    let mut id = base.to_string();
    let mut n = 1;
    while taken.contains(&id) {
        n += 1;
        id = format!("{base}_{n}");
    }
    taken.insert(id.clone());
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ids(story: &str) -> Vec<(String, bool, String)> {
        let root = json!({"context": {"story_string": story}, "sysprompt": {"content": "SYS"}});
        story_nodes(&root)
    }

    fn story_nodes(root: &Value) -> Vec<(String, bool, String)> {
        super::story(root.as_object().unwrap())
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|n| (n.identifier, n.marker, n.content))
            .collect()
    }

    fn n(id: &str, marker: bool, content: &str) -> (String, bool, String) {
        (id.into(), marker, content.into())
    }

    #[test]
    fn sections_become_markers_and_pieces() {
        let got = ids(
            "Intro {{user}}\n{{#if system}}<s>{{system}}</s>\n{{/if}}{{#if wiBefore}}{{wiBefore}}{{/if}}\
             {{#if description}}D: {{description}}{{trim}}{{/if}}{{#if persona}}{{persona}}{{/if}}\
             {{#if custom}}C{{/if}}{{#if personality}}no placeholder{{/if}} tail",
        );
        assert_eq!(
            got,
            [
                n("legacy_1", false, "Intro {{user}}\n"),
                n("legacy_2", false, "<s>"),
                n("main", false, "SYS"),
                n("legacy_3", false, "</s>\n"),
                n("worldInfoBefore", true, ""),
                n("legacy_4", false, "D: "),
                n("charDescription", true, ""),
                n("legacy_5", false, "C"),
                n("legacy_6", false, "no placeholder"),
                n("legacy_7", false, " tail"),
                n("chatHistory", true, ""),
            ]
        );
    }

    #[test]
    fn placeholders_outside_sections_and_repeats() {
        let got = ids(
            "{{system}} {{wiAfter}}{{#if system}}again {{system}}{{/if}}{{mesExamples}}{{persona}}",
        );
        assert_eq!(
            got,
            [
                n("main", false, "SYS"),
                n("worldInfoAfter", true, ""),
                n("dialogueExamples", true, ""),
                n("legacy_1", false, "{{persona}}"),
                n("chatHistory", true, ""),
            ]
        );
        // A `system` section without its placeholder does not import the sysprompt.
        let got = ids("{{#if system}}plain{{/if}}{{system}}");
        assert_eq!(
            got,
            [n("legacy_1", false, "plain"), n("chatHistory", true, "")]
        );
    }

    #[test]
    fn not_legacy_without_both_fields() {
        let root = json!({"context": {"story_string": "x"}, "sysprompt": {"content": "  "}});
        assert!(super::story(root.as_object().unwrap()).unwrap().is_none());
        let root = json!({"context": {"story_string": 3}, "sysprompt": {"content": "x"}});
        assert!(super::story(root.as_object().unwrap()).is_err());
    }

    #[test]
    fn post_history_fields_dedupe() {
        let root = json!({"post_history": " A ", "sysprompt": {"post_history": "A"},
                          "context": {"post_history": "B"}});
        let mut nodes = vec![];
        post_history(root.as_object().unwrap(), &mut nodes).unwrap();
        let got: Vec<_> = nodes
            .iter()
            .map(|n| {
                (
                    n.identifier.as_str(),
                    n.injection_depth,
                    n.injection_order,
                    n.is_depth(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("legacyPostHistory", 0, 10000, true),
                ("legacyContextPostHistory", 0, 10000, true)
            ]
        );
    }

    #[test]
    fn post_history_identifiers_never_clash() {
        let root = json!({"post_history": "A", "sysprompt": {"post_history": "B"}});
        let mut nodes = vec![
            PresetNode::custom("legacyPostHistory".into(), "mine".into(), true),
            PresetNode::custom("legacyPostHistory_2".into(), "mine too".into(), true),
        ];
        post_history(root.as_object().unwrap(), &mut nodes).unwrap();
        let ids: Vec<_> = nodes.iter().map(|n| n.identifier.as_str()).collect();
        assert_eq!(
            ids,
            [
                "legacyPostHistory",
                "legacyPostHistory_2",
                "legacyPostHistory_3",
                "legacySyspromptPostHistory"
            ]
        );
    }

    #[test]
    fn placeholders_outside_sections_split_in_one_pass() {
        // Near-misses and repeats: `{{{system}}`, `{{systemx}}`, `{{system}` stay text.
        let got = ids("a{{{system}}b{{systemx}}{{system}c{{wiBefore}}{{system}}d");
        assert_eq!(
            got,
            [
                n("legacy_1", false, "a{"),
                n("main", false, "SYS"),
                n("legacy_2", false, "b{{systemx}}{{system}c"),
                n("worldInfoBefore", true, ""),
                n("legacy_3", false, "d"),
                n("chatHistory", true, ""),
            ]
        );
    }
}
