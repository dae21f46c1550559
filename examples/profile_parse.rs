fn main() {
    let unit = "You are {{char}}, speaking with {{user}}. Stay in character and write vivid, grounded prose.\n{{setvar::t::{{getvar::turn}}}}{{#if description}}<c>{{description}}</c>{{else}}none{{/if}}\n{{if capability:web_search}}Use {search_tool}.{{/if}}{{// note {{setvar::x::1}} }}Mood: {{random::calm::tense}}; \\{x\\} <USER>.\n\n";
    let src = unit.repeat(100 * 1024 / unit.len());
    let t0 = std::time::Instant::now();
    for _ in 0..20 { std::hint::black_box(stpreset::Template::compile(&src)); }
    eprintln!("{:?} per parse of {} bytes", t0.elapsed() / 20, src.len());
}
