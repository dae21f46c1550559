"""A bot's turn through the package, every corpus preset: a ``Chat`` kept between turns, each turn
one ``render(chat)`` whose every message part is read, beside ``render(dict)``. Subtract the
Rust render (``cargo bench --bench render``) to get the call's overhead:
    python bench/turn.py [../../../shared/corpus/presets]"""

import pathlib
import statistics
import sys
import time

import stpreset
from context import context

here = pathlib.Path(__file__).resolve().parent
folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[3] / "shared" / "corpus" / "presets"
if not folder.is_dir():
    print(f"SKIPPED: {folder} not found (../shared is not beside this checkout)")
    sys.exit(0)


def read(out):
    n = 0
    for m in out["messages"]:
        n += len(m["role"])
        for p in m["parts"]:
            n += len(p)
    return n


def timed(f, rounds=15):
    """Median µs per call of batches of at least 20 ms, after 0.3 s of warm-up."""
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        read(f())
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            read(f())
        if time.perf_counter() - t0 > 0.02:
            break
        n *= 2
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            read(f())
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


ctx = context(200)
print(f"python {sys.version.split()[0]}; 200-message history; µs per turn (median), every part read")
print(f"{'preset':<48} {'render(chat)':>12} {'render(dict)':>12}")
for path in sorted(folder.iterdir()):
    compiled = stpreset.Preset.from_json(path.read_bytes()).compile()
    chat = stpreset.Chat(ctx)
    fast = timed(lambda: compiled.render(chat))
    plain = timed(lambda: compiled.render(ctx))
    print(f"{path.name:<48} {fast:>12.1f} {plain:>12.1f}")
