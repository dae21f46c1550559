fn main() {
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read("../shared/corpus/presets/nemo__NemoEngine-11.5.2-General-RP.json").unwrap()).unwrap();
    let prompts = d["prompts"].as_array().unwrap();
    let order = d["prompt_order"].as_array().unwrap().iter().find(|o| o["character_id"] == 100001).unwrap()["order"].as_array().unwrap();
    let mut texts = vec![];
    for e in order {
        if e["enabled"] == false { continue; }
        if let Some(p) = prompts.iter().find(|p| p["identifier"] == e["identifier"]) {
            if let Some(c) = p["content"].as_str() { texts.push(c.to_string()); }
        }
    }
    let total: usize = texts.iter().map(|t| t.len()).sum();
    let ctx = stpreset::Context::from_json(br#"{"user":"Alice","char":"Tomori","description":"d","now":"2026-11-29T17:07:00Z"}"#).unwrap();
    let n = 200;
    let t0 = std::time::Instant::now();
    for _ in 0..n { for t in &texts { std::hint::black_box(stpreset::Template::compile(t)); } }
    let dt = t0.elapsed() / n;
    eprintln!("compile {:?} for {} bytes = {:.0} MB/s", dt, total, total as f64 / dt.as_secs_f64() / 1e6);
    let compiled: Vec<_> = texts.iter().map(|t| stpreset::Template::compile(t)).collect();
    let t0 = std::time::Instant::now();
    let mut out = 0;
    for _ in 0..n { for t in &compiled { out += t.render(&ctx).text.len(); } }
    let dt = t0.elapsed() / n;
    eprintln!("render (per node, separately) {:?} -> {} bytes", dt, out / n as usize);
}
