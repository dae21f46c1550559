//! SillyTavern 1.18 scoped macros and scoped comments (SPEC §11.3, §11.4, §11.13) through the
//! public API: pairing, the one frame stack, recovery, content evaluation and T.

use DiagnosticKind::*;
use stpreset::{Context, DiagnosticKind, Limits, Template, expand};

fn ctx() -> Context {
    let json = r#"{"user": "Alice", "char": "Tomori", "description": "Shrine maiden.",
        "now": "2026-11-29T17:07:00Z", "utc_offset_minutes": 0, "time_awareness": true,
        "capabilities": {"web_search": true}, "tools": ["web_search"]}"#;
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

#[test]
fn content_is_the_last_argument() {
    assert_eq!(
        run("{{setvar::k}}a :: b{{/setvar}}[{{getvar::k}}]"),
        "[a :: b]"
    );
    assert_eq!(run("{{reverse}}abc{{/reverse}}"), "cba");
    assert_eq!(run("{{getvar}} k {{/getvar}}{{setvar::k::v}}"), "v");
    assert_eq!(run("{{hasvar}}k{{/hasvar}}"), "false");
    assert_eq!(run("{{time}}UTC+2{{/time}}"), "7:07 PM");
    assert_eq!(
        run("{{newline}}3{{/newline}}|{{space}}2{{/space}}|"),
        "\n\n\n|  |"
    );
    assert_eq!(run("{{incvar}}n{{/incvar}}{{incvar}}n{{/incvar}}"), "12");
    // Aliases close only their own name; names pair ignoring ASCII case.
    assert_eq!(
        run("{{varexists}}k{{/hasvar}}"),
        "{{varexists}}k{{/hasvar}}"
    );
    assert_eq!(run("{{REVERSE}}ab{{/reverse}}"), "ba");
}

#[test]
fn only_eligible_openers_pair() {
    // A macro that takes no argument, one given its full count, list macros and unknown
    // names never pair; their closers stay literal.
    assert_eq!(run("{{user}}a{{/user}}"), "Alicea{{/user}}");
    assert_eq!(
        run("{{setvar::k::v}}x{{/setvar}}[{{getvar::k}}]"),
        "x{{/setvar}}[v]"
    );
    assert_eq!(run("{{reverse::ab}}x{{/reverse}}"), "bax{{/reverse}}");
    assert_eq!(run("{{pick}}a{{/pick}}"), "a{{/pick}}");
    assert_eq!(run("{{foo}}a{{/foo}}"), "{{foo}}a{{/foo}}");
    assert_eq!(kinds("{{user}}a{{/user}}"), [StrayCloser]);
    assert_eq!(kinds("{{foo}}a{{/foo}}"), [UnknownMacro, UnknownMacro]);
}

#[test]
fn unpaired_openers_are_inline_tags() {
    assert_eq!(run("{{setvar::k}}x"), "{{setvar::k}}x");
    assert_eq!(kinds("{{setvar::k}}x"), [BadArguments]);
    assert_eq!(run("{{reverse}}x"), "{{reverse}}x");
    assert_eq!(run("  {{trim}} x  "), "x");
    assert!(!run("{{time}}").is_empty());
}

#[test]
fn stray_closers_stay_literal() {
    assert_eq!(
        run("a{{/reverse::x}}b{{/foo}}c"),
        "a{{/reverse::x}}b{{/foo}}c"
    );
    assert_eq!(kinds("a{{/reverse::x}}"), [StrayCloser]);
    assert_eq!(kinds("b{{/foo}}"), [UnknownMacro]);
    // Nested tags in a closer with arguments are evaluated.
    assert_eq!(run("{{/setvar {{user}}}}"), "{{/setvar Alice}}");
    // A second closer finds its frame closed.
    assert_eq!(
        run("{{setvar::k}}v{{/setvar}}{{/setvar}}[{{getvar::k}}]"),
        "{{/setvar}}[v]"
    );
    // A closer with arguments never pairs, even with a matching opener before it.
    assert_eq!(
        run("{{reverse}}ab{{/reverse::x}}"),
        "{{reverse}}ab{{/reverse::x}}"
    );
    // `{{/if}}` and `{{/unless}}` keep the block rules: a stray one is dropped.
    assert_eq!(run("a{{/if}}b"), "ab");
}

#[test]
fn parse_diagnostics_are_reported_in_untaken_branches_too() {
    let t = "{{if 0}}{{/setvar}}{{/foo}}{{/if}}";
    assert_eq!(run(t), "");
    // StrayCloser is a parse diagnostic; UnknownMacro is reported only where evaluated.
    assert_eq!(kinds(t), [StrayCloser]);
}

#[test]
fn crossing_and_dissolving() {
    // A closer crossing a block is stray, and its frame dissolves at the end of the level.
    assert_eq!(
        run("{{setvar::k}}a{{#if description}}b{{/setvar}}c{{/if}}[{{getvar::k}}]"),
        "{{setvar::k}}ab{{/setvar}}c[]"
    );
    // An outer closer dissolves the scoped frames above it.
    assert_eq!(
        run("{{setvar::a}}X{{reverse}}Y{{/setvar}}Z{{/reverse}}[{{getvar::a}}]"),
        "Z{{/reverse}}[X{{reverse}}Y]"
    );
    // `{{else}}` and block closers dissolve the scoped frames above their block.
    assert_eq!(
        run("{{#if description}}{{setvar::k}}a{{else}}b{{/setvar}}{{/if}}[{{getvar::k}}]"),
        "{{setvar::k}}a[]"
    );
    assert_eq!(
        run("{{#if description}}{{reverse}}ab{{/if}}{{/reverse}}"),
        "{{reverse}}ab{{/reverse}}"
    );
    // Blocks inside a pair close normally.
    assert_eq!(run("{{reverse}}{{if 1}}ab{{/if}}c{{/reverse}}"), "cba");
}

#[test]
fn pairs_are_per_level() {
    // Inside an argument, a pair pairs within that argument only.
    assert_eq!(
        run("{{setvar::t::{{reverse}}ab{{/reverse}}-x}}[{{getvar::t}}]"),
        "[ba-x]"
    );
    assert_eq!(
        run("{{setvar::t::{{reverse}}ab}}{{/reverse}}[{{getvar::t}}]"),
        "{{/reverse}}[{{reverse}}ab]"
    );
    // An unparsable tag's inside belongs to the enclosing level.
    assert_eq!(run("{{ {{reverse}}ab{{/reverse}} !}}"), "{{ ba !}}");
}

#[test]
fn auto_trim_and_the_hash_flag() {
    assert_eq!(
        run("{{setvar::k}}\n  # Title\n    - a\n  Body\n{{/setvar}}{{getvar::k}}"),
        "# Title\n  - a\nBody"
    );
    assert_eq!(run("{{#reverse}} ab {{/reverse}}"), " ba ");
    assert_eq!(run("{{reverse}} ab {{/reverse}}"), "ba");
    assert_eq!(run("{{#trim}} a {{/trim}}|{{trim}} a {{/trim}}"), " a |a");
    // Lines that held only declarations are blank when T runs.
    assert_eq!(
        run("{{reverse}}\n{{setvar::x::1}}\n  ab\n{{/reverse}}"),
        "ba"
    );
    // Keys and counts are still trimmed by their macro under `#`.
    assert_eq!(run("{{#getvar}} k {{/getvar}}{{setvar::k::v}}"), "v");
    // `#` elsewhere has no effect and no diagnostic.
    assert_eq!(run("{{#user}}"), "Alice");
    assert!(kinds("{{#user}}").is_empty());
}

#[test]
fn scoped_trim_never_marks_the_node() {
    assert_eq!(run("  {{trim}}  hi  {{/trim}}  "), "  hi  ");
    assert_eq!(run("{{trim:: x }}|"), "x|");
    assert!(Template::compile("{{// a}}{{trim}}\n").is_comment_only());
    assert!(!Template::compile("{{// a}}{{trim}}x{{/trim}}").is_comment_only());
    assert!(!Template::compile("{{// a}}{{trim}}{{/trim}}").is_comment_only());
}

#[test]
fn declarations_run_in_pass_one_at_the_opener() {
    // A scoped declaration's content is expanded against the variables so far.
    assert_eq!(
        run("{{setvar::a}}[{{getvar::b}}]{{/setvar}}{{setvar::b::1}}{{getvar::a}}"),
        "[]"
    );
    // Other scoped macros read the final map in pass 2.
    assert_eq!(
        run("{{reverse}}{{getvar::b}}{{/reverse}}{{setvar::b::xy}}"),
        "yx"
    );
    // Declarations inside a non-declaration's content run in pass 1, in order.
    assert_eq!(
        run("{{reverse}}{{setvar::n::ab}}{{/reverse}}{{getvar::n}}"),
        "ab"
    );
    // Blocks inside a declaration's content are decided then; TomoriBot by the host.
    assert_eq!(
        run("{{setvar::k}}{{if tool:web_search}}on{{else}}off{{/if}}{{/setvar}}{{getvar::k}}"),
        "on"
    );
    // Stored text keeps single-brace placeholders (SPEC §11.13.12).
    assert_eq!(
        run("{{setvar::k}}Hi {user}{{/setvar}}{{getvar::k}}"),
        "Hi {user}"
    );
}

#[test]
fn a_pair_whose_macro_rejects_its_arguments_renders_as_written() {
    assert_eq!(
        run("{{setvar::}} v {{/setvar}}"),
        "{{setvar::}} v {{/setvar}}"
    );
    assert_eq!(kinds("{{setvar::}} v {{/setvar}}"), [BadArguments]);
    assert_eq!(run("{{time}}UTC+99{{/time}}"), "{{time}}UTC+99{{/time}}");
    assert_eq!(
        run("{{newline}} x {{/newline}}"),
        "{{newline}} x {{/newline}}"
    );
    assert_eq!(kinds("{{newline}} x {{/newline}}"), [BadArguments]);
    // A declaration refused for its empty key leaves its content ordinary body text: reads
    // see the final map and placeholders apply.
    assert_eq!(
        run("{{setvar::}}[{{getvar::x}} {user}]{{/setvar}}{{setvar::x::1}}{{setvar::x::2}}"),
        "{{setvar::}}[2 Alice]{{/setvar}}"
    );
    assert_eq!(
        kinds("{{setvar::}}{{/setvar}}{{#if description}}x{{/if}}"),
        [BadArguments]
    );
    // Its content's declarations still run, also inside a condition.
    assert_eq!(
        run("{{if {{setvar::}}{{incvar::n}}{{/setvar}}}}T{{else}}F{{/if}}{{getvar::n}}"),
        "F1"
    );
    assert_eq!(
        run("{{getvar}}{{setvar::n::1}}{{/getvar}}[{{getvar::n}}]"),
        "{{getvar}}{{/getvar}}[1]"
    );
    // Empty arguments: `space`/`newline` render empty, `time` the local time.
    assert_eq!(
        run("[{{space}}{{/space}}][{{newline}} {{/newline}}]"),
        "[][]"
    );
    assert_eq!(run("{{time}}{{/time}}"), "5:07 PM");
}

#[test]
fn scoped_frames_count_toward_block_depth() {
    let open = "{{#if description}}".repeat(32);
    let close = "{{/if}}".repeat(32);
    let t = format!("{open}{{{{setvar::k}}}}v{{{{/setvar}}}}{close}[{{{{getvar::k}}}}]");
    assert_eq!(run(&t), "{{setvar::k}}v{{/setvar}}[]");
    assert_eq!(kinds(&t), [NestingLimit]);
    // An opener inside a literal region is literal; its closer outside finds no frame.
    let open = "{{#if description}}".repeat(33);
    let close = "{{/if}}".repeat(33);
    let t = format!("{{{{reverse}}}}{open}{{{{setvar::k}}}}{close}{{{{/setvar}}}}x");
    let out = expand(&t, &ctx());
    assert!(
        out.text.ends_with("{{setvar::k}}{{/if}}{{/setvar}}x"),
        "{}",
        out.text
    );
    let kinds: Vec<_> = out.diagnostics.iter().map(|d| d.kind).collect();
    assert!(kinds.contains(&StrayCloser), "{kinds:?}");
    // Unpaired eligible openers are not frames.
    let t = format!("{}x", "{{#if description}}{{newline}}".repeat(32));
    assert_eq!(run(&t), format!("{}x", "\n".repeat(32)));
}

#[test]
fn scoped_comments_remove_outermost_pairs() {
    assert_eq!(run("a{{//}}b{{//}}c{{///}}d{{///}}e"), "ae");
    // An unmatched opener is an empty comment; a pair after it is still removed.
    assert_eq!(run("a{{//}}b{{//}}c{{///}}d"), "abd");
    assert_eq!(run("a{{///}}b"), "ab");
    // Comments are removed before scoped pairing.
    assert_eq!(
        run("{{reverse}}ab{{//}}{{/reverse}}{{///}}cd{{/reverse}}"),
        "dcba"
    );
    assert!(kinds("{{//}}{{/foo}}{{setvar::}}{{///}}").is_empty());
}

#[test]
fn flags_on_scoped_openers() {
    assert_eq!(run("{{!reverse}}ab{{/reverse}}"), "ba");
    assert_eq!(kinds("{{!reverse}}ab{{/reverse}}"), [IgnoredFlag]);
    assert_eq!(run("{{# ! reverse}} ab {{/reverse}}"), " ba ");
}

#[test]
fn scoped_pairs_inside_conditions_and_inline_if() {
    assert_eq!(run("{{if {{reverse}}0{{/reverse}}}}T{{else}}F{{/if}}"), "F");
    // THEN's top-level `{{else}}` splits it; a pair cannot cross it.
    assert_eq!(
        run("{{if::1::{{reverse}}ab{{else}}c{{/reverse}}}}"),
        "{{reverse}}ab"
    );
    assert_eq!(run("{{if::1::{{reverse}}ab{{/reverse}}}}"), "ba");
}

#[test]
fn deep_nesting_and_limits_are_respected() {
    let l = Limits::default();
    // Same-name pairs nested past the block depth stay literal one level at a time.
    let n = l.block_nesting + 3;
    let t = format!("{}x{}", "{{reverse}}".repeat(n), "{{/reverse}}".repeat(n));
    let out = expand(&t, &ctx());
    assert!(out.text.contains('x'));
    let limits = out
        .diagnostics
        .iter()
        .filter(|d| d.kind == NestingLimit)
        .count();
    assert_eq!(limits, 3);
}

// Regressions from a hostile review: inputs that once gave wrong bytes or diagnostics.

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
