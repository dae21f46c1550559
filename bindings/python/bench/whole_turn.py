"""A bot's whole turn through the package (issue 54), in both layouts: NemoEngine 11.5.2 (else the
corpus's largest preset), the generated card, 400-entry book and 200-message chat of `book.py`
(`benches/turn.rs` in Rust), model gpt-4o. A turn: one message out at the front and one in,
`request(chat)` (the render and the provider body's bytes), the `wi_state` set back, the
variables kept. Beside it `render(chat)` and `lore(chat)` alone. Then, when fast-tavern is installed in
this environment (`pip install fast-tavern==0.1.8`, from PyPI, never vendored), every corpus
preset side by side with its `build_prompt_from_silly_tavern` on the same card, book and chat:
    python bench/whole_turn.py [../../../shared/corpus/presets]"""

import json
import pathlib
import statistics
import sys
import time

import stpreset
from book import ENTRIES, context, sillytavern

here = pathlib.Path(__file__).resolve().parent
folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[3] / "shared" / "corpus" / "presets"
if not folder.is_dir():
    print(f"SKIPPED: {folder} not found (../shared is not beside this checkout)")
    sys.exit(0)


def timed(f, rounds=15):
    """Median µs per call of batches of at least 20 ms, after 0.3 s of warm-up."""
    end = time.perf_counter() + 0.3
    while time.perf_counter() < end:
        f()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        if time.perf_counter() - t0 > 0.02:
            break
        n *= 2
    samples = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(n):
            f()
        samples.append((time.perf_counter() - t0) / n * 1e6)
    return statistics.median(samples)


presets = sorted(folder.iterdir())
nemo = next((p for p in presets if "NemoEngine-11.5.2" in p.name), None) or max(presets, key=lambda p: p.stat().st_size)
compiled = stpreset.Preset.from_json(nemo.read_bytes()).compile()
print(f"python {sys.version.split()[0]}; {nemo.name}; {ENTRIES}-entry book, 200 messages; median µs")
print(f"{'layout':<12} {'whole turn':>11} {'render':>9} {'lore':>9}")
for layout in ["seed", "sillytavern"]:
    chat = stpreset.Chat(context(layout))
    turn_no = [0]

    def turn():
        turn_no[0] += 1
        n = turn_no[0]
        chat.splice(0, 1)
        chat.append({"tag": "DIALOGUE_HISTORY", "role": "user" if n % 2 == 0 else "model",
                     "text": f"Alice: turn {n}, and we talk of place{n % ENTRIES} again."})
        r = compiled.request(chat)
        chat.set({"wi_state": r["wi_state"]})
        chat.keep(r)
        # The bytes a bot POSTs.
        return r.body

    whole = timed(turn)
    fixed = stpreset.Chat(context(layout))
    render = timed(lambda: compiled.render(fixed))
    lore = timed(lambda: stpreset.lore(fixed))
    print(f"{layout:<12} {whole:>11.0f} {render:>9.0f} {lore:>9.0f}")

try:
    from fast_tavern import build_prompt_from_silly_tavern
except ImportError:
    print("fast-tavern not installed here: `pip install fast-tavern==0.1.8` for the side-by-side rows")
    sys.exit(0)

character, world, history = sillytavern()
print()
print("side by side, same card, book and chat: request(chat) vs fast-tavern's build_prompt_from_silly_tavern")
print(f"{'preset':<46} {'seed':>8} {'st':>8} {'fast-tavern':>12} {'x seed':>7} {'x st':>6}")
for path in presets:
    compiled = stpreset.Preset.from_json(path.read_bytes()).compile()
    raw = json.loads(path.read_bytes())
    ours = {}
    for layout in ["seed", "sillytavern"]:
        chat = stpreset.Chat(context(layout))
        # The body as Python objects, as the peer builds its messages.
        ours[layout] = timed(lambda: compiled.request(chat)["request"])

    def peer():
        return build_prompt_from_silly_tavern(
            preset=raw, character=character, globals={"worldBooks": [world]}, history=history,
            macros={"user": "Alice", "char": "Tomori"}, outputFormat="openai")

    theirs = timed(peer, rounds=5)
    print(f"{path.name[:46]:<46} {ours['seed']:>8.0f} {ours['sillytavern']:>8.0f} {theirs:>12.0f} "
          f"{theirs / ours['seed']:>7.1f} {theirs / ours['sillytavern']:>6.1f}")
