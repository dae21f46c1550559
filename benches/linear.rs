//! Every input dimension a stranger controls, at size n and 10n: prints one table row per
//! dimension with the ratio t(10n) / t(n), which must stay near 10 (linear) and never above 12.
//!
//! `cargo bench --bench linear` (all rows) or `cargo bench --bench linear -- FILTER`.
//! Each size runs several times and keeps the fastest, so a busy second core (a fuzzer, a
//! build) inflates both sizes alike rather than one. Criterion would take an hour for the
//! ~300 rows; the rows here only need a ratio, not a confidence interval.
//!
//! Wall time also grows when the 10n input outgrows the CPU caches. So a row whose time ratio
//! is above 12 is measured again in instructions, by running this binary on that one input
//! under `valgrind --tool=callgrind` (repeatable, blind to caches and the other core); the
//! instruction ratio is then the verdict. Without valgrind the time ratio stands.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;
use stpreset::{Context, Limits, Preset, Template, report::TextReport};

/// Limits with room for the 10n inputs (several MB), so the engine does all the work instead
/// of refusing or cutting the input.
fn roomy() -> Limits {
    let mut l = Limits::default();
    l.preset_bytes = Limits::MAX.preset_bytes;
    l.template_bytes = Limits::MAX.template_bytes;
    l.output_bytes = Limits::MAX.output_bytes;
    l.work_bytes = Limits::MAX.work_bytes;
    l.variables_total_bytes = Limits::MAX.variables_total_bytes;
    l.variable_bytes = Limits::MAX.variable_bytes;
    l
}

fn context(history: usize) -> Context {
    let mut items = vec![
        json!({"tag": "SYSTEM_PERSONA_PROMPT", "role": "system", "text": "{{user}}'s friend"}),
    ];
    for i in 0..history {
        let role = if i % 2 == 0 { "user" } else { "model" };
        items.push(
            json!({"tag": "DIALOGUE_HISTORY", "role": role, "text": format!("message {i}"),
                          "time": "2026-11-29T16:00:00Z"}),
        );
    }
    let ctx = json!({"user": "Alice", "char": "Tomori", "now": "2026-11-29T17:07:00Z",
                     "description": "A {{user}} maiden {user}", "seed": 1, "chat_id": "c",
                     "capabilities": {"web_search": true}, "tools": ["web_search"],
                     "tool_names": {"t": "tool"}, "globals": {"g": "1"}, "items": items});
    let mut ctx = Context::from_json(&serde_json::to_vec(&ctx).expect("json")).expect("context");
    ctx.options.limits = roomy();
    ctx
}

/// Fastest of `runs` timings of `f`.
fn fastest(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

enum Mode {
    /// Time every row matching the filter.
    Table { filter: Option<String> },
    /// Run one row's input of one size once (what callgrind measures).
    One { name: String, n: usize },
}

struct Table {
    mode: Mode,
    worst: f64,
    rows: usize,
}

impl Table {
    /// Times `run(make(n))` and `run(make(10n))`; the input is built outside the timing.
    fn row<T>(&mut self, name: &str, n: usize, make: impl Fn(usize) -> T, run: impl Fn(&T)) {
        match &self.mode {
            Mode::One { name: one, n } if one == name => {
                run(&make(*n));
                return;
            }
            Mode::One { .. } => return,
            Mode::Table { filter }
                if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) =>
            {
                return;
            }
            Mode::Table { .. } => {}
        }
        let small = make(n);
        let large = make(10 * n);
        run(&small); // warm up allocator and caches
        let t1 = fastest(5, || run(black_box(&small)));
        let t10 = fastest(3, || run(black_box(&large)));
        drop((small, large));
        let time_ratio = t10.as_secs_f64() / t1.as_secs_f64().max(1e-9);
        let instructions = (time_ratio > 12.0)
            .then(|| Some((instructions(name, n)?, instructions(name, 10 * n)?)))
            .flatten();
        let (ratio, detail) = match instructions {
            Some((i1, i10)) => {
                let r = i10 as f64 / i1.max(1) as f64;
                (
                    r,
                    format!(" (time {time_ratio:.1}; instructions {i1} → {i10})"),
                )
            }
            None => (time_ratio, String::new()),
        };
        self.worst = self.worst.max(ratio);
        self.rows += 1;
        let flag = if ratio > 12.0 {
            "  <-- SUPERLINEAR"
        } else {
            ""
        };
        println!(
            "| {name} | {n} | {:.3} ms | {:.3} ms | {ratio:.1}{detail} |{flag}",
            t1.as_secs_f64() * 1e3,
            t10.as_secs_f64() * 1e3
        );
    }
}

/// Instructions this binary executes for one row at size `n`, counted by callgrind (`None`
/// when valgrind is missing). Includes process start-up, the same for both sizes.
fn instructions(name: &str, n: usize) -> Option<u64> {
    let exe = std::env::current_exe().ok()?;
    let out = std::process::Command::new("valgrind")
        .args(["--tool=callgrind", "--callgrind-out-file=/dev/null"])
        .arg(exe)
        .args(["--one", name, &n.to_string()])
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let line = stderr.lines().find(|l| l.contains("Collected :"))?;
    line.rsplit(':').next()?.trim().parse().ok()
}

fn template(src: &str, ctx: &Context) {
    let t = Template::compile_with(src, &roomy());
    black_box(t.render(ctx));
}

fn preset(bytes: &[u8], ctx: &Context) {
    if let Ok(p) = Preset::from_json_with(bytes, &roomy()) {
        black_box(p.compile().render(ctx));
        black_box(p.audit());
    }
}

/// Every catalog macro, and the argument shapes a stranger can scale.
const MACROS: &[&str] = &[
    "user",
    "char",
    "bot",
    "description",
    "personality",
    "scenario",
    "persona",
    "mesExamples",
    "mesExamplesRaw",
    "lastMessage",
    "lastUserMessage",
    "lastCharMessage",
    "model",
    "char_version",
    "time",
    "date",
    "weekday",
    "isotime",
    "isodate",
    "datetimeformat",
    "idle_duration",
    "setvar",
    "addvar",
    "incvar",
    "decvar",
    "getvar",
    "setglobalvar",
    "addglobalvar",
    "incglobalvar",
    "decglobalvar",
    "getglobalvar",
    "random",
    "pick",
    "roll",
    "newline",
    "trim",
    "noop",
    "banned",
    "reverse",
    "group",
    "unknownmacro",
];

/// A named template generator and its base size.
type Shape = (&'static str, usize, fn(usize) -> String);

fn templates(t: &mut Table) {
    let ctx = context(20);
    let tpl = |src: &String| template(src, &ctx);
    for m in MACROS {
        t.row(
            &format!("macro/{m}/repeated"),
            500,
            |n| format!("{{{{{m}::k::v}}}}").repeat(n),
            tpl,
        );
        t.row(
            &format!("macro/{m}/long-argument"),
            20_000,
            |n| format!("{{{{{m}::{}}}}}", "aé,[".repeat(n / 4)),
            tpl,
        );
        t.row(
            &format!("macro/{m}/many-separators"),
            2_000,
            |n| format!("{{{{{m}::{}x}}}}", "::".repeat(n)),
            tpl,
        );
        t.row(
            &format!("macro/{m}/nested-tags-in-argument"),
            500,
            |n| format!("{{{{{m}::{}}}}}", "{{user}}".repeat(n)),
            tpl,
        );
        t.row(
            &format!("macro/{m}/deeply-nested"),
            10,
            |n| format!("{}x{}", format!("{{{{{m}::").repeat(60), "}}".repeat(60)).repeat(n),
            tpl,
        );
        t.row(
            &format!("macro/{m}/legacy-forms"),
            500,
            |n| format!("{{{{{m}:a,b}}}}{{{{{m} 1d6}}}}").repeat(n),
            tpl,
        );
    }
    let shapes: &[Shape] = &[
        ("datetimeformat/unmatched-brackets", 100_000, |n| {
            format!("{{{{datetimeformat::{}}}}}", "[".repeat(n))
        }),
        ("datetimeformat/literal-brackets", 50_000, |n| {
            format!("{{{{datetimeformat::{}}}}}", "[a]".repeat(n))
        }),
        ("datetimeformat/tokens", 50_000, |n| {
            format!("{{{{datetimeformat::{}}}}}", "YYYY Do dddd ".repeat(n / 4))
        }),
        ("random/many-items", 100_000, |n| {
            format!("{{{{random::{}}}}}", "a,".repeat(n))
        }),
        ("random/escaped-commas", 100_000, |n| {
            format!("{{{{random:{}}}}}", "\\,".repeat(n))
        }),
        ("random/many-arguments", 100_000, |n| {
            format!("{{{{random{}}}}}", "::a".repeat(n))
        }),
        ("pick/many-items", 100_000, |n| {
            format!("{{{{pick::{}}}}}", "a,".repeat(n))
        }),
        ("roll/long-digits", 100_000, |n| {
            format!(
                "{{{{roll:{}d{}+{}}}}}",
                "9".repeat(n),
                "9".repeat(n),
                "9".repeat(n)
            )
        }),
        ("setvar/distinct-keys", 20_000, |n| {
            (0..n).map(|i| format!("{{{{setvar::k{i}::v}}}}")).collect()
        }),
        // Variables live in ordered maps: keys sharing a long prefix make every comparison
        // read the prefix (a lookup costs log n of them).
        ("setvar/shared-prefix-keys", 2_000, |n| {
            let prefix = "p".repeat(64);
            (0..n)
                .map(|i| format!("{{{{setvar::{prefix}{i}::v}}}}{{{{getvar::{prefix}{i}}}}}"))
                .collect()
        }),
        ("setvar/long-key", 200_000, |n| {
            format!("{{{{setvar::{}::v}}}}{{{{getvar::x}}}}", "k".repeat(n))
        }),
        ("setvar/long-value", 200_000, |n| {
            format!("{{{{setvar::k::{}}}}}{{{{getvar::k}}}}", "v".repeat(n))
        }),
        ("addvar/string-growth", 20_000, |n| {
            "{{addvar::k::abc}}".repeat(n) + "{{getvar::k}}"
        }),
        ("addvar/numbers", 20_000, |n| {
            "{{addvar::k::1.5}}".repeat(n) + "{{getvar::k}}"
        }),
        ("getvar/distinct-keys", 20_000, |n| {
            (0..n).map(|i| format!("{{{{getvar::k{i}}}}}")).collect()
        }),
        ("getvar/doubling", 200, |n| {
            "{{setvar::a::xy}}".to_string()
                + &"{{setvar::a::{{getvar::a}}{{getvar::a}}}}".repeat(n)
                + "{{getvar::a}}"
        }),
        ("reverse/multibyte", 200_000, |n| {
            format!("{{{{reverse::{}}}}}", "aé😀".repeat(n / 3))
        }),
        ("blocks/nested-if", 20_000, |n| "{{#if user}}".repeat(n)),
        ("blocks/if-else-chain", 20_000, |n| {
            "{{#if user}}a{{else}}b{{/if}}".repeat(n)
        }),
        ("blocks/stray-closers", 20_000, |n| {
            "{{/if}}{{else}}{{/unless}}".repeat(n)
        }),
        ("blocks/malformed", 20_000, |n| {
            "{{#if a b}}x{{else}}{{else}}{{/unless}}".repeat(n)
        }),
        ("blocks/tomori", 20_000, |n| {
            "{{if capability:web_search}}a{{else}}b{{/if}}{{if !tool_family:x}}c{{/if}}".repeat(n)
        }),
        ("blocks/conditions-with-side-effects", 20_000, |n| {
            "{{#if {{incvar::n}}}}x{{/if}}".repeat(n)
        }),
        ("syntax/unclosed-openers", 50_000, |n| "{{a ".repeat(n)),
        ("syntax/unclosed-arguments", 50_000, |n| "{{m::".repeat(n)),
        ("syntax/brace-run", 100_000, |n| "{".repeat(n)),
        ("syntax/close-run", 100_000, |n| "}".repeat(n)),
        ("syntax/escapes", 100_000, |n| "\\{\\}\\\\".repeat(n)),
        ("syntax/comment-without-end", 50_000, |n| {
            format!("{{{{// {}", "{{x}} ".repeat(n))
        }),
        ("syntax/many-comments", 50_000, |n| {
            "{{// c {{user}} }}".repeat(n)
        }),
        ("placeholders/tool-and-identity", 50_000, |n| {
            "{t} {user} {char} {unknown} <USER> <BOT>".repeat(n)
        }),
        ("placeholders/long-single-brace", 100_000, |n| {
            format!("{{{}}}", "a".repeat(n))
        }),
        ("text/plain", 1_000_000, |n| "abc ".repeat(n / 4)),
        ("text/many-lines", 200_000, |n| "a\n".repeat(n)),
        ("trim/many", 50_000, |n| "  {{trim}}  ".repeat(n)),
        ("if/blocks-with-trim", 20_000, |n| {
            "{{if yes}}\n  a {{user}}\n{{else}}b{{/if}}{{if::}}x{{/if}}".repeat(n)
        }),
        ("if/inline", 20_000, |n| {
            "{{if::{{getvar::m}}::on{{else}}off}}{{if::!x::y}}".repeat(n)
        }),
        ("if/literal-conditions", 20_000, |n| {
            "{{if ! some text {{foo}}}}x{{/if}}{{if getvar::k}}y{{/if}}".repeat(n)
        }),
        ("if/nested-trim", 200, |n| {
            format!("{}x{}", "{{if 1}}\n  ".repeat(30), "\n{{/if}}".repeat(30)).repeat(n)
        }),
        ("if/inline-shorthand-conditions-nested", 200, |n| {
            format!("{}x{}", "{{if::.a ?? 1::".repeat(60), "}}".repeat(60)).repeat(n)
        }),
        ("if/inline-many-elses", 20_000, |n| {
            format!("{{{{if::1::{}}}}}", "a{{else}}".repeat(n))
        }),
        ("comments/scoped-pairs", 20_000, |n| {
            "a{{//}}b{{user}}{{#if x}}{{///}}c".repeat(n)
        }),
        ("comments/nested-openers", 50_000, |n| {
            format!("{}x{}", "{{//}}".repeat(n), "{{///}}".repeat(n))
        }),
        ("comments/unmatched-marks", 50_000, |n| {
            "{{//}}a{{///}}{{///}}b".repeat(n)
        }),
        ("shorthand/declarations", 20_000, |n| {
            (0..n)
                .map(|i| format!("{{{{.k{} += {i}}}}}{{{{$g++}}}}", i % 100))
                .collect()
        }),
        ("shorthand/reads-and-comparisons", 20_000, |n| {
            "{{.a = 5}}{{.a}}{{.a > 3}}{{.a == 5}}{{$b <= x}}".repeat(n)
        }),
        ("shorthand/selections", 20_000, |n| {
            "{{.u || {{.t = x}}y}}{{.a ?? {{user}}}}{{.v ||= 1}}{{.w ??= 2}}".repeat(n)
        }),
        ("shorthand/deep-values", 200, |n| {
            format!("{}x{}", "{{.a = ".repeat(60), "}}".repeat(60)).repeat(n)
        }),
        ("shorthand/deep-selections", 200, |n| {
            format!("{}x{}", "{{.a ?? ".repeat(60), "}}".repeat(60)).repeat(n)
        }),
        ("shorthand/bad-shapes", 20_000, |n| {
            "{{.x y {{user}}}}{{.a-}}{{.x++5}}{{...}}".repeat(n)
        }),
        ("shorthand/long-ident", 200_000, |n| {
            format!("{{{{.a{} = 1}}}}", "-b".repeat(n / 2))
        }),
        ("scoped/unpaired-openers", 50_000, |n| {
            "{{reverse}}a".repeat(n)
        }),
        ("scoped/unpaired-then-closers", 20_000, |n| {
            "{{reverse}}a".repeat(n) + &"{{/setvar}}".repeat(n)
        }),
        ("scoped/pairs", 20_000, |n| {
            "{{setvar::k}}a{{user}}{{/setvar}}{{reverse}} b {{/reverse}}".repeat(n)
        }),
        ("scoped/same-name-nested", 20_000, |n| {
            format!("{}x{}", "{{reverse}}".repeat(n), "{{/reverse}}".repeat(n))
        }),
        ("scoped/crossing-blocks", 20_000, |n| {
            "{{setvar::k}}a{{#if user}}b{{/setvar}}c{{/if}}".repeat(n)
        }),
        ("scoped/crossing-names", 20_000, |n| {
            "{{setvar::a}}X{{reverse}}Y{{/setvar}}Z{{/reverse}}".repeat(n)
        }),
        ("scoped/dissolved-by-else", 20_000, |n| {
            format!(
                "{{{{#if user}}}}{}{{{{else}}}}{}{{{{/if}}}}",
                "{{reverse}}a".repeat(n),
                "{{/reverse}}".repeat(n)
            )
        }),
        ("scoped/many-openers-one-closer", 20_000, |n| {
            "{{reverse}}a".repeat(n) + "{{/reverse}}"
        }),
        ("scoped/closers-with-arguments", 20_000, |n| {
            "{{/getvar::{{user}}}}{{/foo}}".repeat(n)
        }),
        ("scoped/nested-auto-trim", 200, |n| {
            format!("{}x{}", "{{trim}}\n  ".repeat(30), "\n{{/trim}}".repeat(30)).repeat(n)
        }),
        ("scoped/rejected-nested", 200, |n| {
            format!("{}x{}", "{{newline}}".repeat(30), "{{/newline}}".repeat(30)).repeat(n)
        }),
        ("scoped/declarations-in-content", 20_000, |n| {
            "{{setvar::k}}{{incvar::n}}{{getvar::k}}{{/setvar}}".repeat(n)
        }),
        ("scoped/comment-pairs-around-pairs", 20_000, |n| {
            "{{//}}{{reverse}}{{///}}a{{/reverse}}{{//}}{{/reverse}}{{///}}".repeat(n)
        }),
        ("shorthand/conditions", 20_000, |n| {
            "{{#if .a}}x{{/if}}{{if ! $b > 2}}y{{else}}z{{/if}}".repeat(n)
        }),
    ];
    for (name, n, make) in shapes {
        t.row(name, *n, make, tpl);
    }
    // Host-side dimension: history items read by `lastMessage`/`idle_duration` in every call.
    for m in ["lastMessage", "lastUserMessage", "idle_duration"] {
        let src = format!("{{{{{m}}}}}").repeat(1000);
        t.row(
            &format!("context/history-items/{m}"),
            20_000,
            context,
            |ctx| template(&src, ctx),
        );
    }
}

fn prompts(n: usize, content: impl Fn(usize) -> String) -> Vec<serde_json::Value> {
    (0..n)
        .map(|i| json!({"identifier": format!("n{i}"), "content": content(i)}))
        .collect()
}

fn imports(t: &mut Table) {
    let ctx = context(20);
    let run = |bytes: &Vec<u8>| preset(bytes, &ctx);
    let doc = |v: serde_json::Value| serde_json::to_vec(&v).expect("json");
    let story = |body: String| {
        doc(json!({"context": {"story_string": body}, "sysprompt": {"content": "S"}}))
    };
    t.row(
        "import/prompts",
        5_000,
        |n| doc(json!({"prompts": prompts(n, |_| "{{user}} {{setvar::k::v}}".into())})),
        run,
    );
    t.row("import/prompts-with-unknown-fields", 2_000, |n| doc(json!({"prompts": (0..n).map(|i| json!({
        "identifier": format!("n{i}"), "content": "x", "extra": {"deep": [1, 2, {"a": "b"}]}, "forbid_overrides": false,
        "injection_depth": "  42 ", "injection_order": 1e300})).collect::<Vec<_>>()})), run);
    t.row("import/duplicate-identifiers", 5_000, |n| doc(json!({"prompts": (0..n).map(|_| json!({"identifier": "same", "content": "x"})).collect::<Vec<_>>()})), run);
    for id in [100001, 100000] {
        t.row(&format!("import/prompt_order-{id}"), 5_000, |n| doc(json!({
            "prompts": prompts(n, |_| "x".into()),
            "prompt_order": [{"character_id": id, "order": (0..n).rev().map(|i| json!({"identifier": format!("n{i}"), "enabled": i % 2 == 0})).collect::<Vec<_>>()}]})), run);
    }
    t.row("import/prompt_order-string-id-unknown-and-repeated", 5_000, |n| doc(json!({
        "prompts": prompts(10, |_| "x".into()),
        "prompt_order": [{"character_id": "100001", "order": (0..n).map(|i| json!({"identifier": format!("n{}", i % 20)})).collect::<Vec<_>>()}]})), run);
    t.row("import/prompt_order-many-lists", 5_000, |n| doc(json!({
        "prompts": prompts(10, |_| "x".into()),
        "prompt_order": (0..n).map(|i| json!({"character_id": i, "order": []})).collect::<Vec<_>>()})), run);
    t.row("import/depth-nodes", 5_000, |n| doc(json!({"prompts": (0..n).map(|i| json!({"identifier": format!("d{i}"),
        "content": "J {{user}}", "injection_position": 1, "injection_depth": i % 7, "injection_order": i % 3})).chain([json!({"identifier": "chatHistory", "marker": true})]).collect::<Vec<_>>()})), run);
    t.row("import/long-content", 200_000, |n| doc(json!({"prompts": [{"identifier": "a", "content": "Text {{user}} é ".repeat(n / 16)}]})), run);
    // The authors' directives (issue 41), read by the audit and by `outline`: references
    // to other nodes, exclusive groups, and a line of `{{//` without an end.
    let directives = |n: usize| {
        doc(
            json!({"prompts": (0..n).map(|i| json!({"identifier": format!("n{i}"), "name": format!("< S{i} >"),
            "content": format!("{{{{// @mutual-exclusive-group g{}}}}}{{{{// @requires n{},n{},ghost}}}}", i / 2, (i + 1) % n, (i + 7) % n)}))
            .collect::<Vec<_>>()}),
        )
    };
    t.row(
        "import/directives-references-and-groups",
        5_000,
        directives,
        run,
    );
    t.row(
        "outline/directives-references-and-groups",
        5_000,
        |n| Preset::from_json_with(&directives(n), &roomy()).expect("preset"),
        |p| {
            black_box(p.outline());
        },
    );
    t.row(
        "import/directive-opened-never-closed",
        200_000,
        |n| {
            doc(json!({"prompts": [
        {"identifier": "a", "content": "{{//".repeat(n / 4)}]}))
        },
        run,
    );
    // Switching under the authors' constraints (issue 41): one node of a group whose other
    // members are all on, and all exclude it by a shared name, switched on with resolution
    // (every other member goes off); and half the nodes asked on, each warning of a soft
    // conflict with every node on.
    let group = |n: usize| {
        let content = "{{// @mutual-exclusive-group g}}{{// @exclusive-with same}}{{// @conflicts-with same}}";
        let bytes = doc(
            json!({"prompts": (0..n).map(|i| json!({"identifier": format!("n{i}"),
            "name": "same", "content": content, "enabled": i > 0})).collect::<Vec<_>>()}),
        );
        Preset::from_json_with(&bytes, &roomy()).expect("preset")
    };
    t.row("switch/one-against-a-group", 5_000, group, |p| {
        black_box(
            p.plan_switch(&[("n0", true)], stpreset::switch::Resolve::Resolve)
                .ok(),
        );
    });
    t.row(
        "switch/half-asked-on-with-soft-conflicts",
        5_000,
        |n| {
            let bytes = doc(json!({"prompts": (0..n).map(|i| json!({"identifier": format!("n{i}"),
                "name": "same", "content": "{{// @conflicts-with same}}", "enabled": i % 2 == 0})).collect::<Vec<_>>()}));
            let p = Preset::from_json_with(&bytes, &roomy()).expect("preset");
            let ids: Vec<String> = (0..n).filter(|i| i % 2 == 1).map(|i| format!("n{i}")).collect();
            (p, ids)
        },
        |(p, ids)| {
            let asked: Vec<(&str, bool)> = ids.iter().map(|id| (id.as_str(), true)).collect();
            black_box(p.plan_switch(&asked, stpreset::switch::Resolve::Refuse).ok());
        },
    );
    // Every node switched off by its own toggle (the packages' `compile(toggles)`, the
    // previewer's switches).
    t.row(
        "import/toggles",
        5_000,
        |n| {
            let bytes = doc(json!({"prompts": prompts(n, |_| "x".into())}));
            let p = stpreset::Preset::from_json_with(&bytes, &roomy()).expect("preset");
            let ids: Vec<String> = p.nodes().iter().map(|n| n.identifier.clone()).collect();
            (p, ids)
        },
        |(p, ids)| {
            let mut p = p.clone();
            p.set_enabled_all(ids.iter().map(|id| (id.as_str(), false)))
                .expect("known");
        },
    );
    for key in [
        "system",
        "wiBefore",
        "wiAfter",
        "description",
        "personality",
        "mesExamples",
        "persona",
        "custom",
    ] {
        t.row(
            &format!("legacy/placeholder-{key}"),
            20_000,
            |n| story(format!("{{{{{key}}}}}").repeat(n)),
            run,
        );
        t.row(
            &format!("legacy/sections-{key}"),
            10_000,
            |n| story(format!("{{{{#if {key}}}}}a{{{{{key}}}}}b{{{{/if}}}}").repeat(n)),
            run,
        );
    }
    t.row(
        "legacy/unclosed-sections",
        20_000,
        |n| story("{{#if system}}".repeat(n)),
        run,
    );
    t.row(
        "legacy/near-miss-placeholders",
        20_000,
        |n| story("{{systemx}}{{{system}".repeat(n)),
        run,
    );
    t.row(
        "legacy/trim-pieces",
        20_000,
        |n| story("a{{trim}}{{system}}".repeat(n)),
        run,
    );
    for field in ["root", "sysprompt", "context"] {
        t.row(
            &format!("legacy/post_history-{field}"),
            200_000,
            |n| {
                let text = "{{user}} after ".repeat(n / 15);
                let mut v = json!({"prompts": [{"identifier": "chatHistory", "marker": true}]});
                match field {
                    "root" => v["post_history"] = json!(text),
                    "sysprompt" => v["sysprompt"] = json!({"post_history": text}),
                    _ => v["context"] = json!({"post_history": text}),
                }
                doc(v)
            },
            run,
        );
    }
}

fn assembly_and_output(t: &mut Table) {
    let unknown_nodes = |n: usize| {
        let v = json!({"prompts": prompts(n, |_| "{{x}}{{y}} {{#if}}".into())});
        Preset::from_json_with(&serde_json::to_vec(&v).expect("json"), &roomy()).expect("preset")
    };
    let ctx = context(20);
    t.row("render/nodes", 5_000, unknown_nodes, |p| {
        black_box(p.compile().render(&ctx));
    });
    let history_preset = Preset::from_json(br#"{"prompts": [
        {"identifier": "main", "content": "{{user}}"}, {"identifier": "chatHistory", "marker": true},
        {"identifier": "d", "content": "J", "injection_position": 1, "injection_depth": 3}]}"#)
    .expect("preset")
    .compile();
    t.row("render/history-items", 20_000, context, |ctx| {
        black_box(history_preset.render(ctx));
    });
    // Depth nodes at every depth and many orders and roles, against a history as long.
    for (name, mode) in [
        ("merge", stpreset::options::Injection::Merge),
        ("separate", stpreset::options::Injection::Separate),
    ] {
        t.row(
            &format!("render/injections-{name}"),
            2_000,
            |n| {
                let roles = ["system", "user", "assistant"];
                let mut prompts = vec![json!({"identifier": "chatHistory", "marker": true})];
                prompts.extend((0..n).map(|i| {
                    json!({"identifier": format!("d{i}"), "role": roles[i % 3],
                           "content": " x{{user}} ", "injection_position": 1,
                           "injection_depth": i % (n / 2 + 1), "injection_order": (i * 7) % 13})
                }));
                let v = json!({ "prompts": prompts });
                let p = Preset::from_json_with(&serde_json::to_vec(&v).expect("json"), &roomy())
                    .expect("preset")
                    .compile();
                let mut ctx = context(n);
                ctx.options.injection = mode;
                (p, ctx)
            },
            |(p, ctx)| {
                black_box(p.render(ctx));
            },
        );
    }
    t.row(
        "render/diagnostics-one-node",
        20_000,
        |n| {
            let v = json!({"prompts": [{"identifier": "a", "content": "{{x}}".repeat(n)}]});
            Preset::from_json_with(&serde_json::to_vec(&v).expect("json"), &roomy())
                .expect("preset")
        },
        |p| {
            black_box(p.compile().render(&ctx));
        },
    );
    // The CLI's output formats, as the library writes them.
    for (name, json_out) in [("output/text", false), ("output/json", true)] {
        t.row(
            name,
            5_000,
            |n| {
                let p = unknown_nodes(n);
                let out = p.compile().render(&ctx);
                (p, out)
            },
            |(p, out)| {
                let mut buf = Vec::new();
                if json_out {
                    serde_json::to_writer(&mut buf, out).expect("json");
                    serde_json::to_writer(&mut buf, &p.audit()).expect("json");
                } else {
                    TextReport::preset("p.json", p)
                        .write(&mut buf, &out.diagnostics)
                        .expect("text");
                    TextReport::preset("p.json", p)
                        .write(&mut buf, &p.audit())
                        .expect("text");
                    for m in &out.messages {
                        buf.extend_from_slice(
                            stpreset::diagnostic::terminal_safe(&m.text()).as_bytes(),
                        );
                    }
                }
                black_box(buf);
            },
        );
    }
    t.row(
        "output/text-one-long-line",
        20_000,
        |n| "{{x}}".repeat(n),
        |src| {
            let tpl = Template::compile_with(src, &roomy());
            let out = tpl.render(&ctx);
            let mut buf = Vec::new();
            TextReport::template("t.txt", tpl.source())
                .write(&mut buf, &out.diagnostics)
                .expect("text");
            for d in &out.diagnostics {
                buf.extend_from_slice(d.render("t.txt", Some(tpl.source())).as_bytes());
            }
            black_box(buf);
        },
    );
    t.row("context/parse", 20_000, |n| {
        let items: Vec<_> = (0..n).map(|i| json!({"tag": "DIALOGUE_HISTORY", "role": "user", "text": format!("m{i} {{{{user}}}}")})).collect();
        serde_json::to_vec(&json!({"items": items, "globals": {"a": "b"}})).expect("json")
    }, |bytes| {
        black_box(Context::from_json(bytes).ok());
    });
}

/// SPEC §14: a preset's settings that reach the prompt or the request — template settings
/// placed in the prompt, and post-processing the preset can turn on.
fn settings(t: &mut Table) {
    use stpreset::{ProviderOptions, Role, Shape, provider::ChatMessage, provider::Names};
    let walk = json!([
        {"identifier": "main", "content": "Main"},
        {"identifier": "charPersonality", "marker": true},
        {"identifier": "worldInfoBefore", "marker": true},
        {"identifier": "chatHistory", "marker": true}
    ]);
    let render = |preset: &Preset, ctx: &Context| {
        let out = preset.compile().render(ctx);
        black_box(out.to_request(&ctx.provider_options));
    };
    let preset = |settings: serde_json::Value| {
        let mut v = settings;
        v["prompts"] = walk.clone();
        Preset::from_json_with(&serde_json::to_vec(&v).expect("json"), &roomy()).expect("preset")
    };
    let ctx = |items: Vec<serde_json::Value>, group: Vec<String>| {
        let v = json!({"items": items, "group": group, "char": "C", "provider_options": {"shape": "openai"}});
        let mut c = Context::from_json(&serde_json::to_vec(&v).expect("json")).expect("context");
        c.options.limits = roomy();
        c
    };
    t.row(
        "settings/personality-format-many-items",
        20_000,
        |n| {
            let items = (0..n)
                .map(|i| json!({"tag": "SYSTEM_PERSONALITY", "role": "system", "text": format!("trait {i}")}))
                .collect();
            (preset(json!({"personality_format": "[{{personality}} / {{personality}}]"})), ctx(items, vec![]))
        },
        |(p, c)| render(p, c),
    );
    t.row(
        "settings/wi-format-many-placeholders",
        20_000,
        |n| {
            let lore =
                vec![json!({"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "lore"})];
            (
                preset(json!({"wi_format": "{0}".repeat(n)})),
                ctx(lore, vec![]),
            )
        },
        |(p, c)| render(p, c),
    );
    t.row(
        "settings/group-prompts-many-members",
        20_000,
        |n| {
            let group = (0..n).map(|i| format!("member{i}")).collect();
            let history = vec![json!({"tag": "DIALOGUE_HISTORY", "role": "model", "text": "hi"})];
            let settings = json!({"new_group_chat_prompt": "[Group: {{group}}]",
                "group_nudge_prompt": "[{{char}} next]", "send_if_empty": "[go on]",
                "custom_prompt_post_processing": "single"});
            (preset(settings), ctx(history, group))
        },
        |(p, c)| render(p, c),
    );
    // `single` tests every model turn against every group member's name (rule 12.2.A.a).
    t.row(
        "settings/single-mode-members-times-turns",
        5_000,
        |n| {
            let names = Names {
                user: "U".into(),
                char: "C".into(),
                group: (0..n).map(|i| format!("member{i}")).collect(),
            };
            let turns: Vec<ChatMessage> = (0..n)
                .map(|i| ChatMessage::new(Role::Model, format!("member{}x: turn {i}", i % 7)))
                .collect();
            (names, turns)
        },
        |(names, turns)| {
            let mut options = ProviderOptions::default();
            options.shape = Some(Shape::Anthropic);
            options.post_processing = stpreset::provider::PostProcessing::Single.into();
            black_box(stpreset::provider::convert(
                turns,
                &options,
                names,
                "claude-sonnet-4-5",
            ));
        },
    );
}

/// SPEC §12: the history budget (counted with tiktoken when built in) and the three shapes,
/// over the hostile shapes of the issue: many history items, one huge message, a million
/// spaces, all-empty messages.
fn provider(t: &mut Table) {
    use stpreset::{
        Message, Role, Shape, Source, Tag, options::Budget, tokens::Counter, tokens::Tokenizer,
    };
    let history = |text: String| {
        Message::with_parts(
            Role::User,
            vec![text],
            Source::Tag(Some(Tag::DialogueHistory)),
        )
    };
    let budget = |tokenizer, max| Budget::tokens(max).with_counter(Counter::Builtin(tokenizer));
    let shapes = |messages: &[Message]| {
        for shape in [Shape::OpenAi, Shape::Anthropic, Shape::Google] {
            let mut options = stpreset::ProviderOptions::default();
            options.shape = Some(shape);
            options.post_processing = stpreset::provider::PostProcessing::Strict.into();
            options.cache_at_depth = Some(2);
            let chat: Vec<stpreset::provider::ChatMessage> = messages
                .iter()
                .map(|m| stpreset::provider::ChatMessage::new(m.role, m.text().into_owned()))
                .collect();
            black_box(stpreset::provider::convert(
                &chat,
                &options,
                &stpreset::provider::Names::default(),
                "gpt-4o",
            ));
        }
    };
    for (name, tokenizer) in [("o200k", Tokenizer::O200k), ("approx", Tokenizer::Approx)] {
        t.row(
            &format!("budget/{name}/history-items-all-fit"),
            10_000,
            |n| {
                (0..n)
                    .map(|i| history(format!("Alice: message {i} about the shrine")))
                    .collect::<Vec<_>>()
            },
            |msgs| {
                let mut msgs = msgs.clone();
                black_box(budget(tokenizer, u32::MAX).apply(&mut msgs, "gpt-4o", usize::MAX));
            },
        );
    }
    t.row(
        "budget/o200k/one-huge-message",
        1_000_000,
        |n| vec![history("Hello world, this is text. ".repeat(n / 27))],
        |msgs| {
            let mut msgs = msgs.clone();
            black_box(budget(Tokenizer::O200k, 100).apply(&mut msgs, "gpt-4o", usize::MAX));
        },
    );
    // Counted in chunks at line breaks (a cache miss of a long text): runs of line breaks
    // that allow no cut, and lines that each allow one.
    for (name, unit) in [
        ("spaces", " "),
        ("one-letter-run", "a"),
        ("digits", "7"),
        ("line-breaks-before-a-slash", "\n\n/"),
        ("short-lines", "ab\n"),
    ] {
        t.row(
            &format!("tokens/o200k/{name}"),
            200_000,
            |n| vec![history(format!("x{}y", unit.repeat(n)))],
            |msgs| {
                let mut msgs = msgs.clone();
                black_box(budget(Tokenizer::O200k, 10).apply(&mut msgs, "gpt-4o", usize::MAX));
            },
        );
    }
    t.row(
        "budget/all-empty-messages",
        100_000,
        |n| (0..n).map(|_| history(String::new())).collect::<Vec<_>>(),
        |msgs| {
            let mut msgs = msgs.clone();
            black_box(budget(Tokenizer::O200k, 5).apply(&mut msgs, "gpt-4o", usize::MAX));
        },
    );
    t.row(
        "budget/drops-most-history",
        100_000,
        |n| (0..n).map(|i| history(format!("m{i}"))).collect::<Vec<_>>(),
        |msgs| {
            let mut msgs = msgs.clone();
            black_box(budget(Tokenizer::Words, 50).apply(&mut msgs, "", usize::MAX));
        },
    );
    t.row(
        "shapes/alternating-history",
        20_000,
        |n| {
            (0..n)
                .map(|i| {
                    let role = if i % 2 == 0 { Role::User } else { Role::Model };
                    Message::with_parts(
                        role,
                        vec![format!("m{i}")],
                        Source::Tag(Some(Tag::DialogueHistory)),
                    )
                })
                .collect::<Vec<_>>()
        },
        |msgs| shapes(msgs),
    );
    t.row(
        "shapes/same-role-run",
        20_000,
        |n| (0..n).map(|i| history(format!("m{i}"))).collect::<Vec<_>>(),
        |msgs| shapes(msgs),
    );
    t.row(
        "shapes/whitespace-only",
        20_000,
        |n| (0..n).map(|_| history(" \n ".into())).collect::<Vec<_>>(),
        |msgs| shapes(msgs),
    );
}

/// A compiled preset carrying `scripts` (SPEC §13), with roomy limits.
fn scripted(scripts: serde_json::Value) -> stpreset::CompiledPreset {
    let doc = json!({"prompts": [{"identifier": "main", "content": "x"},
                                 {"identifier": "chatHistory", "marker": true}],
                     "extensions": {"regex_scripts": scripts}});
    Preset::from_json_with(&serde_json::to_vec(&doc).expect("json"), &roomy())
        .expect("preset")
        .compile()
}

fn store(p: &stpreset::CompiledPreset, text: &str) {
    let mut ctx = context(0);
    ctx.allow_preset_regex = true;
    ctx.options.limits.regex_pass_steps = Limits::MAX.regex_pass_steps;
    black_box(p.store_message(text, stpreset::Role::Model, &ctx));
}

/// Regex scripts (SPEC §13): how many, how long the text, how many matches, how large the
/// replacement, trim strings, macros in replacements, and the prompt pass over history items.
fn regex(t: &mut Table) {
    let plain = |find: &str, repl: &str| json!({"findRegex": find, "replaceString": repl, "placement": [2]});
    t.row(
        "regex/script-count",
        200,
        |n| {
            (
                scripted(json!(vec![plain("/<plan>[\\s\\S]*?<\\/plan>/g", ""); n])),
                "x <plan>y</plan> z ".repeat(20),
            )
        },
        |(p, text)| store(p, text),
    );
    t.row(
        "regex/script-count-absent-literal",
        2_000,
        |n| {
            (
                scripted(json!(vec![
                    plain("/<nemo-pad>[\\s\\S]*?<\\/nemo-pad>/g", "");
                    n
                ])),
                "plain reply text ".repeat(200),
            )
        },
        |(p, text)| store(p, text),
    );
    let one = scripted(json!([plain("/<think>[\\s\\S]*?<\\/think>/g", "")]));
    t.row(
        "regex/text-length",
        20_000,
        |n| "a<think>b</think>c ".repeat(n / 19),
        |text| store(&one, text),
    );
    let word = scripted(json!([plain("/\\bcat\\b/g", "dog")]));
    t.row(
        "regex/match-count",
        10_000,
        |n| "cat ".repeat(n),
        |text| store(&word, text),
    );
    let group = scripted(json!([plain("/(\\w+)/g", "[$1|$1]")]));
    t.row(
        "regex/match-count-values",
        10_000,
        |n| "ab ".repeat(n),
        |text| store(&group, text),
    );
    t.row(
        "regex/replacement-size",
        2_000,
        |n| scripted(json!([plain("/x/g", &"r$0".repeat(n))])),
        |p| store(p, &"x ".repeat(50)),
    );
    t.row(
        "regex/trim-strings",
        200,
        |n| {
            let trims: Vec<String> = (0..n).map(|i| format!("t{i}")).collect();
            scripted(json!([{"findRegex": "/(\\w+)/g", "replaceString": "$1", "placement": [2], "trimStrings": trims}]))
        },
        |p| store(p, &"word ".repeat(100)),
    );
    t.row(
        "regex/nested-macros-in-replacement",
        // Above the tag nesting limit (64), where the work grows with the levels past it.
        2_000,
        |n| {
            let repl = format!("{}$1{}", "{{reverse::".repeat(n), "}}".repeat(n));
            scripted(json!([plain("/(\\w+)/g", &repl)]))
        },
        |p| store(p, &"ab ".repeat(50)),
    );
    t.row(
        "regex/macro-replacement-matches",
        5_000,
        |n| "cat ".repeat(n),
        {
            let p = scripted(json!([plain("/(cat)/g", "{{getvar::$1}}{{user}}")]));
            move |text: &String| store(&p, text)
        },
    );
    // From a hostile review: shapes whose work the step count once missed.
    let same = scripted(json!([plain(&format!("/{}a/", "a|".repeat(3000)), "X")]));
    t.row(
        "regex/identical-prefix-alternatives",
        10_000,
        |n| "a".repeat(n),
        |text| store(&same, text),
    );
    let groups = scripted(json!([plain(
        &format!("/a(?:x{})/g", "()".repeat(1000)),
        "X"
    )]));
    t.row(
        "regex/groups-per-attempt",
        10_000,
        |n| "a".repeat(n),
        |text| store(&groups, text),
    );
    let tokens = scripted(json!([plain("/(?:)/g", &"$9".repeat(1000))]));
    t.row(
        "regex/empty-value-tokens",
        1_000,
        |n| "a".repeat(n),
        |text| store(&tokens, text),
    );
    t.row(
        "regex/periodic-trim-string",
        10_000,
        |n| {
            let trim = format!("{}b", "a".repeat(n / 2 - 1));
            let p = scripted(json!([{"findRegex": "/[^]+/", "replaceString": "$0",
                                     "placement": [2], "trimStrings": [trim]}]));
            (p, "a".repeat(n))
        },
        |(p, text)| store(p, text),
    );
    t.row(
        "regex/long-literal-pattern",
        1_600,
        |n| scripted(json!([plain(&format!("/{}/g", "a".repeat(n)), "X")])),
        |p| store(p, "aaaa b"),
    );
    let prompt = scripted(
        json!([{"findRegex": "/<plan>[\\s\\S]*?<\\/plan>/g", "placement": [2], "promptOnly": true}]),
    );
    t.row(
        "regex/prompt-pass-history",
        2_000,
        |n| {
            let mut ctx = context(n);
            for item in &mut ctx.items {
                item.text.push_str(" <plan>p</plan> tail");
            }
            ctx.allow_preset_regex = true;
            ctx.options.limits.regex_pass_steps = Limits::MAX.regex_pass_steps;
            ctx
        },
        |ctx| {
            black_box(prompt.prompt_pass(ctx));
        },
    );
}

/// The packages' `Chat` (issue 20) and lone-surrogate repair: what a chat participant's
/// messages (half emoji included) and a bot's turns cost.
fn chats(t: &mut Table) {
    // `text` as JSON string content: it may hold escapes such as a lone `\ud83d`.
    let items = |n: usize, text: &str| -> Vec<u8> {
        let item = format!(r#"{{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "{text}"}}"#);
        format!(r#"{{"items": [{}]}}"#, vec![item; n].join(",")).into_bytes()
    };
    t.row(
        "chat/context-with-lone-surrogates",
        20_000,
        |n| {
            let half = r"x\ud83d".repeat(n);
            format!(r#"{{"items": [{{"role": "user", "text": "{half}"}}]}}"#).into_bytes()
        },
        |json| {
            black_box(Context::from_json(json).expect("context"));
        },
    );
    t.row(
        "chat/build-items-each-with-a-surrogate",
        2_000,
        |n| items(n, r"hi \ud83d"),
        |json| {
            black_box(stpreset::Chat::from_json(json).expect("chat"));
        },
    );
    t.row(
        "chat/splices-one-item-each",
        2_000,
        |n| n,
        |&n| {
            let mut chat = stpreset::Chat::from_json(b"{}").expect("chat");
            for i in 0..n {
                let item = format!(r#"[{{"role": "user", "text": "m{i}"}}]"#);
                chat.splice_json(i, 0, item.as_bytes()).expect("splice");
            }
            black_box(chat.len());
        },
    );
    let compiled = Preset::from_json(
        br#"{"prompts": [{"identifier": "main", "content": "Hi"},
        {"identifier": "chatHistory", "marker": true}]}"#,
    )
    .expect("preset")
    .compile();
    t.row(
        "chat/render-and-pass-through-history",
        2_000,
        |n| stpreset::Chat::from_json(&items(n, "hello there")).expect("chat"),
        |chat| {
            let out = compiled.render(chat.context());
            let mut found = chat.passthrough();
            let mut memo = stpreset::passthrough::PartMemo::default();
            for m in &out.messages {
                for p in m.parts() {
                    if found.item_of(p).is_none() {
                        black_box(memo.part(p));
                    }
                }
            }
        },
    );
}

/// A World Info call over `books` and `history` (oldest first), with room for 10n inputs.
struct Lore {
    books: Vec<stpreset::Lorebook>,
    ctx: Context,
    settings: stpreset::lore::WiSettings,
    state: stpreset::lore::WiState,
    position: u64,
}

/// One activation of `l` at its position, with room for the 10n inputs.
fn lore_turn(l: &Lore) -> stpreset::activation::WiResult {
    let mut input = stpreset::activation::WiInput::new(&l.ctx);
    input.position = Some(l.position);
    input.max_context = Some(u64::MAX / 200);
    let mut rng = stpreset::activation::SeededRandom::new(1, l.position);
    let words =
        stpreset::tokens::Counter::Builtin(stpreset::tokens::Tokenizer::Words).for_model("");
    let mut limits = Limits::MAX;
    limits.regex_run_steps = Limits::default().regex_run_steps;
    stpreset::activation::activate(
        &l.books,
        &input,
        &l.settings,
        &l.state,
        &mut rng,
        &*words,
        &limits,
    )
}

fn lore_call(l: &Lore) {
    black_box(lore_turn(l));
}

fn lore_setup(entries: serde_json::Value, history: &[String]) -> Lore {
    let items: Vec<serde_json::Value> = history
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let role = if i % 2 == 0 { "user" } else { "model" };
            json!({"tag": "DIALOGUE_HISTORY", "role": role, "text": t})
        })
        .collect();
    let ctx = json!({"user": "Alice", "char": "Tomori", "items": items});
    let book = json!({ "entries": entries });
    let mut limits = Limits::MAX;
    limits.lore_max_book_bytes = Limits::MAX.lore_max_book_bytes;
    Lore {
        books: vec![
            stpreset::Lorebook::from_json("b", &serde_json::to_vec(&book).expect("json"), &limits)
                .expect("book"),
        ],
        ctx: Context::from_json(&serde_json::to_vec(&ctx).expect("json")).expect("context"),
        settings: stpreset::lore::WiSettings::default(),
        state: stpreset::lore::WiState::default(),
        position: history.len() as u64,
    }
}

fn entry(key: &str, content: &str) -> serde_json::Value {
    json!({"key": [key], "content": content})
}

/// SPEC §15.8's hostile dimensions of one activation call.
fn lore(t: &mut Table) {
    let chat = |n: usize| vec!["a chat about k0 and nothing else".to_string(); n];
    t.row(
        "lore/entries-all-matching",
        500,
        |n| {
            let e: serde_json::Map<_, _> = (0..n)
                .map(|i| (i.to_string(), entry("k0", "lore text")))
                .collect();
            lore_setup(serde_json::Value::Object(e), &chat(2))
        },
        lore_call,
    );
    // Issue 38's levels book: 128 entries at distinct `delayUntilRecursion` levels force the
    // most passes there are, and every pass gates each entry and tests its keys: with the
    // passes at their cap, the work is entries × keys.
    let levels = |entries: usize, keys: usize| {
        let e: serde_json::Map<_, _> = (0..entries)
            .map(|i| {
                let key: Vec<String> = (0..keys).map(|k| format!("zq{k}")).collect();
                let mut v = json!({"key": key, "content": format!("c{i}")});
                if i < 128 {
                    v["delayUntilRecursion"] = json!(i + 1);
                }
                (i.to_string(), v)
            })
            .collect();
        lore_setup(serde_json::Value::Object(e), &chat(2))
    };
    t.row(
        "lore/levels-128-passes-entries",
        200,
        |n| levels(n, 8),
        lore_call,
    );
    t.row(
        "lore/levels-128-passes-keys-per-entry",
        4,
        |n| levels(200, n),
        lore_call,
    );
    t.row(
        "lore/keys-per-entry",
        500,
        |n| {
            let keys: Vec<String> = (0..n).map(|i| format!("miss{i}")).collect();
            lore_setup(json!({"0": {"key": keys, "content": "x"}}), &chat(2))
        },
        lore_call,
    );
    t.row(
        "lore/scan-depth-and-history",
        200,
        |n| {
            let mut l = lore_setup(
                json!({"0": entry("never", "x"), "1": entry("k0", "y")}),
                &chat(n),
            );
            l.settings.scan_depth = n as u64;
            l
        },
        lore_call,
    );
    t.row(
        "lore/min-activations-walk-the-history",
        90,
        |n| {
            let mut l = lore_setup(json!({"0": entry("never", "x")}), &chat(n));
            l.settings.min_activations = 1;
            l
        },
        lore_call,
    );
    // SillyTavern's cubic case: entry i's content holds entry i+1's key.
    t.row(
        "lore/recursion-chain",
        100,
        |n| {
            let e: serde_json::Map<_, _> = (0..n)
                .map(|i| {
                    (
                        i.to_string(),
                        entry(&format!("k{i}"), &format!("then k{}", i + 1)),
                    )
                })
                .collect();
            lore_setup(serde_json::Value::Object(e), &chat(1))
        },
        lore_call,
    );
    t.row(
        "lore/group-size",
        500,
        |n| {
            let e: serde_json::Map<_, _> = (0..n)
                .map(|i| {
                    (
                        i.to_string(),
                        json!({"key": ["k0"], "content": "g", "group": "g, h"}),
                    )
                })
                .collect();
            lore_setup(serde_json::Value::Object(e), &chat(1))
        },
        lore_call,
    );
    t.row(
        "lore/timed-state-size",
        500,
        |n| {
            let e: serde_json::Map<_, _> = (0..n)
                .map(|i| {
                    (
                        i.to_string(),
                        json!({"key": ["k0"], "content": "s", "sticky": 5, "cooldown": 2}),
                    )
                })
                .collect();
            let mut l = lore_setup(serde_json::Value::Object(e), &chat(1));
            let first = lore_turn(&l);
            l.state = first.state;
            // The next turn: every sticky effect applies (the same position would drop them).
            l.position += 1;
            l
        },
        lore_call,
    );
    // Review: every sticky effect ends into its entry's cooldown (one lookup each, not a scan).
    t.row(
        "lore/state-stickies-ending-into-cooldowns",
        500,
        |n| {
            let e: serde_json::Map<_, _> = (0..n)
                .map(|i| {
                    let key = format!("k{i}");
                    (
                        i.to_string(),
                        json!({"key": [key], "content": "s", "sticky": 1, "cooldown": 3}),
                    )
                })
                .collect();
            let chat: Vec<String> = vec![
                (0..n)
                    .map(|i| format!("k{i}"))
                    .collect::<Vec<_>>()
                    .join(" "),
            ];
            let mut l = lore_setup(serde_json::Value::Object(e), &chat);
            l.state = lore_turn(&l).state;
            l.position += 1;
            l
        },
        lore_call,
    );
    // Hostile review: a repetitive key on repetitive text (every position a near match).
    t.row(
        "lore/repetitive-keys-on-repetitive-text",
        20_000,
        |n| {
            let keys: Vec<String> = (0..64).map(|i| "a".repeat(200 + i)).collect();
            lore_setup(
                json!({"0": {"key": keys, "content": "x"}}),
                &["a".repeat(n)],
            )
        },
        lore_call,
    );
    // Hostile review: group blocking over many activated entries with many groups each.
    t.row(
        "lore/groups-per-entry-and-blocking",
        200,
        |n| {
            let mut e = serde_json::Map::new();
            for i in 0..20 {
                let groups: Vec<String> = (0..n).map(|j| format!("a{i}_{j}")).collect();
                e.insert(
                    i.to_string(),
                    json!({"constant": true, "ignoreBudget": true,
                    "content": "zz", "group": groups.join(",")}),
                );
            }
            let groups: Vec<String> = (0..n).map(|j| format!("h{j}")).collect();
            e.insert(
                "20".into(),
                json!({"key": ["zz"], "ignoreBudget": true, "content": "y",
                "group": groups.join(",")}),
            );
            lore_setup(serde_json::Value::Object(e), &chat(1))
        },
        lore_call,
    );
    // Hostile review: a state naming one entry many times.
    t.row(
        "lore/state-with-repeated-effects",
        1_000,
        |n| {
            let mut l = lore_setup(
                json!({"0": {"key": ["k0"], "content": "c".repeat(10_000), "sticky": 5}}),
                &chat(1),
            );
            let effect = json!({"kind": "sticky", "entry": "b.0", "fingerprint": "0", "start": 0,
                "end": 9, "protected": false});
            l.state = serde_json::from_value(json!({"version": 1, "effects": vec![effect; n]}))
                .expect("state");
            l
        },
        lore_call,
    );
    t.row(
        "lore/long-message-many-occurrences",
        20_000,
        |n| {
            let mut l = lore_setup(
                json!({"0": entry("ab", "x"), "1": entry("/ab?c/", "y"), "2": entry("ba ab", "z")}),
                &["ab".repeat(n)],
            );
            l.settings.scan_depth = 1;
            l
        },
        lore_call,
    );
}

/// The SillyTavern layout's own dimensions (SPEC §17–§18; issue 52): chat name macros, example
/// lines, the prompt list, switches, injections and the group's size.
fn st_layout(t: &mut Table) {
    let st = |ctx: &mut Context| {
        ctx.layout = stpreset::Layout::SillyTavern;
        ctx.options.limits = roomy();
    };
    let order = |ids: &[String]| {
        json!([{"character_id": 100001, "order": ids.iter()
            .map(|id| json!({"identifier": id, "enabled": true})).collect::<Vec<_>>()}])
    };
    let markers = json!([{"identifier": "main", "content": "Be {{char}}."},
        {"identifier": "dialogueExamples", "marker": true},
        {"identifier": "chatHistory", "marker": true}]);
    let base = Preset::from_json(&serde_json::to_vec(&json!({"prompts": markers})).expect("json"))
        .expect("preset")
        .compile();
    t.row(
        "st/chat-name-macros-under-a-1KB-name",
        2_000,
        |n| {
            let mut ctx = context(0);
            st(&mut ctx);
            ctx.user = "u".repeat(1_000);
            ctx.items.push(stpreset::ContextItem::new(
                Some(stpreset::Tag::DialogueHistory),
                stpreset::Role::User,
                "{{user}}<USER>".repeat(n),
            ));
            ctx
        },
        |ctx| {
            black_box(base.render(ctx));
        },
    );
    t.row(
        "st/group-example-line-of-colons",
        100_000,
        |n| {
            let mut ctx = context(0);
            st(&mut ctx);
            ctx.group = vec!["Tomori".into(), "Kaede".into(), "Mira".into()];
            ctx.mes_examples_raw = format!("<START>\nAlice: hi\n{}\nKaede: yo", ":".repeat(n));
            ctx
        },
        |ctx| {
            black_box(base.render(ctx));
        },
    );
    let many = |n: usize, inject: bool| {
        let ids: Vec<String> = (0..n).map(|i| format!("p{i}")).collect();
        let prompts: Vec<serde_json::Value> = ids
            .iter()
            .map(|id| {
                if inject {
                    json!({"identifier": id, "content": "x", "injection_position": 1,
                           "injection_depth": 1})
                } else {
                    json!({"identifier": id, "content": "x"})
                }
            })
            .collect();
        let doc = json!({"prompts": prompts, "prompt_order": order(&ids)});
        Preset::from_json(&serde_json::to_vec(&doc).expect("json")).expect("preset")
    };
    let mut ctx = context(0);
    st(&mut ctx);
    t.row(
        "st/prompt-list-in-the-100001-order",
        2_000,
        |n| many(n, false),
        |p| {
            black_box(p.compile().render(&ctx));
        },
    );
    t.row(
        "st/a-switch-per-prompt",
        2_000,
        |n| many(n, false),
        |p| {
            let mut p = p.clone();
            let ids: Vec<String> = p.nodes().iter().map(|n| n.identifier.clone()).collect();
            p.set_enabled_all(ids.iter().map(|id| (id.as_str(), false)))
                .expect("switches");
            black_box(p.compile().render(&ctx));
        },
    );
    t.row(
        "st/injection-prompts-without-a-chat",
        800,
        |n| many(n, true).compile(),
        |p| {
            black_box(p.render(&ctx));
        },
    );
    t.row(
        "st/group-members-each-speaking",
        1_000,
        |n| {
            let mut ctx = context(0);
            st(&mut ctx);
            ctx.group = (0..n).map(|i| format!("M{i}")).collect();
            ctx.char = "M0".into();
            for i in 0..n {
                let mut item = stpreset::ContextItem::new(
                    Some(stpreset::Tag::DialogueHistory),
                    stpreset::Role::Model,
                    "{{notChar}} {{group}}",
                );
                item.name = Some(format!("M{i}"));
                ctx.items.push(item);
            }
            ctx
        },
        |ctx| {
            black_box(base.render(ctx));
        },
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mode = match args.iter().position(|a| a == "--one") {
        Some(i) => Mode::One {
            name: args.get(i + 1).cloned().unwrap_or_default(),
            n: args.get(i + 2).and_then(|n| n.parse().ok()).unwrap_or(0),
        },
        // `cargo bench` passes `--bench`; any other argument filters rows by name.
        None => Mode::Table {
            filter: args.into_iter().find(|a| !a.starts_with("--")),
        },
    };
    let table = matches!(mode, Mode::Table { .. });
    let mut t = Table {
        mode,
        worst: 0.0,
        rows: 0,
    };
    if table {
        println!("| dimension | n | t(n) | t(10n) | 10n/n |");
        println!("|---|---|---|---|---|");
    }
    templates(&mut t);
    imports(&mut t);
    assembly_and_output(&mut t);
    provider(&mut t);
    settings(&mut t);
    regex(&mut t);
    chats(&mut t);
    lore(&mut t);
    st_layout(&mut t);
    if table {
        println!("\n{} rows, worst ratio {:.1}", t.rows, t.worst);
    }
}
