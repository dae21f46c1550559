//! Issue 41's reading of the authors' structure, against the real corpus presets: the counts
//! the issue measured with the extension's own expressions (NemoEngine 11.5.2: 456 nodes, 443
//! with directives, 395 tooltips, 394 badges, 186 members of 33 exclusive groups of 1–31, 49
//! headers; NemoNet 2.0, Magpie, Lucid Loom's `━` headers without directives, whose 11 tooltips
//! are plain comments opening the content).

mod support;

struct Want {
    file: &'static str,
    nodes: usize,
    tooltips: usize,
    badges: usize,
    categorised: usize,
    grouped: usize,
    groups: usize,
    headers: usize,
}

#[test]
fn the_corpus_presets_read_as_the_extension_reads_them() {
    let Some(corpus) = support::corpus_presets() else {
        return;
    };
    let wants = [
        Want {
            file: "NemoEngine-11.5.2",
            nodes: 456,
            tooltips: 395,
            badges: 394,
            categorised: 443,
            grouped: 186,
            groups: 33,
            headers: 49,
        },
        Want {
            file: "NemoNet-2.0",
            nodes: 511,
            tooltips: 441,
            badges: 440,
            categorised: 469,
            grouped: 171,
            groups: 19,
            headers: 44,
        },
        Want {
            file: "Magpie-v1-Beta-2.1",
            nodes: 79,
            tooltips: 39,
            badges: 27,
            categorised: 59,
            grouped: 30,
            groups: 7,
            headers: 8,
        },
        Want {
            file: "lucidloom",
            nodes: 326,
            tooltips: 11,
            badges: 0,
            categorised: 0,
            grouped: 0,
            groups: 0,
            headers: 29,
        },
    ];
    for want in wants {
        let Some((_, preset)) = corpus.iter().find(|(name, _)| name.contains(want.file)) else {
            panic!("{} is not in the corpus", want.file);
        };
        let o = preset.outline();
        let count = |f: &dyn Fn(&stpreset::outline::OutlineNode) -> bool| {
            o.nodes.iter().filter(|n| f(n)).count()
        };
        let got = (
            o.nodes.len(),
            count(&|n| n.tooltip.is_some()),
            count(&|n| !n.badges.is_empty()),
            count(&|n| !n.directives.categories.is_empty()),
            count(&|n| !n.groups.is_empty()),
            o.groups.len(),
            count(&|n| n.header.is_some()),
        );
        assert_eq!(
            got,
            (
                want.nodes,
                want.tooltips,
                want.badges,
                want.categorised,
                want.grouped,
                want.groups,
                want.headers
            ),
            "{}",
            want.file
        );
        // Every node under a header counts once in its main section.
        let under: usize = o.sections.iter().map(|s| s.total).sum();
        let placed = o
            .nodes
            .iter()
            .filter(|n| n.header.is_none() && !n.section.is_empty())
            .count();
        assert_eq!(under, placed, "{}", want.file);
        // Members of a group are the nodes naming it, in display order.
        for g in &o.groups {
            let named: Vec<&str> = o
                .nodes
                .iter()
                .filter(|n| n.groups.contains(&g.name))
                .map(|n| n.identifier.as_str())
                .collect();
            assert_eq!(g.members, named, "{}", g.name);
        }
        // The audit's header findings: Lucid Loom's 23 headers that carry XML wrappers and two
        // of NemoNet's; NemoEngine's and Magpie's headers are comments only.
        let headers_with_text = preset
            .audit()
            .iter()
            .filter(|d| {
                d.kind == stpreset::DiagnosticKind::DirectiveProblem
                    && d.message.starts_with("the header")
            })
            .count();
        assert_eq!(
            headers_with_text,
            match want.file {
                "lucidloom" => 23,
                "NemoNet-2.0" => 2,
                _ => 0,
            },
            "{}",
            want.file
        );
        // The JSON every front end prints carries the three parts.
        let json: serde_json::Value = serde_json::from_str(&o.to_json()).unwrap();
        assert_eq!(json["nodes"].as_array().map(Vec::len), Some(want.nodes));
        assert!(json["groups"].is_array() && json["sections"].is_array());
    }
}

/// `stpreset nodes`: the sections as headings with their counts, each node with its switch,
/// group and badge, its tooltip under it; `--format json` is the library's outline.
#[test]
fn the_cli_lists_nodes_by_section() {
    let preset = br#"{"prompts": [
        {"identifier": "top", "name": "Loose", "content": "x"},
        {"identifier": "h", "name": "=== Style ===", "content": ""},
        {"identifier": "s", "name": "< Length >", "content": ""},
        {"identifier": "a", "name": "Terse", "content": "{{// @tooltip Short replies.}}{{// @badge LEN}}{{// @mutual-exclusive-group len}}Be terse."},
        {"identifier": "b", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}Be lush."}],
        "prompt_order": [{"character_id": 100001, "order": [
            {"identifier": "top", "enabled": true}, {"identifier": "h", "enabled": true},
            {"identifier": "s", "enabled": true}, {"identifier": "a", "enabled": true},
            {"identifier": "b", "enabled": false}]}]}"#;
    let path = support::temp("outline-nodes.json", preset);
    let out = support::stpreset(&["nodes", support::arg(&path)], None);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    assert_eq!(
        support::text(&out.stdout),
        "[x] Loose  top\n# Style (1/2)\n## Length (1/2)\n    [x] Terse  a  (one of: len)  [LEN]\n        Short replies.\n    [ ] Lush  b  (one of: len)\n"
    );
    let out = support::stpreset(&["nodes", support::arg(&path), "--format", "json"], None);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["groups"][0]["members"], serde_json::json!(["a", "b"]));
    assert_eq!(json["sections"][0]["sections"][0]["title"], "Length");
    assert_eq!(
        json["nodes"][3]["section"],
        serde_json::json!(["Style", "Length"])
    );
}

/// `stpreset store toggle`: a switch that breaks an exclusive group is refused with the nodes
/// on and the author's message, and nothing changes; `--resolve` switches the other member off
/// and prints it; `store nodes --sections` shows the outline of the stored preset.
#[test]
fn the_store_toggles_under_the_authors_constraints() {
    let preset = br#"{"prompts": [
        {"identifier": "h", "name": "=== Style ===", "content": ""},
        {"identifier": "a", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}Be terse."},
        {"identifier": "b", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}{{// @exclusive-with-message One length only.}}{{// @deprecated use Terse}}Be lush.", "enabled": false}]}"#;
    let path = support::temp("outline-store.json", preset);
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("s.sqlite");
    let store = |args: &[&str]| {
        let mut all = vec!["store", "--db", support::arg(&db), "--server", "5"];
        all.extend_from_slice(args);
        support::stpreset(&all, None)
    };
    assert!(store(&["import", support::arg(&path)]).status.success());
    let out = store(&["toggle", "1", "b=on"]);
    assert!(!out.status.success());
    let err = support::text(&out.stderr);
    assert!(
        err.contains("on now: \"Terse\"")
            && err.contains("One length only.")
            && err.contains("--resolve"),
        "{err}"
    );
    let out = store(&["nodes", "1", "--sections"]);
    assert_eq!(
        support::text(&out.stdout),
        "# Style (1/2)\n  [x] Terse  a  (one of: len)\n  [ ] Lush  b  (one of: len)\n"
    );
    let out = store(&["toggle", "1", "b=on", "--resolve"]);
    assert!(out.status.success(), "{}", support::text(&out.stderr));
    assert!(
        support::text(&out.stdout).starts_with("a=off\t"),
        "{}",
        support::text(&out.stdout)
    );
    assert_eq!(
        support::text(&out.stderr),
        "warning: \"Lush\" is deprecated\n"
    );
    let out = store(&["nodes", "1", "--sections", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let on: Vec<bool> = json["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["enabled"].as_bool().unwrap())
        .collect();
    assert_eq!(on, [true, false, true]);
    // JSON: every switch, what was resolved, the warnings with the author's words.
    let out = store(&["toggle", "1", "a=on", "--resolve", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        json["changes"][1],
        serde_json::json!({"identifier": "b", "enabled": false})
    );
    assert_eq!(json["resolved"][0]["kind"], "mutual-exclusive-group");
}
