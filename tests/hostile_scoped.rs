//! Regressions from a hostile review of scoped macros and scoped comments (SPEC §11.3, §11.4,
//! §11.13): inputs a preset author can write that once gave wrong bytes or wrong diagnostics.

use DiagnosticKind::*;
use stpreset::{Context, DiagnosticKind, expand};

fn ctx() -> Context {
    let json = r#"{"user": "Alice", "char": "Tomori", "description": "Shrine maiden.",
        "now": "2026-11-29T17:07:00Z", "utc_offset_minutes": 0, "time_awareness": true}"#;
    Context::from_json(json.as_bytes()).expect("test context")
}

fn run(t: &str) -> String {
    expand(t, &ctx()).text
}

fn kinds(t: &str) -> Vec<DiagnosticKind> {
    expand(t, &ctx())
        .diagnostics
        .iter()
        .map(|d| d.kind)
        .collect()
}

/// SPEC §11.3 step 1, §11.13.9: THEN of an inline `{{if}}` is a level; its scoped comments are
/// removed before anything else looks at it, so an `{{else}}` (or a block tag) inside a comment
/// pair never splits THEN, and a pair never breaks at an `{{else}}` it encloses.
#[test]
fn inline_if_else_split_ignores_scoped_comments() {
    assert_eq!(run("{{if::1::a{{//}}{{else}}{{///}}b}}"), "ab");
    assert_eq!(run("{{if::0::a{{//}}{{else}}{{///}}b}}"), "");
    assert_eq!(run("{{if::1::a{{//}}b{{else}}c{{///}}d}}"), "ad");
    assert!(kinds("{{if::1::a{{//}}b{{else}}c{{///}}d}}").is_empty());
    // A second `{{else}}` inside a comment is no second `{{else}}`.
    assert_eq!(run("{{if::1::a{{else}}b{{//}}{{else}}{{///}}}}"), "a");
    assert_eq!(run("{{if::0::a{{else}}b{{//}}{{else}}{{///}}}}"), "b");
    assert!(kinds("{{if::1::a{{else}}b{{//}}{{else}}{{///}}}}").is_empty());
    // A commented-out opener does not hide the top-level `{{else}}`.
    assert_eq!(run("{{if::1::{{//}}{{#if x}}{{///}}a{{else}}b}}"), "a");
    assert_eq!(run("{{if::0::{{//}}{{#if x}}{{///}}a{{else}}b}}"), "b");
    assert!(kinds("{{if::1::{{//}}{{#if x}}{{///}}a{{else}}b}}").is_empty());
    // Unmatched marks are plain comments and change nothing.
    assert_eq!(run("{{if::1::a{{///}}{{else}}b{{//}}}}"), "a");
    assert_eq!(run("{{if::0::a{{///}}{{else}}b{{//}}}}"), "b");
}

/// SPEC §11.13.3: a structural diagnostic is reported once per tag. A `{{if}}` condition that
/// starts like a shorthand but is not one (`.x y`) is literal text; its tags were built twice
/// (once as a failed shorthand, once as the text), so every diagnostic inside came twice and
/// scoped pairs inside were closed twice.
#[test]
fn a_failed_shorthand_condition_reports_once() {
    assert_eq!(kinds("{{if .x y {{/reverse}}}}A{{/if}}"), [StrayCloser]);
    assert_eq!(
        kinds("{{if .x y {{#if}}{{/if}}}}A{{/if}}"),
        [MalformedBlock]
    );
    assert_eq!(run("{{if .x y {{/reverse}}}}A{{/if}}"), "A");
    assert!(kinds("{{if .x y {{reverse}}ab{{/reverse}}}}A{{/if}}").is_empty());
    assert_eq!(run("{{if .x y {{reverse}}ab{{/reverse}}}}A{{/if}}"), "A");
    assert_eq!(run("{{if ! .x y}}A{{else}}B{{/if}}"), "B");
    // A whole shorthand still is one.
    assert_eq!(run("{{.x = 1}}{{if .x == 1}}A{{else}}B{{/if}}"), "A");
    assert_eq!(run("{{if .x ?? {{reverse}}ab{{/reverse}}}}A{{/if}}"), "A");
}

/// SPEC §1.2, §11.13.3: tags inside a malformed condition belong to the omitted block; their
/// structural diagnostics are still reported, once each, whatever made the condition malformed.
#[test]
fn malformed_conditions_still_report_their_tags_once() {
    assert_eq!(
        kinds("{{#if a b {{/reverse}}}}x{{/if}}"),
        [MalformedBlock, StrayCloser]
    );
    assert_eq!(
        kinds("{{#if .a b {{/reverse}}}}x{{/if}}"),
        [MalformedBlock, StrayCloser]
    );
    assert_eq!(
        kinds("{{#if a {{#if}}{{/if}}}}x{{/if}}"),
        [MalformedBlock, MalformedBlock]
    );
    assert_eq!(
        kinds("{{if tool:x y {{/reverse}}}}x{{/if}}"),
        [MalformedBlock, StrayCloser]
    );
    assert_eq!(
        kinds("{{if::tool:x {{/reverse}}::x}}"),
        [MalformedBlock, StrayCloser]
    );
    assert_eq!(run("{{#if a b {{/reverse}}}}x{{/if}}y"), "y");
}
