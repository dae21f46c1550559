"""Character cards and World Info in the package (SPEC §15): the same documents as the CLI."""

import json

import pytest

import stpreset

PRESET = stpreset.Preset.from_json(json.dumps({"prompts": [
    {"identifier": "main", "content": "Main. {{outlet::sky}}"},
    {"identifier": "worldInfoBefore", "marker": True},
    {"identifier": "chatHistory", "marker": True},
]})).compile()

BOOK = {"name": "town", "entries": {
    "1": {"key": ["bell"], "content": "The bell tolls.", "sticky": 2},
    "0": {"key": ["bell"], "content": "Grey sky.", "position": 7, "outletName": "sky"},
}}


def texts(out):
    return ["".join(m["parts"]) for m in out["messages"]]


def test_lore_in_a_context_is_placed_and_the_state_comes_back():
    ctx = {"user": "Alice", "position": 1, "lorebooks": [BOOK],
           "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "ring the bell"}]}
    out = PRESET.render(ctx)
    assert texts(out) == ["Main. Grey sky.", "The bell tolls.", "ring the bell"]
    assert [(e["entry"], e["start"], e["end"]) for e in out["wi_state"]["effects"]] == [("town.1", 1, 3)]
    result = stpreset.lore(ctx)
    assert result["activated"] == ["town.0", "town.1"]
    assert result["state"] == out["wi_state"]
    chat = stpreset.Chat({**ctx, "position": 2, "wi_state": out["wi_state"],
                          "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "quiet"}]})
    nxt = PRESET.render(chat)
    assert "The bell tolls." in texts(nxt)
    assert "wi_state" in nxt and nxt.to_dict()["wi_state"]["effects"][0]["entry"] == "town.1"
    plain = PRESET.render(stpreset.Chat({"user": "Alice"}))
    assert "wi_state" not in plain


def test_read_card_merges_into_a_context():
    card = json.dumps({"spec": "chara_card_v2", "data": {"name": "Sera", "personality": "kind",
        "character_book": {"entries": [{"keys": ["forest"], "content": "Old trees.", "enabled": True,
                                        "position": "before_char"}]}}}).encode()
    doc = stpreset.read_card(card)
    assert doc["card"]["name"] == "Sera" and doc["context"]["char"] == "Sera"
    ctx = {**doc["context"], "position": 1,
           "items": doc["items"] + [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "the forest"}]}
    assert stpreset.lore(ctx)["activated"] == ["Sera's Lorebook.0"]
    with pytest.raises(stpreset.CardError) as e:
        stpreset.read_card(b"[1]")
    assert e.value.kind == "CardNotACard"
    with pytest.raises(stpreset.CardError) as e:
        stpreset.read_card(b"{}", png=True)
    assert e.value.kind == "CardPngInvalid"
    with pytest.raises(TypeError):
        stpreset.read_card("not bytes")


def test_lore_errors_name_the_field():
    with pytest.raises(stpreset.ContextError, match=r"lorebooks\[0\]\.source"):
        stpreset.lore({"lorebooks": [{"name": "a", "source": "moon", "entries": {}}]})
