//! The JSON contract of SPEC §9 for what a render returns: the documents `stpreset render`,
//! `expand` and `audit` print with `--format json`, and what the language bindings hand back.
//! They live here, in the library, so every front end prints the same bytes. (Context files
//! are read by [`Context::from_json`](crate::Context::from_json).)

use std::collections::BTreeMap;
use std::io::Write;

use serde::Serialize;

use crate::diagnostic::Diagnostic;
use crate::preset::Preset;
use crate::provider::ProviderOptions;
use crate::render::{Expansion, Rendered};
use crate::settings::PresetSettings;
use crate::settings::resolve::EffectiveOptions;

/// `expand --format json`.
#[derive(Serialize)]
struct ExpansionDoc<'a> {
    diagnostics: &'a [Diagnostic],
    text: &'a str,
    variables: &'a BTreeMap<String, String>,
}

/// `render --shape S --format json` (SPEC §12.6).
#[derive(Serialize)]
struct RequestDoc<'a> {
    diagnostics: &'a [Diagnostic],
    effective: &'a EffectiveOptions,
    globals: &'a BTreeMap<String, String>,
    prompt_tokens: Option<u32>,
    request: &'a serde_json::Value,
    variables: &'a BTreeMap<String, String>,
    /// The World Info state to keep (issue 39: a bot that wants the body and the state
    /// rendered twice); absent without lore, as in the render document.
    #[serde(skip_serializing_if = "Option::is_none")]
    wi_state: Option<serde_json::Value>,
}

/// `audit --format json`.
#[derive(Serialize)]
struct AuditDoc<'a> {
    diagnostics: &'a [Diagnostic],
    enabled: usize,
    nodes: usize,
}

/// Writes one document and a newline. `From` keeps the kind of an I/O failure (a closed pipe
/// stays `BrokenPipe`).
fn write(out: &mut dyn Write, doc: &impl Serialize) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, doc).map_err(std::io::Error::from)?;
    writeln!(out)
}

fn string(doc: &impl Serialize) -> String {
    // Serializing these documents cannot fail: string keys, no maps with other keys.
    serde_json::to_string(doc).unwrap_or_default()
}

/// `{"diagnostics", "effective", "globals", "messages", "prompt_tokens", "variables"}` (keys in
/// byte order, SPEC §16): by hand, because `prompt_tokens` is counted over the messages when it
/// is written.
impl Serialize for Rendered<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut doc = s.serialize_struct("Rendered", 7)?;
        doc.serialize_field("diagnostics", &self.diagnostics)?;
        doc.serialize_field("effective", self.effective_options())?;
        doc.serialize_field("globals", &self.globals)?;
        match &self.st {
            None => doc.serialize_field("messages", &self.messages)?,
            Some(_) => doc.serialize_field("messages", &NamedMessages(self))?,
        }
        doc.serialize_field("prompt_tokens", &self.prompt_tokens())?;
        doc.serialize_field("variables", &self.variables)?;
        if let Some(state) = &self.wi_state {
            doc.serialize_field("wi_state", &sorted(state))?;
        }
        doc.end()
    }
}

/// The SillyTavern layout's messages: each with its `name` when it has one (SPEC §17.1.3),
/// keys in byte order.
struct NamedMessages<'r, 'c>(&'r Rendered<'c>);

impl Serialize for NamedMessages<'_, '_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeSeq};
        let mut seq = s.serialize_seq(Some(self.0.messages.len()))?;
        for (i, m) in self.0.messages.iter().enumerate() {
            struct One<'a, 'b>(
                &'a crate::assemble::Message<'b>,
                Option<&'a str>,
                &'static str,
            );
            impl Serialize for One<'_, '_> {
                fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                    let mut map = s.serialize_map(None)?;
                    if let Some(name) = self.1 {
                        map.serialize_entry("name", name)?;
                    }
                    map.serialize_entry("parts", self.0.parts())?;
                    map.serialize_entry("role", self.2)?;
                    map.serialize_entry("source", &self.0.source)?;
                    map.end()
                }
            }
            let role = self.0.role_spelling(m.role);
            seq.serialize_element(&One(m, self.0.message_name(i), role))?;
        }
        seq.end()
    }
}

/// A render's document without its messages (`{"diagnostics", "effective", "globals",
/// "prompt_tokens", "variables"}`, keys in byte order): what a front end that builds the
/// messages itself (the packages' `Chat` renders) returns beside them, so every front end
/// writes these fields the same way.
///
/// ```
/// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi{{setvar::a::1}}"}]}"#).unwrap();
/// let (compiled, ctx) = (p.compile(), stpreset::Context::default());
/// let (messages, details) = compiled.render(&ctx).into_parts();
/// assert_eq!(messages[0].text(), "Hi");
/// assert!(details.to_json().starts_with(r#"{"diagnostics":[],"effective":{"#));
/// assert!(details.to_json().ends_with(r#""globals":{},"prompt_tokens":null,"variables":{"a":"1"}}"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct RenderDetails {
    /// As [`Rendered::diagnostics`].
    pub diagnostics: Vec<Diagnostic>,
    /// As [`Rendered::effective_options`].
    pub effective: EffectiveOptions,
    /// As [`Rendered::globals`].
    pub globals: BTreeMap<String, String>,
    /// As [`Rendered::prompt_tokens`] (counted before the messages left).
    pub prompt_tokens: Option<u32>,
    /// As [`Rendered::variables`].
    pub variables: BTreeMap<String, String>,
    /// As [`Rendered::wi_state`] (absent without lore), keys in byte order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wi_state: Option<serde_json::Value>,
}

/// A value with its object keys in byte order (serde_json's `Value` map sorts them).
fn sorted(v: &impl Serialize) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or(serde_json::Value::Null)
}

impl RenderDetails {
    /// The JSON object.
    pub fn to_json(&self) -> String {
        string(self)
    }
}

impl<'c> Rendered<'c> {
    /// The messages, and the rest of the document ([`RenderDetails`]).
    pub fn into_parts(self) -> (Vec<crate::assemble::Message<'c>>, RenderDetails) {
        let details = RenderDetails {
            prompt_tokens: self.prompt_tokens(),
            effective: self.effective,
            diagnostics: self.diagnostics,
            globals: self.globals,
            variables: self.variables,
            wi_state: self.wi_state.as_ref().map(sorted),
        };
        (self.messages, details)
    }

    /// The provider request body for `options` (as [`to_request`](Rendered::to_request)) and
    /// the rest of the request document ([`to_request_json`](Rendered::to_request_json)'s
    /// fields but `request`, its diagnostics followed by the request's own): what a front end
    /// that hands the body on as bytes returns beside it (the packages' chat requests).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// let ctx = stpreset::Context::default();
    /// let (body, rest) = p.compile().render(&ctx).into_request(&ctx.provider_options);
    /// assert_eq!(body["messages"][0]["content"], "Hi");
    /// assert!(rest.to_json().starts_with(r#"{"diagnostics":"#));
    /// ```
    pub fn into_request(self, options: &ProviderOptions) -> (serde_json::Value, RenderDetails) {
        let (body, notes) = self.to_request(options);
        let (_, mut rest) = self.into_parts();
        rest.diagnostics.extend(notes);
        (body, rest)
    }
}

impl Rendered<'_> {
    /// `{"messages", "diagnostics", "variables", "globals", "prompt_tokens", "effective"}`
    /// (SPEC §9, §12.6, §14.3).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// let json = p.compile().render(&stpreset::Context::default()).to_json();
    /// assert!(json.contains(r#""messages":[{"parts":["Hi"],"role":"system","source":{"node":"main"}}]"#));
    /// ```
    pub fn to_json(&self) -> String {
        string(self)
    }

    /// [`Rendered::to_json`] and a newline, written to `out` as it is produced.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write(out, self)
    }
}

impl Rendered<'_> {
    /// The provider request document of SPEC §12.6: `{"request", "diagnostics" (the render's,
    /// then the request's), "prompt_tokens", "effective", "variables", "globals"}`, and
    /// `"wi_state"` when the render had lore (what the next turn needs, from the same render).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "Hi"}]}"#).unwrap();
    /// let mut options = stpreset::ProviderOptions::default();
    /// options.shape = Some(stpreset::Shape::Google);
    /// let json = p.compile().render(&stpreset::Context::default()).to_request_json(&options);
    /// assert!(json.contains(r#""request":{"contents":[{"parts":[{"text":"Hi"}],"role":"user"}]}"#));
    /// ```
    pub fn to_request_json(&self, options: &ProviderOptions) -> String {
        self.request_doc(options, |doc| string(doc))
    }

    /// [`Rendered::to_request_json`] and a newline, written to `out`.
    pub fn write_request_json(
        &self,
        options: &ProviderOptions,
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        self.request_doc(options, |doc| write(out, doc))
    }

    fn request_doc<R>(&self, options: &ProviderOptions, f: impl FnOnce(&RequestDoc<'_>) -> R) -> R {
        let (request, request_diagnostics) = self.to_request(options);
        let mut diagnostics = self.diagnostics.clone();
        diagnostics.extend(request_diagnostics);
        f(&RequestDoc {
            request: &request,
            diagnostics: &diagnostics,
            prompt_tokens: self.prompt_tokens(),
            effective: self.effective_options(),
            variables: &self.variables,
            globals: &self.globals,
            wi_state: self.wi_state.as_ref().map(sorted),
        })
    }
}

impl PresetSettings {
    /// The present settings as one JSON object, keys sorted (what `preset.settings` is in the
    /// Node and Python packages).
    ///
    /// ```
    /// let (s, _) = stpreset::settings::PresetSettings::from_json(&serde_json::json!({"seed": " 7 ", "wi_format": "{0}"}));
    /// assert_eq!(s.to_json(), r#"{"seed":7,"wi_format":"{0}"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        string(self)
    }
}

impl Expansion {
    /// `{"text", "diagnostics", "variables"}` (SPEC §9).
    ///
    /// ```
    /// let e = stpreset::expand("{{setvar::k::v}}{{getvar::k}}", &stpreset::Context::default());
    /// assert_eq!(e.to_json(), r#"{"diagnostics":[],"text":"v","variables":{"k":"v"}}"#);
    /// ```
    pub fn to_json(&self) -> String {
        string(&self.doc())
    }

    /// [`Expansion::to_json`] and a newline, written to `out` as it is produced.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write(out, &self.doc())
    }

    fn doc(&self) -> ExpansionDoc<'_> {
        ExpansionDoc {
            text: &self.text,
            diagnostics: &self.diagnostics,
            variables: &self.variables,
        }
    }
}

impl Preset {
    /// `{"nodes", "enabled", "diagnostics"}`: the node counts and [`Preset::audit`].
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "{{x}}"}]}"#).unwrap();
    /// assert!(p.audit_json().starts_with(r#"{"diagnostics":[{"column":1,"kind":"UnknownMacro""#));
    /// assert!(p.audit_json().ends_with(r#"],"enabled":1,"nodes":1}"#));
    /// ```
    pub fn audit_json(&self) -> String {
        let diagnostics = self.audit();
        string(&self.audit_doc(&diagnostics))
    }

    /// The audit document for diagnostics already computed (`diagnostics` = [`Preset::audit`]).
    pub fn write_audit_json(
        &self,
        diagnostics: &[Diagnostic],
        out: &mut dyn Write,
    ) -> std::io::Result<()> {
        write(out, &self.audit_doc(diagnostics))
    }

    /// The nodes in walk order, as a prompt manager lists them: `[{"enabled", "identifier",
    /// "injection": null or {"depth", "order"}, "marker", "name", "role"}]` (what
    /// `preset.nodes()` is in the Node and Python packages).
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "name": "Main", "content": "Hi"},
    ///     {"identifier": "jb", "content": "x", "injection_position": 1, "injection_depth": 2}]}"#).unwrap();
    /// assert_eq!(p.nodes_json(), concat!(
    ///     r#"[{"enabled":true,"identifier":"main","injection":null,"marker":false,"name":"Main","role":"system"},"#,
    ///     r#"{"enabled":true,"identifier":"jb","injection":{"depth":2,"order":100},"marker":false,"name":"jb","role":"system"}]"#));
    /// ```
    pub fn nodes_json(&self) -> String {
        #[derive(Serialize)]
        struct Injection {
            depth: i32,
            order: i32,
        }
        #[derive(Serialize)]
        struct Node<'a> {
            enabled: bool,
            identifier: &'a str,
            injection: Option<Injection>,
            marker: bool,
            name: &'a str,
            role: &'a str,
        }
        let nodes: Vec<Node<'_>> = self
            .nodes()
            .iter()
            .map(|n| Node {
                enabled: n.enabled,
                identifier: &n.identifier,
                injection: n.is_depth().then_some(Injection {
                    depth: n.injection_depth,
                    order: n.injection_order,
                }),
                marker: n.marker,
                name: &n.name,
                role: &n.role,
            })
            .collect();
        string(&nodes)
    }

    fn audit_doc<'a>(&self, diagnostics: &'a [Diagnostic]) -> AuditDoc<'a> {
        AuditDoc {
            nodes: self.nodes().len(),
            enabled: self.nodes().iter().filter(|n| n.enabled).count(),
            diagnostics,
        }
    }
}

/// The JSON shape of a regex pass (SPEC §13.7), keys in byte order.
#[derive(Serialize)]
struct RegexedDoc<'a> {
    diagnostics: &'a [Diagnostic],
    text: &'a str,
}

impl crate::passes::Regexed {
    /// `{"diagnostics", "text"}` (SPEC §13.7), what `stpreset regex --format json` prints.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}],
    ///     "extensions": {"regex_scripts": [{"findRegex": "a", "replaceString": "b", "placement": [2]}]}}"#).unwrap();
    /// let mut ctx = stpreset::Context::default();
    /// ctx.allow_preset_regex = true;
    /// let out = p.compile().store_message("cat", stpreset::Role::Model, &ctx);
    /// assert_eq!(out.to_json(), r#"{"diagnostics":[],"text":"cbt"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        string(&self.doc())
    }

    /// [`Regexed::to_json`](crate::Regexed::to_json) and a newline, written to `out`.
    pub fn write_json(&self, out: &mut dyn Write) -> std::io::Result<()> {
        write(out, &self.doc())
    }

    fn doc(&self) -> RegexedDoc<'_> {
        RegexedDoc {
            diagnostics: &self.diagnostics,
            text: &self.text,
        }
    }
}

/// `{"diagnostics", "item": {"name", "role", "tag", "text"}, "swipes"}`.
#[derive(Serialize)]
struct FirstMessageDoc<'a> {
    diagnostics: &'a [Diagnostic],
    item: FirstItemDoc<'a>,
    swipes: &'a [String],
}

#[derive(Serialize)]
struct FirstItemDoc<'a> {
    name: Option<&'a str>,
    role: crate::role::Role,
    tag: Option<crate::context::Tag>,
    text: &'a str,
}

impl crate::greeting::FirstMessage {
    /// `{"diagnostics", "item", "swipes"}`: `item` as a context file's item (push it into the
    /// chat), what the packages' `firstMessage` / `first_message` return.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "main", "content": "x"}]}"#)
    ///     .unwrap().compile();
    /// let ctx = stpreset::Context::from_json(br#"{"char": "Sera", "first_mes": "Hi."}"#).unwrap();
    /// let json = p.first_message(&ctx).unwrap().to_json();
    /// assert!(json.contains(r#""item":{"name":"Sera","role":"model","tag":"DIALOGUE_HISTORY","text":"Hi."}"#));
    /// ```
    pub fn to_json(&self) -> String {
        string(&FirstMessageDoc {
            diagnostics: &self.diagnostics,
            item: FirstItemDoc {
                name: self.item.name.as_deref(),
                role: self.item.role,
                tag: self.item.tag,
                text: &self.item.text,
            },
            swipes: &self.swipes,
        })
    }
}
