use serde_json::json;
use stpreset::{Context, Preset};
include!("/tmp/gen.rs");
fn main() {
    let bytes =
        std::fs::read("../shared/corpus/presets/nemo__NemoEngine-11.5.2-General-RP.json").unwrap();
    let p = Preset::from_json(&bytes).unwrap().compile();
    let on = context(200, true);
    p.render(&on);
    for _ in 0..5000 {
        std::hint::black_box(p.render(&on));
    }
}
