//! What a preset's author says about its nodes to the people who switch them (issue 41):
//! sections from header nodes' names, and directives in `{{// … }}` comments, read as the
//! NemoPresetExt extension (4.7.0) reads them, so a bot can build a menu per section and an
//! admin sees the author's tooltips and exclusive groups. Reading only: no node's text or
//! switch changes here.
//!
//! - A **main header** is a node whose name starts with `=`s, `⭐` and `─`s, or `━`s; its title
//!   is the rest without that run repeated at the end (and, unlike the extension, without a
//!   longer or shorter run of the same character there: `━━━ X ━━━━` is `X`, not `X ━`). A
//!   **sub-header**'s name is `<TITLE>`; it nests under the latest main header. Nodes before
//!   the first header are at the top level. Sections are told apart by their header node's
//!   identifier, never by title (two headers may share one).
//! - A **directive** is a `{{// @NAME VALUE}}` block on one line (the extension's
//!   `/\{\{\/\/(.*?)\}\}/g`: a block over several lines is not one, and the first `}}` ends it,
//!   so `{{user}}` inside a tooltip cuts it there). Names are case-sensitive; lists split on
//!   `,` and add up; the last scalar wins; names the extension does not act on are read where
//!   listed below and otherwise ignored. Without `@tooltip`, a plain `{{// text}}` that opens
//!   the content is the tooltip.

use serde::Serialize;

use super::PresetNode;
use crate::diagnostic::{Diagnostic, DiagnosticKind, excerpt};
use crate::span::Span;
use crate::syntax::LineIndex;

/// The directives of one node that say how to show it and what it may be switched on with.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Directives {
    /// `@tooltip TEXT` (else a plain comment opening the content).
    pub tooltip: Option<String>,
    /// `@badge TEXT`.
    pub badge: Option<String>,
    /// `@color VALUE`.
    pub color: Option<String>,
    /// `@highlight`.
    pub highlight: bool,
    /// `@category A, B` (read by the extension, not acted on).
    pub categories: Vec<String>,
    /// `@mutual-exclusive-group NAME` (alias `@exclusive-with-category`): at most one member
    /// on at a time.
    pub exclusive_group: Option<String>,
    /// `@exclusive-with REFS`: never on together with these (both ways).
    pub exclusive_with: Vec<String>,
    /// `@exclusive-with-message TEXT`.
    pub exclusive_message: Option<String>,
    /// `@requires REFS`: these must be on too.
    pub requires: Vec<String>,
    /// `@requires-message TEXT`.
    pub requires_message: Option<String>,
    /// `@auto-enable-dependencies`: switching this on may switch its requirements on.
    pub auto_enable_dependencies: bool,
    /// `@conflicts-with REFS`: a warning when on together.
    pub conflicts_with: Vec<String>,
    /// `@conflicts-message TEXT`.
    pub conflicts_message: Option<String>,
    /// `@max-one-per-category CATEGORY`.
    pub max_one_per_category: Option<String>,
    /// `@auto-disable IDS`: switched off when this is switched on.
    pub auto_disable: Vec<String>,
    /// `@deprecated TEXT`.
    pub deprecated: Option<String>,
    /// Where the block naming `exclusive_group` starts (the audit points there).
    #[serde(skip)]
    exclusive_group_at: usize,
}

impl Directives {
    /// The directives of a node's content.
    ///
    /// ```
    /// let d = stpreset::outline::Directives::read(
    ///     "{{// A calm narrator.}}\n{{// @badge Style}}{{// @mutual-exclusive-group style}}Text");
    /// assert_eq!(d.tooltip.as_deref(), Some("A calm narrator."));
    /// assert_eq!((d.badge.as_deref(), d.exclusive_group.as_deref()), (Some("Style"), Some("style")));
    /// ```
    pub fn read(content: &str) -> Directives {
        let mut d = Directives::default();
        let mut plain_first = None;
        for (at, block) in blocks(content) {
            let line = block.trim();
            if !line.starts_with('@') {
                if at == 0 {
                    plain_first = Some(line.to_string());
                }
                continue;
            }
            let (name, value) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
            let value = value.trim();
            match name {
                "@highlight" => d.highlight = true,
                "@auto-enable-dependencies" => d.auto_enable_dependencies = true,
                // Every other directive needs a value.
                _ if value.is_empty() => {}
                _ => {
                    let text = Some(value.to_string());
                    let list = value.split(',').map(|v| v.trim().to_string());
                    match name {
                        "@tooltip" => d.tooltip = text,
                        "@badge" => d.badge = text,
                        "@color" => d.color = text,
                        "@category" => d.categories.extend(list),
                        "@mutual-exclusive-group" | "@exclusive-with-category" => {
                            d.exclusive_group = text;
                            d.exclusive_group_at = at;
                        }
                        "@exclusive-with" => d.exclusive_with.extend(list),
                        "@exclusive-with-message" => d.exclusive_message = text,
                        "@requires" => d.requires.extend(list),
                        "@requires-message" => d.requires_message = text,
                        "@conflicts-with" => d.conflicts_with.extend(list),
                        "@conflicts-message" => d.conflicts_message = text,
                        "@max-one-per-category" => d.max_one_per_category = text,
                        "@auto-disable" => d.auto_disable.extend(list),
                        "@deprecated" => d.deprecated = text,
                        _ => {}
                    }
                }
            }
        }
        if d.tooltip.is_none() {
            d.tooltip = plain_first.filter(|t| !t.is_empty());
        }
        d
    }
}

/// Each `{{//…}}` block on one line, with its offset: the extension's lazy
/// `/\{\{\/\/(.*?)\}\}/g` (`.` stops at a line break, the first `}}` ends the block).
/// Linear: each step scans only to the first `}}` or line break, and a block without an end
/// on its line means no later block on that line has one (the regex's retries one character
/// on would scan the rest of the line again for each `{{//` in it).
fn blocks(content: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut from = 0;
    std::iter::from_fn(move || {
        loop {
            let at = from + content.get(from..)?.find("{{//")?;
            let body = &content[at + 4..];
            let stop = body.char_indices().find(|&(i, c)| {
                matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
                    || (c == '}' && body[i + 1..].starts_with('}'))
            });
            match stop {
                Some((end, '}')) => {
                    from = at + 4 + end + 2;
                    return Some((at, &body[..end]));
                }
                Some((end, _)) => from = at + 4 + end,
                None => return None,
            }
        }
    })
}

/// A header node: its level and title.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Header<'n> {
    Main(&'n str),
    Sub(&'n str),
}

/// Reads a node's name as a header (the extension's `getDividerInfo`).
fn header(name: &str) -> Option<Header<'_>> {
    let run = |c: char| name.len() - name.trim_start_matches(c).len();
    let prefix = match name.chars().next()? {
        '=' => run('='),
        '━' => run('━'),
        '⭐' => {
            let rest = &name['⭐'.len_utf8()..];
            let dashes = rest.len() - rest.trim_start_matches('─').len();
            if dashes == 0 {
                return None;
            }
            '⭐'.len_utf8() + dashes
        }
        '<' if name.ends_with('>') && name.len() > 2 => {
            let title = name[1..name.len() - 1].trim();
            return (!title.is_empty()).then_some(Header::Sub(title));
        }
        _ => return None,
    };
    let title = &name[prefix..];
    // The run again at the end, whatever its length (the extension strips only the same
    // string, which leaves `X ━` of `━━━ X ━━━━`).
    let last = name[..prefix].chars().last()?;
    let title = match last {
        '─' => title.trim_end_matches(|c: char| c == '─' || c == '⭐' || c.is_whitespace()),
        _ => title.trim_end_matches(last),
    };
    Some(Header::Main(title.trim()))
}

/// One node as a menu shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct OutlineNode {
    /// The node's identifier.
    pub identifier: String,
    /// Its display name.
    pub name: String,
    /// Whether it is on now.
    pub enabled: bool,
    /// The titles of the headers above it, main then sub (empty at the top level).
    pub section: Vec<String>,
    /// `"main"` or `"sub"` for a header node.
    pub header: Option<&'static str>,
    /// What to show on hover (the directives' tooltip).
    pub tooltip: Option<String>,
    /// Its badge, when it has one (the extension keeps one: the last `@badge`).
    pub badges: Vec<String>,
    /// The exclusive groups it belongs to.
    pub groups: Vec<String>,
    /// Everything its directives say.
    pub directives: Directives,
}

/// An exclusive group: at most one of its members should be on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExclusiveGroup {
    /// The name the members give.
    pub name: String,
    /// Identifiers, in display order.
    pub members: Vec<String>,
}

/// A header and what is under it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Section {
    /// The header's title.
    pub title: String,
    /// The header node: sections are told apart by it, not by title.
    pub identifier: String,
    /// The nodes directly under it (headers excluded), in display order.
    pub nodes: Vec<String>,
    /// Sub-sections (a main header's).
    pub sections: Vec<Section>,
    /// Nodes on, under it and its sub-sections.
    pub enabled: usize,
    /// Nodes in all, under it and its sub-sections.
    pub total: usize,
}

/// A preset's nodes as its author arranged them ([`Preset::outline`](crate::Preset::outline)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Outline {
    /// Every node, in display order.
    pub nodes: Vec<OutlineNode>,
    /// Exclusive groups, by first appearance.
    pub groups: Vec<ExclusiveGroup>,
    /// The sections, in order (nodes before the first header are at the top level only).
    pub sections: Vec<Section>,
}

impl Outline {
    pub(crate) fn of(nodes: &[PresetNode]) -> Outline {
        let mut out = Outline {
            nodes: Vec::with_capacity(nodes.len()),
            groups: Vec::new(),
            sections: Vec::new(),
        };
        // Each group's place in `out.groups`: a preset may name thousands of groups.
        let mut group_at: std::collections::HashMap<String, usize> = Default::default();
        for n in nodes {
            let directives = Directives::read(&n.content);
            let head = header(&n.name);
            let mut section: Vec<String> = Vec::new();
            match head {
                Some(Header::Main(title)) => out.sections.push(Section::new(title, n)),
                Some(Header::Sub(title)) => match out.sections.last_mut() {
                    Some(main) => {
                        section.push(main.title.clone());
                        main.sections.push(Section::new(title, n));
                    }
                    // A sub-header before any main header stands alone.
                    None => out.sections.push(Section::new(title, n)),
                },
                None => {
                    if let Some(main) = out.sections.last_mut() {
                        section.push(main.title.clone());
                        main.count(n.enabled);
                        match main.sections.last_mut() {
                            Some(sub) => {
                                section.push(sub.title.clone());
                                sub.count(n.enabled);
                                sub.nodes.push(n.identifier.clone());
                            }
                            None => main.nodes.push(n.identifier.clone()),
                        }
                    }
                }
            }
            if let Some(g) = &directives.exclusive_group {
                match group_at.get(g) {
                    Some(&i) => out.groups[i].members.push(n.identifier.clone()),
                    None => {
                        group_at.insert(g.clone(), out.groups.len());
                        out.groups.push(ExclusiveGroup {
                            name: g.clone(),
                            members: vec![n.identifier.clone()],
                        });
                    }
                }
            }
            out.nodes.push(OutlineNode {
                identifier: n.identifier.clone(),
                name: n.name.clone(),
                enabled: n.enabled,
                section,
                header: head.map(|h| match h {
                    Header::Main(_) => "main",
                    Header::Sub(_) => "sub",
                }),
                tooltip: directives.tooltip.clone(),
                badges: directives.badge.iter().cloned().collect(),
                groups: directives.exclusive_group.iter().cloned().collect(),
                directives,
            });
        }
        out
    }

    /// The outline as JSON: every front end prints these bytes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Longest section title kept, in bytes: every node under a header carries its title, so a
/// megabyte-long header name over ten thousand nodes would make gigabytes (titles are for
/// menus; a longer one is cut at a character boundary, with `…`).
const MAX_TITLE: usize = 256;

impl Section {
    fn new(title: &str, n: &PresetNode) -> Section {
        Section {
            title: crate::diagnostic::fit_chars(title, MAX_TITLE).into_owned(),
            identifier: n.identifier.clone(),
            nodes: Vec::new(),
            sections: Vec::new(),
            enabled: 0,
            total: 0,
        }
    }

    fn count(&mut self, enabled: bool) {
        self.total += 1;
        self.enabled += usize::from(enabled);
    }
}

/// A reference as the extension compares it with identifiers and names
/// (`normalizePromptReference`): lowercased, without leading emoji, punctuation and spaces,
/// each run of white space one space.
pub(super) fn fold(s: &str) -> String {
    s.trim_start_matches(|c: char| !c.is_alphanumeric())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// What a directive's reference may name: an identifier exactly, or an identifier or name
/// folded ([`fold`]). Built once, so each reference is one lookup (a preset of 2 MiB of
/// references over thousands of nodes stays linear).
struct Names<'n> {
    exact: std::collections::HashSet<&'n str>,
    folded: std::collections::HashSet<String>,
}

impl<'n> Names<'n> {
    fn of(nodes: &'n [PresetNode]) -> Names<'n> {
        Names {
            exact: nodes.iter().map(|n| n.identifier.as_str()).collect(),
            folded: nodes
                .iter()
                .flat_map(|n| [fold(&n.identifier), fold(&n.name)])
                .filter(|f| !f.is_empty())
                .collect(),
        }
    }

    fn has(&self, r: &str) -> bool {
        self.exact.contains(r) || self.folded.contains(&fold(r))
    }
}

/// The `{{// @…}}` directives of `content` that reference nodes: (offset, name, references).
fn references(content: &str) -> impl Iterator<Item = (usize, &str, &str)> {
    blocks(content).filter_map(|(at, block)| {
        let line = block.trim();
        let (name, value) = line.split_once(char::is_whitespace)?;
        matches!(
            name,
            "@exclusive-with" | "@requires" | "@conflicts-with" | "@auto-disable"
        )
        .then_some((at, name, value))
    })
}

/// The directive problems of a preset's nodes (`Preset::audit`): a reference that names no
/// node, an exclusive group of one, a group shipped with several members on, a header node
/// with text of its own (switching its section's header off drops that text, which often
/// opens or closes an XML wrapper the section's nodes sit in).
pub(crate) fn audit(nodes: &[PresetNode], out: &mut Vec<Diagnostic>) {
    // Line and column through the node's line index (built once per node that has a
    // finding): counting line breaks before each of a node's findings would be quadratic.
    let at = |n: &PresetNode, lines: &LineIndex, offset: usize, len: usize, message: String| {
        Diagnostic::new(
            DiagnosticKind::DirectiveProblem,
            Some(&n.identifier),
            message,
        )
        .at(
            Span::new(offset, offset + len),
            lines.line_col(offset as u32),
        )
    };
    let names = Names::of(nodes);
    // Group name -> (members, where the first names it), and each group's place.
    let mut groups: Vec<(String, Vec<&PresetNode>, usize)> = Vec::new();
    let mut group_at: std::collections::HashMap<String, usize> = Default::default();
    for n in nodes {
        let lines = std::cell::OnceCell::new();
        let lines = || lines.get_or_init(|| LineIndex::new(&n.content));
        for (offset, name, value) in references(&n.content) {
            // One finding per directive, five references named: a directive of a hundred
            // thousand references is one diagnostic, not a hundred thousand.
            let missing: Vec<&str> = value
                .split(',')
                .map(str::trim)
                .filter(|r| !r.is_empty() && !names.has(r))
                .collect();
            if !missing.is_empty() {
                out.push(at(
                    n,
                    lines(),
                    offset,
                    name.len() + 4,
                    format!(
                        "`{name}` names {}, which {} no node of this preset",
                        a_few(&missing),
                        if missing.len() == 1 { "is" } else { "are" }
                    ),
                ));
            }
        }
        let d = Directives::read(&n.content);
        if let (Some(g), offset) = (d.exclusive_group, d.exclusive_group_at) {
            match group_at.get(&g) {
                Some(&i) => groups[i].1.push(n),
                None => {
                    group_at.insert(g.clone(), groups.len());
                    groups.push((g, vec![n], offset));
                }
            }
        }
        // A header of comments only (NemoEngine's) sends nothing: only text counts.
        if header(&n.name).is_some() && !n.content.trim().is_empty() && !n.is_comment_only() {
            out.push(at(
                n,
                lines(),
                0,
                0,
                format!(
                    "the header `{}` has text of its own: switching it off drops that text \
                     from the prompt, whatever the section's nodes need of it",
                    excerpt(&n.name)
                ),
            ));
        }
    }
    for (name, members, offset) in &groups {
        let lines = LineIndex::new(&members[0].content);
        let on: Vec<&str> = members
            .iter()
            .filter(|m| m.enabled)
            .map(|m| m.identifier.as_str())
            .collect();
        if members.len() == 1 {
            out.push(at(
                members[0],
                &lines,
                *offset,
                name.len(),
                format!("the exclusive group `{}` has one member", excerpt(name)),
            ));
        } else if on.len() > 1 {
            out.push(at(
                members[0],
                &lines,
                *offset,
                name.len(),
                format!(
                    "the exclusive group `{}` is shipped with {} members on: {}",
                    excerpt(name),
                    on.len(),
                    a_few(&on)
                ),
            ));
        }
    }
}

/// Five of `names` quoted, and how many more: a finding stays short whatever the preset's
/// size.
fn a_few(names: &[&str]) -> String {
    let mut s = names
        .iter()
        .take(5)
        .map(|n| format!("`{}`", excerpt(n)))
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > 5 {
        s.push_str(&format!(" and {} more", names.len() - 5));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_read_as_the_extension_reads_them() {
        let cases = [
            ("=== 📁 Core ===", Some(Header::Main("📁 Core"))),
            ("⭐───── Style ─────⭐", Some(Header::Main("Style"))),
            ("━📜 Story Primers", Some(Header::Main("📜 Story Primers"))),
            ("━━━ X ━━━━", Some(Header::Main("X"))),
            ("< Tone >", Some(Header::Sub("Tone"))),
            ("<>", None),
            ("⭐ Not a header", None),
            ("Plain", None),
        ];
        for (name, want) in cases {
            assert_eq!(header(name), want, "{name}");
        }
    }

    #[test]
    fn directives_follow_the_extensions_quirks() {
        let d = Directives::read(
            "{{// @tooltip Hi {{user}}, welcome}}\n{{// @category a, b}}{{// @category c}}\
             {{// @badge one}}{{// @badge two}}{{// @exclusive-with-category g}}\
             {{// @requires x,y}}{{// @Tooltip ignored}}{{// @nonsense v}}\
             {{// @conflicts-with\nz}}",
        );
        assert_eq!(d.tooltip.as_deref(), Some("Hi {{user"));
        assert_eq!(d.categories, ["a", "b", "c"]);
        assert_eq!(d.badge.as_deref(), Some("two"));
        assert_eq!(d.exclusive_group.as_deref(), Some("g"));
        assert_eq!(d.requires, ["x", "y"]);
        assert!(d.conflicts_with.is_empty());
        // A plain comment is the tooltip only when it opens the content.
        assert_eq!(Directives::read("x{{// not a tooltip}}").tooltip, None);
        assert_eq!(
            Directives::read("{{// first}}{{// second}}")
                .tooltip
                .as_deref(),
            Some("first")
        );
        // A block without an end on its line is none; the next line starts afresh.
        let found: Vec<(usize, &str)> = blocks("{{// a {{// b\n{{// c}} {{//d}}").collect();
        assert_eq!(found, [(14, " c"), (23, "d")]);
    }

    /// A directive of many references naming nothing is one finding naming five.
    #[test]
    fn missing_references_are_one_finding_per_directive() {
        let refs: Vec<String> = (0..10_000).map(|i| format!("ghost{i}")).collect();
        let nodes = [PresetNode::custom(
            "a".into(),
            format!("{{{{// @requires {}}}}}", refs.join(",")),
            true,
        )];
        let mut out = Vec::new();
        audit(&nodes, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            out[0].message,
            "`@requires` names `ghost0`, `ghost1`, `ghost2`, `ghost3`, `ghost4` and 9995 more, which are no node of this preset"
        );
    }

    /// A long header name is cut in every node's section path (memory stays linear).
    #[test]
    fn long_titles_are_cut() {
        let name = format!("= {}", "é".repeat(1_000));
        let nodes = [
            PresetNode {
                name,
                ..PresetNode::custom("h".into(), String::new(), true)
            },
            PresetNode::custom("a".into(), "x".into(), true),
        ];
        let o = Outline::of(&nodes);
        assert_eq!(o.nodes[1].section, [format!("{}…", "é".repeat(128))]);
        assert_eq!(o.sections[0].title, o.nodes[1].section[0]);
    }

    /// Hostile shapes: a line of `{{//` without an end, thousands of groups and references, a
    /// group with every member on (its message names five). Their growth is measured in
    /// `benches/linear.rs` (`preset/outline-…`).
    #[test]
    fn hostile_directives_stay_linear_and_bounded() {
        let line = "{{//".repeat(200_000);
        assert_eq!(blocks(&line).count(), 0);
        let many = "{{//x}}".repeat(100_000);
        assert_eq!(blocks(&many).count(), 100_000);
        let nodes: Vec<PresetNode> = (0..5_000)
            .map(|i| {
                let refs: Vec<String> = (0..20).map(|k| format!("n{}", (i + k) % 5_000)).collect();
                PresetNode::custom(
                    format!("n{i}"),
                    format!(
                        "{{{{// @mutual-exclusive-group g{}}}}}{{{{// @requires {}}}}}",
                        i / 2,
                        refs.join(",")
                    ),
                    true,
                )
            })
            .chain((0..3_000).map(|i| {
                PresetNode::custom(
                    format!("m{i}"),
                    "{{// @mutual-exclusive-group big}}".into(),
                    true,
                )
            }))
            .collect();
        let o = Outline::of(&nodes);
        let mut out = Vec::new();
        audit(&nodes, &mut out);
        assert_eq!(o.groups.len(), 2_501);
        // Each pair group has both members on; the big one names five and counts the rest.
        assert_eq!(out.len(), 2_501);
        let big = out
            .iter()
            .find(|d| d.message.contains("`big`"))
            .map(|d| d.message.as_str());
        assert_eq!(
            big,
            Some(
                "the exclusive group `big` is shipped with 3000 members on: `m0`, `m1`, `m2`, `m3`, `m4` and 2995 more"
            )
        );
    }

    #[test]
    fn the_audit_names_what_a_menu_cannot_honour() {
        let node = |id: &str, name: &str, content: &str, enabled: bool| PresetNode {
            enabled,
            name: name.into(),
            ..PresetNode::custom(id.into(), content.into(), enabled)
        };
        let nodes = [
            node("h", "━ Rules", "<rules>", true),
            node(
                "a",
                "🎭 Terse Mode",
                "{{// @mutual-exclusive-group len}}",
                true,
            ),
            node(
                "b",
                "Lush",
                "x\n{{// @mutual-exclusive-group len}}{{// @requires terse mode, ghost}}",
                true,
            ),
            node(
                "c",
                "Solo",
                "{{// @exclusive-group-typo x}}{{// @mutual-exclusive-group solo}}",
                false,
            ),
        ];
        let mut out = Vec::new();
        audit(&nodes, &mut out);
        type Found<'d> = (Option<&'d str>, Option<u32>, Option<u32>, &'d str);
        let got: Vec<Found<'_>> = out
            .iter()
            .map(|d| (d.node.as_deref(), d.line, d.column, d.message.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    Some("h"),
                    Some(1),
                    Some(1),
                    "the header `━ Rules` has text of its own: switching it off drops that text from the prompt, whatever the section's nodes need of it"
                ),
                (
                    Some("b"),
                    Some(2),
                    Some(35),
                    "`@requires` names `ghost`, which is no node of this preset"
                ),
                (
                    Some("a"),
                    Some(1),
                    Some(1),
                    "the exclusive group `len` is shipped with 2 members on: `a`, `b`"
                ),
                (
                    Some("c"),
                    Some(1),
                    Some(31),
                    "the exclusive group `solo` has one member"
                ),
            ]
        );
    }
}
