"""Per-render cost through the Python package on the corpus's largest preset with a 200-message
history (the context of `benches/support`): python bench.py [../../../shared/corpus/presets]"""

import json
import pathlib
import sys
import time

import stpreset
from stpreset import _native

here = pathlib.Path(__file__).resolve().parent
folder = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else here.parents[2] / "shared" / "corpus" / "presets"
largest = max(folder.iterdir(), key=lambda p: p.stat().st_size)


def context(history):
    items = [
        {"tag": "SYSTEM_CHANNEL_PROMPT", "role": "system", "text": "Channel: #roleplay"},
        {"tag": "SYSTEM_PERSONA_PROMPT", "role": "system", "text": "{{char}} is a shrine maiden who tends the hill shrine."},
        {"tag": "SYSTEM_PERSONALITY", "role": "system", "text": "kind, witty, stubborn"},
        {"tag": "KNOWLEDGE_SERVER_INFO", "role": "system", "text": "Server: Moonlit Hill"},
        {"tag": "KNOWLEDGE_SERVER_MEMORIES", "role": "system", "text": "{user} once lost a bet."},
        {"tag": "KNOWLEDGE_LOREBOOK_BEFORE", "role": "system", "text": "The shrine is 300 years old."},
        {"tag": "KNOWLEDGE_LOREBOOK_AFTER", "role": "system", "text": "Festivals happen in autumn."},
        {"tag": "KNOWLEDGE_ACTIVE_USERS", "role": "system", "text": "Active: Alice, Bob"},
        {"tag": "DIALOGUE_SAMPLE", "role": "user", "text": "Alice: hello?"},
        {"tag": "DIALOGUE_SAMPLE", "role": "model", "text": "Tomori: Welcome, traveller."},
    ]
    for i in range(history):
        role, who = ("user", "Alice") if i % 2 == 0 else ("model", "Tomori")
        items.append({"tag": "DIALOGUE_HISTORY", "role": role,
                      "text": f"{who}: message {i} about the festival and the old shrine.",
                      "time": "2026-11-29T16:00:00Z"})
    items.append({"tag": "CONTEXT_CURRENT", "role": "system", "text": "It is raining.", "depth": 1})
    items.append({"tag": "KNOWLEDGE_LORE_ACTIVATED", "role": "system", "text": "Rain omen lore."})
    return {"user": "Alice", "char": "Tomori", "description": "A shrine maiden. {{user}} is her friend.",
            "personality": "kind\nwitty", "persona": "Alice is a student.", "scenario": "",
            "model": "gemini-2.5-pro", "provider": "google", "now": "2026-11-29T17:07:00Z",
            "utc_offset_minutes": 480, "seed": 42, "chat_id": "chat-1",
            "capabilities": {"web_search": True}, "tools": ["web_search"],
            "globals": {"mood": "calm"}, "items": items}


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
timed("  native render(str) -> dict", n, lambda: compiled._inner.render(ctx_json))
timed("request_body(dict) -> bytes (whole call)", n, lambda: compiled.request_body(ctx))
