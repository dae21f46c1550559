#!/usr/bin/env python3
"""Builds seed corpora for the fuzz targets from the shared vectors and real presets.
Run from the repository root: python3 fuzz/seeds.py [../shared]. Writes fuzz/corpus/<target>/
(ignored by git: seeds come from ../shared at run time, never committed copies)."""
import hashlib, json, os, sys

shared = sys.argv[1] if len(sys.argv) > 1 else "../shared"
out = os.path.join("fuzz", "corpus")

def put(target, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)

conf = os.path.join(shared, "conformance")
for case in json.load(open(os.path.join(conf, "templates.json"))):
    put("parse", case["template"])
    put("expand", case["template"])
for case in json.load(open(os.path.join(conf, "st-templates.json"))):
    put("parse", case["template"])
    put("expand", case["template"])
for case in json.load(open(os.path.join(conf, "renders.json"))):
    seed = json.dumps(case["preset"]) + "\n\0" + json.dumps(case["context"])
    put("render", seed)
    put("cli", seed)
    put("import", json.dumps(case["preset"]))
for case in json.load(open(os.path.join(conf, "import-errors.json"))):
    if case["preset_text"] != "@oversize":
        put("render", case["preset_text"])
        put("import", case["preset_text"])
# SPEC §14: preset settings (prompt cases whole; request cases with a main node, their context
# and a model, so every shape and model family's fields are reached).
settings = os.path.join(conf, "settings.json")
if os.path.exists(settings):
    for case in json.load(open(settings))["cases"]:
        i = case["input"]
        preset = dict(i["preset"])
        preset.setdefault("prompts", [{"identifier": "main", "content": "Hi {{char}}"},
                                      {"identifier": "chatHistory", "marker": True}])
        ctx = dict(i.get("context", {}))
        if "model" in i:
            ctx["model"] = i["model"]
            ctx["provider_options"] = dict(ctx.get("provider_options", {}), shape=i["shape"])
        seed = json.dumps(preset) + "\n\0" + json.dumps(ctx)
        put("render", seed)
        put("cli", seed)
        put("import", json.dumps(preset))
presets = os.path.join(shared, "corpus", "presets")
for name in sorted(os.listdir(presets)):
    raw = open(os.path.join(presets, name), "rb").read()
    doc = json.loads(raw)
    # Node texts make good template seeds; small presets are whole render seeds.
    for p in doc.get("prompts", [])[:60]:
        content = p.get("content") or ""
        if 0 < len(content) < 8192:
            put("parse", content)
            put("expand", content)
    if len(raw) < 128 * 1024:
        put("render", raw)
        put("cli", raw)
        put("import", raw)
# Legacy shapes the corpus lacks: story strings with every section and placeholder, the three
# post-history fields, clashing identifiers, numbers beyond f64, a byte-order mark.
story = "".join("{{#if %s}}<%s>{{%s}}{{/if}}" % (k, k, k) for k in
                ["system", "wiBefore", "wiAfter", "description", "personality", "mesExamples",
                 "persona", "scenario", "anchorBefore", "anchorAfter", "custom"])
legacy = {"context": {"story_string": story + "{{system}}{{trim}}", "post_history": "C"},
          "sysprompt": {"content": "S {{user}}", "post_history": "B"}, "post_history": "A"}
put("import", json.dumps(legacy))
put("cli", json.dumps(legacy) + "\0" + json.dumps({"items": [
    {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}))
clash = {"prompts": [{"identifier": "legacyPostHistory", "content": "a\u00e9\u00e9{{x}}",
                      "injection_depth": 1e309, "injection_order": "-7"},
                     {"identifier": "chatHistory", "marker": True}], "post_history": "a{{x}}"}
put("import", "\ufeff" + json.dumps(clash))
put("cli", json.dumps(clash))
# SillyTavern 1.18 shapes worth mutating from (SPEC §11.3): crossing, dissolving, depth.
for t in ["{{setvar::a}}X{{reverse}}Y{{/setvar}}Z{{/reverse}}",
          "{{#if user}}{{setvar::k}}a{{else}}b{{/setvar}}{{/if}}",
          "{{#trim}} a {{/trim}}{{newline}}x{{/newline}}{{/getvar::{{user}}}}{{/foo}}",
          "{{#if user}}" * 33 + "{{reverse}}" + "{{/if}}" * 33 + "{{/reverse}}",
          "{{//}}{{reverse}}{{///}}a{{/reverse}}{{if::1::{{trim}}b{{else}}c{{/trim}}}}"]:
    put("parse", t)
    put("expand", t)
# The macro-engine recordings of tests/st-macros (ST's state and object variable macros).
for case in json.load(open(os.path.join(os.path.dirname(__file__), "..", "tests", "st-macros", "cases.json"))):
    put("expand", case["template"])
    put("parse", case["template"])
# Context fields of SPEC §11.8 and §11.14 (chat variables, groups) in a render seed.
put("cli", json.dumps({"prompts": [{"identifier": "main", "content":
                                    "{{.turn++}}{{group}}{{notChar}}{{hasvar::mood}}"}]})
    + "\0" + json.dumps({"variables": {"turn": "3", "mood": "calm"},
                          "group": ["Tomori", "Kaede"], "group_muted": ["Kaede"]}))
# Separate-mode injection (#10): depth nodes at several depths, orders and roles, tail items.
put("cli", json.dumps({"prompts": [{"identifier": "main", "content": "M"},
                                   {"identifier": "chatHistory", "marker": True}] +
                       [{"identifier": "d%d" % i, "role": ["system", "user", "assistant"][i % 3],
                         "content": "x%d" % i, "injection_position": 1, "injection_depth": i % 4,
                         "injection_order": i % 3 * 50} for i in range(8)]})
    + "\0" + json.dumps({"injection": "separate", "items": [
        {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "a"},
        {"tag": "CONTEXT_CURRENT", "role": "system", "text": "now", "depth": 1}]}))
# SPEC §12 options: a budget and a provider request.
put("cli", json.dumps({"prompts": [{"identifier": "main", "content": "Hi"},
                                   {"identifier": "chatHistory", "marker": True}]})
    + "\0" + json.dumps({"max_context_tokens": 30, "reserve_tokens": 5, "tokenizer": "words",
                          "provider_options": {"shape": "anthropic", "post_processing": "strict",
                                               "assistant_prefill": "Ok", "cache_at_depth": 1},
                          "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "a b c"},
                                    {"tag": "DIALOGUE_HISTORY", "role": "model", "text": ""}]}))
# SPEC §13: regex scripts, one per vector case with a text (MODE \0 find \0 replace \0 trim \0 text).
regex = os.path.join(conf, "regex.json")
if os.path.exists(regex):
    doc = json.load(open(regex))
    for case in doc["cases"]:
        scripts = case["scripts"]
        if isinstance(scripts, dict):
            s = doc["script_sets"][scripts["set"]]
            scripts = [s[scripts["index"]]] if "index" in scripts else s[:1]
        for s in scripts[:2]:
            if not isinstance(s, dict) or not isinstance(s.get("findRegex"), str):
                continue
            mode = (1 if s.get("promptOnly") else 0) | (2 if s.get("markdownOnly") else 0) | 4
            trims = s.get("trimStrings") or [""]
            text = case["input"].get("text") or ""
            put("regex", bytes([mode]) + b"\0" + "\0".join([s["findRegex"], s.get("replaceString") or "",
                str(trims[0]) if isinstance(trims, list) and trims else "", text]).encode())

# Character cards (SPEC §15.1): the stlive fixture cards as JSON, and the conformance cards
# in the files their vectors carry (PNG and JSON, base64 in the vector).
import base64
fixtures = os.path.join(shared, "tools", "stlive", "fixtures")
cards = []
if os.path.isdir(fixtures):
    for name in sorted(os.listdir(fixtures)):
        if name.startswith("card-") and name.endswith(".json"):
            raw = open(os.path.join(fixtures, name), "rb").read()
            cards.append(raw)
            put("card", raw)
wi = os.path.join(conf, "worldinfo.json")
if os.path.exists(wi):
    for case in json.load(open(wi))["cases"]:
        i = case["input"]
        if "file_b64" in i:
            put("card", base64.b64decode(i["file_b64"]))
        # World Info: each book, then the first turn's messages (BOOK \0 MESSAGE \0 ...).
        books = i.get("books") or ([i["book"]] if "book" in i else [])
        turns = i.get("turns") or [{}]
        msgs = [m.get("text", "") for m in turns[0].get("history", [])]
        for b in books[:2]:
            data = b.get("data", b) if isinstance(b, dict) else b
            put("lore", "\0".join([json.dumps(data)] + msgs))

# A Chat (context JSON) with a render, a splice, a keep and a save between renders.
for case in json.load(open(os.path.join(conf, "renders.json")))[:40]:
    ctx = json.dumps(case["context"]).encode()
    item = json.dumps([{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "{{user}} hi"}]).encode()
    put("chat", ctx + b"\0r\0s\x00\x00" + item + b"\0k\0r\0v")

# The SillyTavern layout: a preset, a card and a chat file (PRESET \0 CARD \0 CHAT.jsonl).
def st_chat(path):
    chat = json.load(open(path))
    lines = [json.dumps({"user_name": chat["user"], "character_name": chat["char"],
                         "chat_metadata": {"chat_id_hash": 7}})]
    for m in chat["messages"]:
        user = m["from"] == "user"
        lines.append(json.dumps({"name": chat["user"] if user else chat["char"], "is_user": user,
                                 "mes": m["text"], "send_date": m["time"]}))
    return "\n".join(lines).encode()
chats = [st_chat(os.path.join(fixtures, n)) for n in ["chat-sera.json", "chat-mira.json"]
         if os.path.exists(os.path.join(fixtures, n))] or [b""]
small = [b'{"prompts": [{"identifier": "main", "content": "Be {{char}}."}, {"identifier": "dialogueExamples", "marker": true}, {"identifier": "chatHistory", "marker": true}, {"identifier": "d", "content": "{{user}}!", "injection_position": 1, "injection_depth": 1}]}']
for name in sorted(os.listdir(presets)):
    raw = open(os.path.join(presets, name), "rb").read()
    if len(raw) < 256 * 1024:
        small.append(raw)
for n, preset in enumerate(small):
    put("st_layout", preset + b"\0" + (cards[n % len(cards)] if cards else b"") + b"\0" + chats[n % len(chats)])
print("seeds written to", out)
