"""The card, 400-entry book and 200-message chat of `benches/turn.rs` (issue 54's bot turn), built
in Python as a bot would build them: `context(layout)` for stpreset, `sillytavern()` for a peer
that reads SillyTavern's own formats (character, world book, chat messages). Generated, so the
bench needs no card file: keys of names and places, a tenth of them regular expressions,
400-1,200-byte entries with {{char}}/{{user}}, a few constants, recursion on."""

ENTRIES = 400
HISTORY = 200
DESCRIPTION = "Tomori is a shrine maiden of the hill shrine. {{user}} is her oldest friend. " * 20


def entry(i):
    keys = [f"/\\b(person|hero){i}s?\\b/i"] if i % 10 == 3 else [f"place{i}", f"Person{i}"]
    body = (
        f"{{{{char}}}} knows place{i} well: the road there runs past the old mill and the "
        f"river ford, where {{{{user}}}} once lost a bet. Person{i} keeps the records of the town. "
    ) * (2 + i % 5)
    e = {
        "uid": i, "key": keys, "content": body, "comment": f"Entry {i}",
        "order": 100 + i % 50, "position": (i % 5) % 2, "depth": 4,
        "selective": i % 9 == 0, "keysecondary": ["river"] if i % 9 == 0 else [],
        "constant": i % 40 == 0,
    }
    if i % 5 == 2:
        e["position"] = 4
        e["role"] = 0
    return e


def book():
    return {"name": "Generated World", "source": "character",
            "entries": {str(i): entry(i) for i in range(ENTRIES)}}


def history():
    out = []
    for i in range(HISTORY):
        role, who = ("user", "Alice") if i % 2 == 0 else ("model", "Tomori")
        mention = f" We passed place{i * 2}." if i % 20 == 0 else ""
        out.append({"tag": "DIALOGUE_HISTORY", "role": role,
                    "text": f"{who}: message {i} about the festival and the old shrine.{mention}"})
    return out


def context(layout):
    return {
        "user": "Alice", "char": "Tomori", "layout": layout, "model": "gpt-4o",
        "provider_options": {"shape": "openai"},
        "description": DESCRIPTION,
        "personality": "kind, witty, stubborn", "scenario": "An autumn festival at the shrine.",
        "persona": "Alice is a student who visits on weekends.",
        "mes_examples": "<START>\n{{user}}: Hello?\n{{char}}: Welcome, traveller.",
        "world_info": {"scan_depth": 4, "budget_percent": 25},
        "lorebooks": [book()], "items": history(),
    }


def sillytavern():
    """The same card, book and chat in SillyTavern's formats."""
    character = {"name": "Tomori", "data": {
        "name": "Tomori", "description": DESCRIPTION, "personality": "kind, witty, stubborn",
        "scenario": "An autumn festival at the shrine.",
        "mes_example": "<START>\n{{user}}: Hello?\n{{char}}: Welcome, traveller."}}
    world = {"name": "Generated World", "entries": book()["entries"]}
    chat = [{"role": "user" if m["role"] == "user" else "assistant", "name": m["text"].split(":")[0],
             "content": m["text"]} for m in history()]
    return character, world, chat
