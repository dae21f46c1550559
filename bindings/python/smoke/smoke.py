"""Run against the installed wheel (.ci/artifacts), in a clean virtual environment."""

import stpreset

assert "/bindings/python/python/" not in stpreset.__file__, stpreset.__file__
p = stpreset.Preset.from_json(
    '{"prompts": [{"identifier": "main", "content": "Hi {{user}}{{incvar::n}}"}, {"identifier": "chatHistory", "marker": true}]}'
)
chat = stpreset.Chat({"user": "Alice", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi \ud83d"}]})
out = p.compile().render(chat)
assert ["".join(m["parts"]) for m in out["messages"]] == ["Hi Alice1", "hi \ufffd"], out["messages"]
assert out["diagnostics"][0]["kind"] == "LoneSurrogate"
chat.keep(out)
assert p.compile().render(chat)["variables"]["n"] == "2"
try:
    stpreset.Preset.from_json("[]")
    raise AssertionError("no PresetError")
except stpreset.PresetError:
    pass
print("wheel smoke test: ok")
