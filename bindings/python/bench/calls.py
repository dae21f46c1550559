"""Per-render cost through the Python package on the corpus's largest preset with a 200-message
history (the context of `benches/support`): python bench/calls.py [../../../shared/corpus/presets]"""

import json
import pathlib
import sys
import time

import stpreset
from context import context
from stpreset import _native

here = pathlib.Path(__file__).resolve().parent
folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[3] / "shared" / "corpus" / "presets"
largest = max(folder.iterdir(), key=lambda p: p.stat().st_size)


def timed(label, n, f):
    for _ in range(min(n, 200)):
        f()
    t0 = time.perf_counter()
    for _ in range(n):
        f()
    us = (time.perf_counter() - t0) / n * 1e6
    print(f"{label:<44} {us:.1f} µs")


compiled = stpreset.Preset.from_json(largest.read_bytes()).compile()
ctx = context(200)
ctx_json = json.dumps(ctx, ensure_ascii=False)
print(f"python {sys.version.split()[0]}, {largest.name}, 200-message history")
n = 2000
timed("render(dict) -> dict (whole call)", n, lambda: compiled.render(ctx))
timed("  native render_json(str) -> str", n, lambda: compiled._inner.render_json(ctx_json))
timed("  json.dumps(context)", n, lambda: json.dumps(ctx, ensure_ascii=False))
out = compiled._inner.render_json(ctx_json)
timed("  json.loads(result)", n, lambda: json.loads(out))
chat = stpreset.Chat(ctx)
timed("render(chat), nothing read", n, lambda: compiled.render(chat))
timed("request_body(dict) -> bytes (whole call)", n, lambda: compiled.request_body(ctx))
