"""The store in the package: same semantics and errors as the Rust store."""

import json
import os
import pathlib
import time

import pytest

import stpreset

PRESET = json.dumps(
    {
        "prompts": [
            {"identifier": "main", "content": "Hi {{user}}"},
            {"identifier": "nsfw", "content": "Spicy", "enabled": False},
            {"identifier": "chatHistory", "marker": True},
        ]
    }
)


def test_import_list_activate_toggle_render_delete_per_server(tmp_path):
    store = stpreset.PresetStore.open(tmp_path / "presets.db")
    guild = 1234567890123456789
    pid = store.import_preset(guild, "mine", PRESET)
    assert [(p["name"], p["active"], p["nodes"]) for p in store.list(guild)] == [("mine", True, 3)]
    assert store.list(guild - 1) == []
    chat = stpreset.Chat({"user": "Alice", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]})
    assert ["".join(m["parts"]) for m in store.render(guild, chat)["messages"]] == ["Hi Alice", "hi"]
    def switches():
        return [(n["identifier"], n["enabled"]) for n in store.nodes(guild, pid)]

    assert switches() == [("main", True), ("nsfw", False), ("chatHistory", True)]
    store.set_enabled(guild, pid, {"nsfw": True})
    assert switches() == [("main", True), ("nsfw", True), ("chatHistory", True)]
    with pytest.raises(stpreset.StoreError) as e:
        store.nodes(1, pid)
    assert e.value.kind == "NotFound"
    assert ["".join(m["parts"]) for m in store.render(guild)["messages"]] == ["Hi User", "Spicy"]
    with pytest.raises(stpreset.StoreError) as e:
        store.set_enabled(guild, pid, {"nope": True})
    assert e.value.kind == "UnknownNode"
    with pytest.raises(stpreset.StoreError) as e:
        store.activate(1, pid)
    assert e.value.kind == "NotFound"
    with pytest.raises(stpreset.PresetError):
        store.import_preset(guild, "bad", "[]")
    with pytest.raises(ValueError):
        store.list(2**70)
    with pytest.raises(TypeError):
        store.list("1")
    store.allow_regex(guild, pid, True)
    assert store.list(guild)[0]["regex_allowed"] is True
    store.deactivate(guild)
    assert store.render(guild) is None
    store.delete(guild, pid)
    assert store.list(guild) == []
    with pytest.raises(stpreset.StoreError) as e:
        stpreset.PresetStore(tmp_path / "no" / "such" / "dir" / "x.db")
    assert e.value.kind == "Open"


def test_review_ids_are_not_reused_and_names_and_toggles_follow_the_rules(tmp_path):
    store = stpreset.PresetStore(tmp_path / "p.db")
    store.import_preset(1, "base", PRESET)
    safe = store.import_preset(1, "safe", PRESET)
    store.delete(1, safe)
    assert store.import_preset(1, "evil", PRESET) != safe
    with pytest.raises(stpreset.StoreError) as e:
        store.activate(1, safe)
    assert e.value.kind == "NotFound"
    for name in ("a\ud800", "safe\u200b"):
        with pytest.raises(stpreset.StoreError) as e:
            store.import_preset(1, name, PRESET)
        assert e.value.kind == "InvalidName"
    odd = json.dumps({"prompts": [{"identifier": "n\ud800", "content": "x", "enabled": False}]})
    pid = store.import_preset(1, "odd", odd)
    store.set_enabled(1, pid, {"n\ud800": True})
    assert len(stpreset.Preset.from_json(odd).compile({"n\udc00": True}).render()["messages"]) == 1
    with pytest.raises(stpreset.StoreError):
        stpreset.PresetStore("")


PG = os.environ.get("STPRESET_TEST_POSTGRES")


@pytest.mark.skipif(not PG, reason="STPRESET_TEST_POSTGRES is not set (scripts/pg-throwaway starts a server)")
def test_a_postgresql_connection_string_opens_the_same_store_shared_between_instances():
    target = f"{PG} dbname=postgres"
    bot = stpreset.PresetStore.open(target)
    admin = stpreset.PresetStore.open(target)
    guild = time.time_ns() // 1000 + os.getpid() % 1000

    def texts():
        out = bot.render(guild)
        return out and ["".join(m["parts"]) for m in out["messages"]]

    def seen(want):
        deadline = time.monotonic() + 1
        while texts() != want:
            assert time.monotonic() < deadline, f"not seen within 1 s: {want}"
            time.sleep(0.005)

    pid = admin.import_preset(guild, "mine", PRESET)
    seen(["Hi User"])
    admin.set_enabled(guild, pid, {"nsfw": True})
    seen(["Hi User", "Spicy"])
    with pytest.raises(stpreset.StoreError) as e:
        bot.activate(guild + 1, pid)
    assert e.value.kind == "NotFound"
    admin.delete(guild, pid)
    seen(None)
    with pytest.raises(stpreset.StoreError) as e:
        stpreset.PresetStore.open("postgresql://nobody@127.0.0.1:1/x?connect_timeout=1")
    assert e.value.kind == "Open"


def test_toggles_keep_the_authors_exclusive_groups(tmp_path):
    store = stpreset.PresetStore(str(tmp_path / "styles.db"))
    pid = store.import_preset(7, "styles", json.dumps({"prompts": [
        {"identifier": "h", "name": "=== Style ===", "content": ""},
        {"identifier": "terse", "name": "Terse", "content": "{{// @mutual-exclusive-group len}}T"},
        {"identifier": "lush", "name": "Lush", "enabled": False,
         "content": "{{// @mutual-exclusive-group len}}{{// @exclusive-with-message One length.}}L"},
    ]}))
    with pytest.raises(stpreset.StoreError) as refused:
        store.set_enabled(7, pid, {"lush": True})
    e = refused.value
    assert (e.kind, e.node) == ("Refused", "lush")
    assert e.issues[0]["kind"] == "mutual-exclusive-group"
    assert (e.issues[0]["others"], e.issues[0]["author"]) == (["terse"], "One length.")
    assert store.outline(7, pid)["sections"][0]["enabled"] == 1, "nothing changed"
    done = store.set_enabled(7, pid, {"lush": True}, resolve=True)
    assert done["changes"] == [{"identifier": "lush", "enabled": True}, {"identifier": "terse", "enabled": False}]
    on = [(n["identifier"], n["enabled"]) for n in store.outline(7, pid)["nodes"]]
    assert on == [("h", True), ("terse", False), ("lush", True)]
    with pytest.raises(TypeError):
        store.set_enabled(7, pid, {"lush": True}, resolve="yes")
    # The switches are checked in the caller's order: the second one asked meets the first.
    store.set_enabled(7, pid, {"lush": False})
    with pytest.raises(stpreset.StoreError) as refused:
        store.set_enabled(7, pid, {"terse": True, "lush": True}, resolve=True)
    assert (refused.value.node, refused.value.issues[0]["kind"]) == ("lush", "unresolvable")


CORPUS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "corpus" / "presets"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"SKIPPED: {CORPUS} not found")
def test_every_corpus_exclusive_group_switches_to_another_member(tmp_path):
    store = stpreset.PresetStore(str(tmp_path / "corpus.db"))
    groups = 0
    for name in ["nemo__NemoEngine-11.5.2-General-RP.json", "nemo__NemoNet-2.0.json", "nemo__Magpie-v1-Beta-2.1.json"]:
        pid = store.import_preset(5, name, (CORPUS / name).read_text())
        for g in [g for g in store.outline(5, pid)["groups"] if len(g["members"]) > 1]:
            def on() -> set:
                return {n["identifier"] for n in store.outline(5, pid)["nodes"] if n["enabled"]}
            pick = next(m for m in g["members"] if m not in on())
            store.set_enabled(5, pid, {pick: True}, resolve=True)
            now = on()
            assert [m for m in g["members"] if m in now] == [pick], (name, g["name"])
            groups += 1
    assert groups == 58
