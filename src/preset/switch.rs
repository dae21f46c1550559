//! Switching a preset's nodes the way their author allows (issue 41): the constraints that
//! [`Directives`](super::outline::Directives) carry, checked as the NemoPresetExt extension
//! (4.7.0) checks them when a person switches a node on (`validatePromptActivation`), so a
//! bot's menu or an admin's command cannot turn on two writing styles of one exclusive group.
//!
//! - Only switching **on** is checked; switching off never refuses and never cascades (as in
//!   the extension: a node whose requirement goes off stays on).
//! - **Errors** refuse the switch: `@exclusive-with` (both ways), `@mutual-exclusive-group`,
//!   `@max-one-per-category`, `@requires` (the first node a reference names must be on).
//!   **Warnings** never do: `@conflicts-with` (both ways), `@deprecated`.
//! - An error is **resolved** instead of refused when the caller asks ([`Resolve::Resolve`]:
//!   the conflicting nodes go off, the required ones on, each through the same check) or when
//!   the author's own directives resolve it, as the extension does without asking:
//!   `@auto-disable` naming every conflicting node, `@auto-enable-dependencies` with every
//!   required node present.
//! - Decisions where the extension has none (`docs/presets.md`): one request is one change
//!   (the offs first, then the ons in order, each identifier's last wish kept); a resolution
//!   never undoes what the same request asks for or relies on (that is refused as
//!   [`IssueKind::Unresolvable`]); a requirement naming no node refuses, and under
//!   [`Resolve::Resolve`] is a warning (the audit reports it to the author).
//!
//! Linear in the preset and the request, whatever their shape: references are interned once,
//! the enabled members of each name, group, category and referrer set are kept up to date as
//! switches happen, and each node changes state at most once per request, so every error's
//! list of nodes is paid for by the switches it causes or ends the request; warnings name at
//! most [`NAMED`] nodes.

use std::collections::{BTreeSet, HashMap};

use serde::Serialize;
use thiserror::Error;

use super::PresetNode;
use super::outline::{Directives, fold};
use crate::diagnostic::fit_chars;

/// How a switch treats the author's constraints.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Resolve {
    /// Refuse what breaks a constraint, unless the author's directives resolve it.
    #[default]
    Refuse,
    /// Switch conflicting nodes off and required ones on.
    Resolve,
}

/// What a constraint says, in the extension's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[serde(rename_all = "kebab-case")]
#[strum(serialize_all = "kebab-case")]
#[non_exhaustive]
pub enum IssueKind {
    /// `@exclusive-with`: never on together (an error).
    Exclusive,
    /// `@mutual-exclusive-group`: one member on at a time (an error).
    #[serde(rename = "mutual-exclusive-group")]
    #[strum(serialize = "mutual-exclusive-group")]
    Group,
    /// `@max-one-per-category` (an error).
    #[serde(rename = "category-limit")]
    #[strum(serialize = "category-limit")]
    Category,
    /// `@requires`: a required node is off or missing (an error).
    #[serde(rename = "missing-dependency")]
    #[strum(serialize = "missing-dependency")]
    Requires,
    /// `@conflicts-with`: a warning.
    #[serde(rename = "soft-conflict")]
    #[strum(serialize = "soft-conflict")]
    Conflicts,
    /// `@deprecated`: a warning.
    Deprecated,
    /// Resolving would undo what the same request asks for or relies on (an error).
    Unresolvable,
}

impl IssueKind {
    /// Whether it refuses a switch (else it is a warning).
    ///
    /// ```
    /// use stpreset::switch::IssueKind;
    /// assert!(IssueKind::Group.is_error() && !IssueKind::Conflicts.is_error());
    /// ```
    pub fn is_error(self) -> bool {
        !matches!(self, IssueKind::Conflicts | IssueKind::Deprecated)
    }
}

/// One constraint that switching a node on meets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Issue {
    /// Which constraint.
    pub kind: IssueKind,
    /// The node being switched on.
    pub node: String,
    /// The nodes it clashes with (on now) or needs (off now), identifiers in preset order.
    pub others: Vec<String>,
    /// What is wrong, naming the nodes.
    pub message: String,
    /// The author's message for it (`@exclusive-with-message`, `@requires-message`,
    /// `@conflicts-message`), when there is one.
    pub author: Option<String>,
}

/// One identifier switched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Change {
    /// The identifier (every node with it).
    pub identifier: String,
    /// On or off.
    pub enabled: bool,
}

/// What a switch did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Switched {
    /// Every identifier switched: the ones asked for, then those resolutions switched.
    pub changes: Vec<Change>,
    /// The errors resolved (by the caller's [`Resolve::Resolve`] or the author's directives);
    /// their `others` are the nodes switched.
    pub resolved: Vec<Issue>,
    /// Warnings: soft conflicts, deprecated nodes, unmet requirements switched on anyway.
    pub warnings: Vec<Issue>,
}

impl Switched {
    /// As JSON: every front end prints these bytes.
    ///
    /// ```
    /// let p = stpreset::Preset::from_json(br#"{"prompts": [{"identifier": "a", "content": "A", "enabled": false}]}"#).unwrap();
    /// let done = p.plan_switch(&[("a", true)], stpreset::switch::Resolve::Refuse).unwrap();
    /// assert_eq!(done.to_json(), r#"{"changes":[{"identifier":"a","enabled":true}],"resolved":[],"warnings":[]}"#);
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Why nothing was switched.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SwitchError {
    /// An identifier the preset does not have.
    #[error("no node `{0}`")]
    UnknownNode(String),
    /// Switching `node` on breaks the author's constraints.
    #[error("{}", refusal(.node, .issues))]
    Refused {
        /// The node that could not be switched on.
        node: String,
        /// The errors it meets.
        issues: Vec<Issue>,
    },
}

pub(crate) fn refusal(node: &str, issues: &[Issue]) -> String {
    let why: Vec<String> = issues
        .iter()
        .map(|i| match &i.author {
            Some(author) => format!("{} (the author: \"{author}\")", i.message),
            None => i.message.clone(),
        })
        .collect();
    format!(
        "switching `{}` on breaks the preset's constraints: {}",
        fit_chars(node, NAME_CHARS),
        why.join("; ")
    )
}

/// Most nodes a warning names: a soft conflict with thousands of nodes on is one warning.
pub const NAMED: usize = 20;
/// Longest name or author's message quoted, in characters: every issue carries them.
const NAME_CHARS: usize = 80;
const MESSAGE_CHARS: usize = 500;

/// The nodes one reference names: those whose identifier is it, and those whose folded
/// identifier or name is its fold (the extension's `promptMatchesReference`). Key numbers
/// index [`Net::members`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Ref {
    exact: Option<u32>,
    folded: Option<u32>,
}

impl Ref {
    fn keys(self) -> impl Iterator<Item = u32> {
        self.exact.into_iter().chain(self.folded)
    }
}

/// A node's constraints with its references resolved.
struct Node<'p> {
    d: &'p Directives,
    /// Its own keys: its identifier, its folded identifier and name.
    keys: Vec<u32>,
    exclusive: BTreeSet<Ref>,
    conflicts: BTreeSet<Ref>,
    /// Each `@requires` reference as written, with what it names.
    requires: Vec<(String, Ref)>,
}

/// The preset's nodes and their constraints, with the enabled members of every set a check
/// asks about kept as switches happen.
struct Net<'p> {
    nodes: &'p [PresetNode],
    info: Vec<Node<'p>>,
    on: Vec<bool>,
    /// What the request has settled: asked for, or switched by a resolution.
    pinned: Vec<Option<bool>>,
    by_id: HashMap<&'p str, Vec<usize>>,
    /// Per key, the nodes it names, in preset order.
    members: Vec<Vec<usize>>,
    /// Per key, those on.
    members_on: Vec<BTreeSet<usize>>,
    /// Per key, the nodes on whose `@exclusive-with` / `@conflicts-with` names it.
    exclusive_by: Vec<BTreeSet<usize>>,
    conflicts_by: Vec<BTreeSet<usize>>,
    group_on: HashMap<&'p str, BTreeSet<usize>>,
    category_on: HashMap<&'p str, BTreeSet<usize>>,
}

impl<'p> Net<'p> {
    fn new(nodes: &'p [PresetNode], info_of: &'p [Directives]) -> Net<'p> {
        let mut exact: HashMap<&str, u32> = HashMap::new();
        let mut folded: HashMap<String, u32> = HashMap::new();
        let mut members: Vec<Vec<usize>> = Vec::new();
        let mut by_id: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut own: Vec<Vec<u32>> = Vec::with_capacity(nodes.len());
        let key = |members: &mut Vec<Vec<usize>>, slot: Option<&mut u32>| -> u32 {
            match slot {
                Some(k) => *k,
                None => {
                    members.push(Vec::new());
                    (members.len() - 1) as u32
                }
            }
        };
        for (i, n) in nodes.iter().enumerate() {
            by_id.entry(n.identifier.as_str()).or_default().push(i);
            let mut keys = Vec::with_capacity(3);
            let k = key(&mut members, exact.get_mut(n.identifier.as_str()));
            exact.insert(&n.identifier, k);
            keys.push(k);
            for f in [fold(&n.identifier), fold(&n.name)] {
                if f.is_empty() {
                    continue;
                }
                let k = key(&mut members, folded.get_mut(&f));
                folded.insert(f, k);
                if !keys.contains(&k) {
                    keys.push(k);
                }
            }
            for &k in &keys {
                members[k as usize].push(i);
            }
            own.push(keys);
        }
        let resolve = |r: &str| Ref {
            exact: exact.get(r).copied(),
            folded: Some(fold(r))
                .filter(|f| !f.is_empty())
                .and_then(|f| folded.get(&f).copied()),
        };
        let info: Vec<Node<'p>> = own
            .into_iter()
            .zip(info_of)
            .map(|(keys, d)| Node {
                keys,
                exclusive: d.exclusive_with.iter().map(|r| resolve(r)).collect(),
                conflicts: d.conflicts_with.iter().map(|r| resolve(r)).collect(),
                requires: d
                    .requires
                    .iter()
                    .filter(|r| !r.is_empty())
                    .map(|r| (r.clone(), resolve(r)))
                    .collect(),
                d,
            })
            .collect();
        let keys = members.len();
        let mut net = Net {
            nodes,
            info,
            on: vec![false; nodes.len()],
            pinned: vec![None; nodes.len()],
            by_id,
            members,
            members_on: vec![BTreeSet::new(); keys],
            exclusive_by: vec![BTreeSet::new(); keys],
            conflicts_by: vec![BTreeSet::new(); keys],
            group_on: HashMap::new(),
            category_on: HashMap::new(),
        };
        for (i, n) in nodes.iter().enumerate() {
            net.set(i, n.enabled);
        }
        net
    }

    /// Switches node `i`, keeping every enabled-members set up to date.
    fn set(&mut self, i: usize, on: bool) {
        if self.on[i] == on {
            return;
        }
        self.on[i] = on;
        fn flip(set: &mut BTreeSet<usize>, i: usize, on: bool) {
            if on {
                set.insert(i);
            } else {
                set.remove(&i);
            }
        }
        let node = &self.info[i];
        for &k in &node.keys {
            flip(&mut self.members_on[k as usize], i, on);
        }
        for k in node.exclusive.iter().flat_map(|r| r.keys()) {
            flip(&mut self.exclusive_by[k as usize], i, on);
        }
        for k in node.conflicts.iter().flat_map(|r| r.keys()) {
            flip(&mut self.conflicts_by[k as usize], i, on);
        }
        if let Some(g) = &node.d.exclusive_group {
            flip(self.group_on.entry(g.as_str()).or_default(), i, on);
        }
        for c in &node.d.categories {
            flip(self.category_on.entry(c.as_str()).or_default(), i, on);
        }
    }

    fn ids(&self, id: &str) -> &[usize] {
        self.by_id.get(id).map_or(&[], Vec::as_slice)
    }

    fn name(&self, i: usize) -> String {
        let n = &self.nodes[i];
        let shown = if n.name.trim().is_empty() {
            &n.identifier
        } else {
            &n.name
        };
        format!("\"{}\"", fit_chars(shown, NAME_CHARS))
    }

    fn names(&self, of: &[usize]) -> String {
        of.iter()
            .map(|&j| self.name(j))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The first node a reference names, on or off (the extension's `find`).
    fn first(&self, r: Ref) -> Option<usize> {
        r.keys()
            .filter_map(|k| self.members[k as usize].first().copied())
            .min()
    }

    /// The constraints switching node `i` on meets; `others` exclude nodes sharing its
    /// identifier (they switch with it).
    fn check(&self, i: usize) -> Vec<Issue> {
        let node = &self.info[i];
        let d = &node.d;
        let me = self.nodes[i].identifier.as_str();
        let other = |j: &usize| self.nodes[*j].identifier != me;
        let mut issues = Vec::new();
        let mut issue = |kind, others: Vec<usize>, message: String, author: Option<&String>| {
            issues.push(Issue {
                kind,
                node: me.to_string(),
                others: others
                    .iter()
                    .map(|&j| self.nodes[j].identifier.clone())
                    .collect(),
                message: fit_chars(&message, MESSAGE_CHARS).into_owned(),
                author: author.map(|a| fit_chars(a, MESSAGE_CHARS).into_owned()),
            });
        };
        // Both ways: nodes this one excludes that are on, and nodes on that exclude it.
        let forward: BTreeSet<usize> = node
            .exclusive
            .iter()
            .flat_map(|r| r.keys())
            .flat_map(|k| self.members_on[k as usize].iter().copied())
            .filter(other)
            .collect();
        let reverse: BTreeSet<usize> = node
            .keys
            .iter()
            .flat_map(|&k| self.exclusive_by[k as usize].iter().copied())
            .filter(other)
            .collect();
        if !forward.is_empty() || !reverse.is_empty() {
            let author = d
                .exclusive_message
                .as_ref()
                .filter(|_| !forward.is_empty())
                .or_else(|| {
                    reverse
                        .iter()
                        .find_map(|&j| self.info[j].d.exclusive_message.as_ref())
                });
            let all: Vec<usize> = forward.union(&reverse).copied().collect();
            let message = format!(
                "{} cannot be on together with {}",
                self.name(i),
                self.names(&all)
            );
            issue(IssueKind::Exclusive, all, message, author);
        }
        // One member on at a time: of the exclusive group, of the category with a limit.
        let limits = [
            (
                IssueKind::Group,
                "only one of the group",
                d.exclusive_group
                    .as_ref()
                    .map(|g| (g, self.group_on.get(g.as_str()))),
                d.exclusive_message.as_ref(),
            ),
            (
                IssueKind::Category,
                "only one node of the category",
                d.max_one_per_category
                    .as_ref()
                    .map(|c| (c, self.category_on.get(c.as_str()))),
                None,
            ),
        ];
        for (kind, what, set, author) in limits {
            let Some((name, set)) = set else { continue };
            let on: Vec<usize> = set.into_iter().flatten().copied().filter(other).collect();
            if !on.is_empty() {
                let message = format!(
                    "{what} \"{}\" may be on; on now: {}",
                    fit_chars(name, NAME_CHARS),
                    self.names(&on)
                );
                issue(kind, on, message, author);
            }
        }
        let mut needed = BTreeSet::new();
        let mut dangling = Vec::new();
        for (written, r) in &node.requires {
            match self.first(*r) {
                // A node the same request switches on counts as on.
                Some(j) if !self.on[j] && self.pinned[j] != Some(true) => {
                    needed.insert(j);
                }
                Some(_) => {}
                None => dangling.push(written.as_str()),
            }
        }
        if !needed.is_empty() {
            let needed: Vec<usize> = needed.into_iter().collect();
            let message = format!("{} requires {} on", self.name(i), self.names(&needed));
            issue(
                IssueKind::Requires,
                needed,
                message,
                d.requires_message.as_ref(),
            );
        }
        if !dangling.is_empty() {
            let message = format!(
                "{} requires {}, which names no node of this preset",
                self.name(i),
                dangling
                    .iter()
                    .take(NAMED)
                    .map(|r| format!("\"{}\"", fit_chars(r, NAME_CHARS)))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            issue(IssueKind::Requires, Vec::new(), message, None);
        }
        // Warnings name a few: nothing they list is switched, so a long list would be paid
        // again by every node the request switches on.
        let soft: BTreeSet<usize> = node
            .conflicts
            .iter()
            .flat_map(|r| r.keys())
            .flat_map(|k| self.members_on[k as usize].iter().copied().take(NAMED + 1))
            .chain(node.keys.iter().flat_map(|&k| {
                self.conflicts_by[k as usize]
                    .iter()
                    .copied()
                    .take(NAMED + 1)
            }))
            .filter(other)
            .take(NAMED)
            .collect();
        if !soft.is_empty() {
            let soft: Vec<usize> = soft.into_iter().collect();
            let message = format!("{} may conflict with {}", self.name(i), self.names(&soft));
            issue(
                IssueKind::Conflicts,
                soft,
                message,
                d.conflicts_message.as_ref(),
            );
        }
        if let Some(why) = &d.deprecated {
            issue(
                IssueKind::Deprecated,
                Vec::new(),
                format!("{} is deprecated", self.name(i)),
                Some(why),
            );
        }
        issues
    }

    /// Whether the author's directives resolve these errors of node `i` (the extension's
    /// `checkAutoResolution`): `@auto-disable` lists every conflicting node, and
    /// `@auto-enable-dependencies` with every required node present.
    fn author_resolves(&self, i: usize, errors: &[Issue]) -> bool {
        let d = &self.info[i].d;
        errors.iter().all(|e| match e.kind {
            IssueKind::Requires => d.auto_enable_dependencies && !e.others.is_empty(),
            IssueKind::Unresolvable => false,
            _ => e.others.iter().all(|o| d.auto_disable.contains(o)),
        })
    }
}

/// Plans switching `changes` on `nodes` under their author's constraints; nothing is
/// switched here ([`Preset::switch`](crate::Preset::switch) applies the plan, the store
/// writes it in one transaction).
pub(crate) fn plan(
    nodes: &[PresetNode],
    changes: &[(&str, bool)],
    how: Resolve,
) -> Result<Switched, SwitchError> {
    let directives: Vec<Directives> = nodes.iter().map(|n| Directives::read(&n.content)).collect();
    let mut net = Net::new(nodes, &directives);
    // One wish per identifier, the last, in order of first mention.
    let mut wish: HashMap<&str, bool> = HashMap::new();
    let mut order: Vec<&str> = Vec::new();
    for &(id, on) in changes {
        if net.ids(id).is_empty() {
            return Err(SwitchError::UnknownNode(id.to_string()));
        }
        if wish.insert(id, on).is_none() {
            order.push(id);
        }
    }
    let mut out = Switched::default();
    let mut queue = std::collections::VecDeque::new();
    for &id in &order {
        let on = wish[id];
        out.changes.push(Change {
            identifier: id.to_string(),
            enabled: on,
        });
        for i in net.ids(id).to_vec() {
            net.pinned[i] = Some(on);
            if !on {
                net.set(i, false);
            }
        }
        if on {
            queue.push_back(id.to_string());
        }
    }
    let refused = |id: &str, issues: Vec<Issue>| SwitchError::Refused {
        node: id.to_string(),
        issues,
    };
    while let Some(id) = queue.pop_front() {
        let at = net.ids(&id).to_vec();
        // Already on: the extension checks nothing.
        if at.iter().all(|&i| net.on[i]) {
            continue;
        }
        let mut errors = Vec::new();
        for &i in &at {
            for issue in net.check(i) {
                if issue.kind.is_error() {
                    errors.push(issue);
                } else {
                    out.warnings.push(issue);
                }
            }
        }
        if !errors.is_empty() {
            if how == Resolve::Refuse && !at.iter().all(|&i| net.author_resolves(i, &errors)) {
                return Err(refused(&id, errors));
            }
            for e in errors {
                let on = e.kind == IssueKind::Requires;
                if on && e.others.is_empty() {
                    let mut e = e;
                    e.message.push_str("; switched on anyway");
                    out.warnings.push(e);
                    continue;
                }
                for o in &e.others {
                    let at: Vec<usize> = net.ids(o).to_vec();
                    match at.iter().find_map(|&j| net.pinned[j]) {
                        Some(p) if p == on => continue,
                        Some(_) => {
                            let message = format!(
                                "resolving \"{}\" would switch {} {}, which this change {}",
                                fit_chars(&e.message, MESSAGE_CHARS),
                                net.name(at[0]),
                                if on { "on" } else { "off" },
                                if on {
                                    "switches off"
                                } else {
                                    "switches on or relies on"
                                }
                            );
                            return Err(refused(
                                &id,
                                vec![Issue {
                                    kind: IssueKind::Unresolvable,
                                    node: id.clone(),
                                    others: vec![o.clone()],
                                    message,
                                    author: None,
                                }],
                            ));
                        }
                        None => {}
                    }
                    for &j in &at {
                        net.pinned[j] = Some(on);
                        if !on {
                            net.set(j, false);
                        }
                    }
                    out.changes.push(Change {
                        identifier: o.clone(),
                        enabled: on,
                    });
                    if on {
                        queue.push_back(o.clone());
                    }
                }
                out.resolved.push(e);
            }
        }
        for &i in &at {
            net.set(i, true);
            // What it relies on stays on for the rest of the request.
            let required: Vec<usize> = net.info[i]
                .requires
                .iter()
                .filter_map(|(_, r)| net.first(*r))
                .collect();
            for j in required {
                if net.pinned[j].is_none() {
                    net.pinned[j] = Some(true);
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Preset;

    fn preset(nodes: &[(&str, &str, bool)]) -> Preset {
        let prompts: Vec<_> = nodes
            .iter()
            .map(|(id, content, on)| {
                serde_json::json!({"identifier": id, "name": id, "content": content, "enabled": on})
            })
            .collect();
        Preset::from_json(
            serde_json::json!({ "prompts": prompts })
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    fn changes(s: &Switched) -> Vec<(String, bool)> {
        s.changes
            .iter()
            .map(|c| (c.identifier.clone(), c.enabled))
            .collect()
    }

    fn kinds(e: SwitchError) -> (String, Vec<(IssueKind, Vec<String>)>) {
        match e {
            SwitchError::Refused { node, issues } => (
                node,
                issues.into_iter().map(|i| (i.kind, i.others)).collect(),
            ),
            other => panic!("{other}"),
        }
    }

    const G: &str = "{{// @mutual-exclusive-group style}}";

    #[test]
    fn a_group_member_on_is_refused_then_resolved() {
        let p = preset(&[("a", G, true), ("b", G, false), ("c", "", false)]);
        let e = plan(p.nodes(), &[("b", true)], Resolve::Refuse).unwrap_err();
        assert_eq!(
            kinds(e.clone()),
            ("b".into(), vec![(IssueKind::Group, vec!["a".to_string()])])
        );
        assert!(e.to_string().contains("\"style\""), "{e}");
        let s = plan(p.nodes(), &[("b", true)], Resolve::Resolve).unwrap();
        assert_eq!(changes(&s), [("b".into(), true), ("a".into(), false)]);
        assert_eq!(s.resolved[0].kind, IssueKind::Group);
        // Switching the other off in the same request needs nothing resolved, in any order.
        let s = plan(p.nodes(), &[("b", true), ("a", false)], Resolve::Refuse).unwrap();
        assert!(s.resolved.is_empty());
        // Turning off never refuses, and no check runs for a node already on.
        assert!(plan(p.nodes(), &[("a", false), ("c", true)], Resolve::Refuse).is_ok());
        assert!(plan(p.nodes(), &[("a", true)], Resolve::Refuse).is_ok());
        assert_eq!(
            plan(p.nodes(), &[("zz", true)], Resolve::Refuse),
            Err(SwitchError::UnknownNode("zz".into()))
        );
    }

    #[test]
    fn two_members_asked_for_together_are_refused_even_when_resolving() {
        let p = preset(&[("a", G, false), ("b", G, false)]);
        let e = plan(p.nodes(), &[("a", true), ("b", true)], Resolve::Refuse).unwrap_err();
        assert_eq!(kinds(e).1[0].0, IssueKind::Group);
        let e = plan(p.nodes(), &[("a", true), ("b", true)], Resolve::Resolve).unwrap_err();
        assert_eq!(kinds(e).1[0].0, IssueKind::Unresolvable);
    }

    #[test]
    fn exclusive_with_works_both_ways_with_the_authors_message() {
        let p = preset(&[
            (
                "alpha",
                "{{// @exclusive-with 🔥 Omega}}{{// @exclusive-with-message One core pack!}}",
                false,
            ),
            ("omega", "", true),
        ]);
        let e = plan(p.nodes(), &[("alpha", true)], Resolve::Refuse).unwrap_err();
        assert!(
            e.to_string().ends_with("(the author: \"One core pack!\")"),
            "{e}"
        );
        assert!(
            e.to_string().contains("with \"omega\""),
            "names the node on: {e}"
        );
        // The other way round: `omega` is named by `alpha`, which is on.
        let p = preset(&[
            ("alpha", "{{// @exclusive-with omega}}", true),
            ("omega", "", false),
        ]);
        let (node, issues) =
            kinds(plan(p.nodes(), &[("omega", true)], Resolve::Refuse).unwrap_err());
        assert_eq!(
            (node.as_str(), &issues[0].1[..]),
            ("omega", &["alpha".to_string()][..])
        );
    }

    #[test]
    fn the_authors_directives_resolve_without_asking() {
        let p = preset(&[
            (
                "a",
                "{{// @mutual-exclusive-group g}}{{// @auto-disable b}}",
                false,
            ),
            ("b", "{{// @mutual-exclusive-group g}}", true),
            (
                "c",
                "{{// @requires d}}{{// @auto-enable-dependencies}}",
                false,
            ),
            ("d", "{{// @mutual-exclusive-group h}}", false),
            ("e", "{{// @mutual-exclusive-group h}}", true),
        ]);
        let s = plan(p.nodes(), &[("a", true)], Resolve::Refuse).unwrap();
        assert_eq!(changes(&s), [("a".into(), true), ("b".into(), false)]);
        // `c` switches `d` on, whose group has `e` on: `d`'s own check refuses, as `d`
        // has no `@auto-disable`.
        let (node, _) = kinds(plan(p.nodes(), &[("c", true)], Resolve::Refuse).unwrap_err());
        assert_eq!(node, "d");
        let s = plan(p.nodes(), &[("c", true)], Resolve::Resolve).unwrap();
        assert_eq!(
            changes(&s),
            [("c".into(), true), ("d".into(), true), ("e".into(), false)]
        );
    }

    #[test]
    fn requirements_are_kept_and_dangling_ones_warn_when_resolving() {
        let p = preset(&[
            ("a", "{{// @requires b}}", false),
            ("b", "", true),
            ("c", "{{// @exclusive-with b}}", false),
            (
                "d",
                "{{// @requires nowhere}}{{// @deprecated use a}}",
                false,
            ),
        ]);
        // `a` relies on `b`, so `c` cannot switch it off in the same request.
        let e = plan(p.nodes(), &[("a", true), ("c", true)], Resolve::Resolve).unwrap_err();
        assert_eq!(kinds(e).1[0].0, IssueKind::Unresolvable);
        let e = plan(p.nodes(), &[("d", true)], Resolve::Refuse).unwrap_err();
        assert_eq!(kinds(e).1, [(IssueKind::Requires, vec![])]);
        let s = plan(p.nodes(), &[("d", true)], Resolve::Resolve).unwrap();
        let warned: Vec<IssueKind> = s.warnings.iter().map(|w| w.kind).collect();
        assert_eq!(warned, [IssueKind::Deprecated, IssueKind::Requires]);
    }

    #[test]
    fn soft_conflicts_warn_and_name_a_few() {
        let mut nodes = vec![(
            "x".to_string(),
            "{{// @conflicts-with y}}".to_string(),
            false,
        )];
        for i in 0..50 {
            nodes.push((format!("y{i}"), String::new(), true));
        }
        // Fifty nodes named `y` (folded names match), on.
        let prompts: Vec<_> = nodes
            .iter()
            .map(|(id, c, on)| {
                let name = if id == "x" { "x" } else { "y" };
                serde_json::json!({"identifier": id, "name": name, "content": c, "enabled": on})
            })
            .collect();
        let p = Preset::from_json(
            serde_json::json!({ "prompts": prompts })
                .to_string()
                .as_bytes(),
        )
        .unwrap();
        let s = plan(p.nodes(), &[("x", true)], Resolve::Refuse).unwrap();
        assert_eq!(s.warnings.len(), 1);
        assert_eq!(s.warnings[0].others.len(), NAMED);
    }

    #[test]
    fn many_members_and_references_stay_linear() {
        // Every node in one group and excluding every other by a shared name: switching them
        // all on with resolution touches each once.
        let n = 10_000;
        let content = "{{// @mutual-exclusive-group g}}{{// @exclusive-with same}}{{// @conflicts-with same}}";
        let prompts: Vec<_> = (0..n)
            .map(|i| serde_json::json!({"identifier": format!("n{i}"), "name": "same", "content": content, "enabled": i % 2 == 0}))
            .collect();
        let p = Preset::from_json(
            serde_json::json!({ "prompts": prompts })
                .to_string()
                .as_bytes(),
        )
        .unwrap();
        let ask: Vec<String> = (0..n)
            .filter(|i| i % 2 == 1)
            .map(|i| format!("n{i}"))
            .collect();
        let ask: Vec<(&str, bool)> = ask.iter().map(|s| (s.as_str(), true)).collect();
        // The second asked-for member meets the first: refused, whatever the mode.
        assert!(plan(p.nodes(), &ask, Resolve::Resolve).is_err());
        let s = plan(p.nodes(), &ask[..1], Resolve::Resolve).unwrap();
        assert_eq!(s.changes.len(), 1 + n / 2);
    }
}
