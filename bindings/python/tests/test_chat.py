"""A ``Chat`` kept between turns renders what ``render(dict)`` renders for the same context,
turn after turn; and the text and error contract of issue 20 §2."""

import json
import pathlib
import sys
import threading

import pytest

import stpreset

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "bench"))
from context import context  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parents[4] / "shared" / "corpus" / "presets"
HALF = "\ud83d"
PRESET = json.dumps(
    {
        "prompts": [
            {"identifier": "main", "content": "You are {{char}}. {{setvar::big::{{getvar::seed}}}}{{incvar::turn}}"},
            {"identifier": "chatHistory", "marker": True},
            {"identifier": "jb", "content": "Last: {{lastMessage}}", "injection_position": 1, "injection_depth": 0},
        ]
    }
)


def turns(compiled, ctx, chat, n):
    for t in range(n):
        a = compiled.render(ctx)
        b = compiled.render(chat)
        assert json.dumps(b.to_dict()) == json.dumps(a), t
        news = [
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": f"Alice: turn {t} 🌧"},
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": f"reply {t}", "name": "Tomori"},
        ]
        ctx["items"][-2:-2] = news
        chat.splice(len(chat) - 2, 0, *news)
        if t == 1:
            i = next(i for i, it in enumerate(ctx["items"]) if it["tag"] == "DIALOGUE_HISTORY")
            del ctx["items"][i]
            chat.splice(i, 1)
        ctx["variables"], ctx["globals"] = a["variables"], a["globals"]
        chat.keep(b)


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"SKIPPED: {CORPUS} not found")
def test_every_corpus_preset_renders_a_chat_as_the_dict_four_turns_running():
    for path in sorted(CORPUS.iterdir()):
        ctx = context(200)
        turns(stpreset.Preset.from_json(path.read_bytes()).compile(), ctx, stpreset.Chat(ctx), 4)


def test_history_strings_come_back_as_given_and_unchanged_messages_as_the_same_objects():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    hi = "hi " * 20
    chat = stpreset.Chat({"char": "T", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": hi}]})
    first = compiled.render(chat)
    assert first["messages"][1]["parts"][0] is hi
    chat.append({"tag": "DIALOGUE_HISTORY", "role": "model", "text": "ok"})
    second = compiled.render(chat)
    assert second["messages"][0] is first["messages"][0]
    assert second["messages"][1]["parts"] == (hi,)
    with pytest.raises(TypeError):
        second["messages"][0]["role"] = "user"
    with pytest.raises(TypeError):
        second["messages"][0]["source"]["node"] = "x"
    assert dict(second)["prompt_tokens"] is None


def test_keep_carries_variables_small_or_large():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    for seed in ("s", "x" * 20000):
        chat = stpreset.Chat({"variables": {"seed": seed}})
        for _ in range(3):
            out = compiled.render(chat)
            chat.keep(out)
        assert out["variables"]["turn"] == "3" and out["variables"]["big"] == seed


def test_keep_carries_the_variables_a_bot_edited_once_it_read_them():
    compiled = stpreset.Preset.from_json(
        json.dumps({"prompts": [{"identifier": "main", "content": "{{setvar::n::{{getvar::n}}x}}{{getvar::n}}"}]})
    ).compile()
    chat = stpreset.Chat({})
    chat.keep(compiled.render(chat))
    out = compiled.render(chat)
    assert out["messages"][0]["parts"] == ("xx",)
    out["variables"]["n"] = "EDITED"
    chat.keep(out)
    assert compiled.render(chat)["messages"][0]["parts"] == ("EDITEDx",)


def test_a_saved_chat_read_back_renders_the_next_turns_as_the_kept_one():
    compiled = stpreset.Preset.from_json(
        json.dumps(
            {
                "prompts": [
                    {"identifier": "main", "content": "{{setvar::n::{{getvar::n}}x}}{{getvar::n}}"},
                    {"identifier": "worldInfoBefore", "marker": True},
                    {"identifier": "chatHistory", "marker": True},
                ]
            }
        )
    ).compile()
    kept = stpreset.Chat(
        {
            "position": 1,
            "world_info": {"budget_percent": 100},
            "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain \U0001f327", "name": "Alice"}],
            "lorebooks": [{"name": "w", "entries": {"0": {"key": ["rain"], "content": "It rains.", "sticky": 3}}}],
        }
    )

    def turn(chat, n, text):
        out = compiled.render(chat)
        doc = json.dumps(out.to_dict(), sort_keys=True)
        chat.keep(out)
        chat.set({"wi_state": out["wi_state"], "position": n})
        chat.append({"tag": "DIALOGUE_HISTORY", "role": "model", "text": text})
        return doc

    turn(kept, 2, "It pours.")
    saved = json.dumps(kept.to_dict())
    assert json.loads(saved)["stpreset_chat"] == 1
    loaded = stpreset.Chat(json.loads(saved))
    assert len(loaded) == len(kept)
    for n, text in ((3, "Dry now."), (4, "Sun."), (5, "Night.")):
        assert turn(loaded, n, text) == turn(kept, n, text)
    assert loaded.to_dict() == kept.to_dict()
    with pytest.raises(stpreset.ContextError, match="stpreset_chat"):
        stpreset.Chat({"stpreset_chat": 2})


def test_a_refused_change_changes_nothing():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    chat = stpreset.Chat({"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "a"}]})
    before = json.dumps(compiled.render(chat).to_dict())
    with pytest.raises(stpreset.ContextError, match=r"items\[1\]"):
        chat.extend([{"role": "user", "text": "b"}, {"role": "narrator", "text": "c"}])
    for bad in ({"seed": -1}, {"items": []}):
        with pytest.raises(stpreset.ContextError):
            chat.set(bad)
    with pytest.raises(stpreset.ContextError):
        stpreset.Chat([])
    assert len(chat) == 1
    assert json.dumps(compiled.render(chat).to_dict()) == before


def test_splice_follows_list_semantics():
    compiled = stpreset.Preset.from_json(PRESET).compile()

    def item(text):
        return {"tag": "DIALOGUE_HISTORY", "role": "user", "text": text}

    chat, plain = stpreset.Chat({}), {"items": []}
    chat.extend([item("one"), item("two"), item("three")])
    plain["items"] += [item("one"), item("two"), item("three")]
    chat.splice(-1, 1)
    del plain["items"][-1:]
    chat.splice(0, 0, item("zero"))
    plain["items"][0:0] = [item("zero")]
    chat.splice(1)
    del plain["items"][1:]
    assert json.dumps(compiled.render(chat).to_dict()) == json.dumps(compiled.render(plain))


def notes(out):
    return [d["message"] for d in out["diagnostics"] if d["kind"] == "LoneSurrogate"]


def test_a_lone_surrogate_anywhere_becomes_the_replacement_character_with_one_note():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    ctx = {"char": "A" + HALF, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "x" + HALF}]}
    text = '{"char": "A' + HALF + '", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "x' + HALF + '"}]}'
    for c in (ctx, text, json.dumps(ctx), stpreset.Chat(ctx)):
        out = compiled.render(c)
        msgs = out["messages"]
        assert msgs[0]["parts"][0].startswith("You are A\ufffd.")
        assert msgs[1]["parts"][0] == "x\ufffd"
        assert len(notes(out)) == 1 and "2 lone UTF-16 surrogates" in notes(out)[0]
    p = stpreset.Preset.from_json('{"prompts": [{"identifier": "main", "content": "a' + HALF + '"}]}')
    assert p.compile().render()["messages"][0]["parts"] == ["a\ufffd"]
    assert "the preset had 1" in notes(p.audit())[0]
    t = stpreset.expand("b" + HALF + "{{user}}", {"user": "U"})
    assert t["text"] == "b\ufffdU" and "the template had 1" in notes(t)[0]
    stored = compiled.store_message("c" + HALF, "model")
    assert stored["text"] == "c\ufffd" and "the message had 1" in notes(stored)[0]
    assert notes(stpreset.expand("😀")) == []


def test_misuse_raises_the_package_error_or_type_error():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    deep = {}
    d = deep
    for _ in range(100000):
        d["x"] = {}
        d = d["x"]
    with pytest.raises(stpreset.ContextError):
        compiled.render({"provider_options": deep})
    with pytest.raises(stpreset.ContextError):
        compiled.render({"seed": float("nan")})
    for bad in ([1], 5, object()):
        with pytest.raises(stpreset.ContextError):
            compiled.render(bad)
    with pytest.raises(TypeError):
        stpreset.Preset.from_json(None)


def test_json_nested_127_deep_reads_on_a_64_kib_thread():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    deep = "[" * 127 + "]" * 127
    result = []

    def run():
        try:
            compiled.render_request('{"provider_options": {"stop": ' + deep + "}}")
            result.append("ok")
        except stpreset.StpresetError as e:
            result.append(e.kind)

    old = threading.stack_size(65536)
    try:
        t = threading.Thread(target=run)
        t.start()
        t.join()
    finally:
        threading.stack_size(old)
    assert len(result) == 1  # an answer or a package error: never a crashed thread


def test_errors_name_the_field():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    with pytest.raises(stpreset.ContextError, match=r"^context: `variables\.turns`: .*integer `3`"):
        compiled.render({"variables": {"turns": 3}})
    with pytest.raises(stpreset.ContextError, match=r"`items\[0\]\.text`"):
        compiled.render({"items": [{"role": "user", "text": 5}]})


def test_review_findings_notes_follow_set_and_keep_and_the_passes():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    ctx = {"user": "A" + HALF, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}
    chat = stpreset.Chat(ctx)
    r = compiled.render(chat)
    chat.keep(r)
    ctx["variables"], ctx["globals"] = r["variables"], r["globals"]
    chat.set({"char": "B"})
    ctx["char"] = "B"
    assert json.dumps(compiled.render(chat).to_dict()) == json.dumps(compiled.render(ctx))
    assert len(notes(compiled.render(chat))) == 1
    out = compiled.edit_message("x", "model", "S" + HALF)
    assert [n.split(" had")[0] for n in notes(out)] == ["the speaker"]
    assert "the context had 1" in notes(compiled.store_message("a", "user", {"user": "U" + HALF}))[0]
    assert "the context had 1" in notes(compiled.prompt_pass({"items": [{"role": "user", "text": "a" + HALF}]}))[0]
    # Two halves of one character, side by side, are the character in every input.
    pair = "\ud83d\ude00"
    assert stpreset.expand(pair)["text"] == "😀"
    assert compiled.render({"user": pair})["messages"][0]["parts"][0].startswith("You are")
    assert notes(compiled.render({"user": pair})) == []


def test_review_findings_a_chat_serves_several_threads_one_turn_at_a_time():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    chat = stpreset.Chat({})
    errors = []

    def renders():
        try:
            for _ in range(100):
                compiled.render(chat)
        except Exception as e:  # noqa: BLE001 - any escape is the finding
            errors.append(e)

    def changes():
        try:
            for i in range(100):
                chat.append({"tag": "DIALOGUE_HISTORY", "role": "user", "text": f"m{i}"})
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=renders) for _ in range(3)] + [threading.Thread(target=changes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(chat) == 100
    with pytest.raises(stpreset.ContextError, match=r"^context: `items\[0\]\.role`"):
        chat.append({"role": "narrator"})


def test_nodes_and_toggles():
    p = stpreset.Preset.from_json(
        json.dumps(
            {
                "prompts": [
                    {"identifier": "main", "name": "Main", "content": "Hi"},
                    {"identifier": "nsfw", "content": "Spicy", "enabled": False},
                ]
            }
        )
    )
    assert p.nodes()[1] == {
        "enabled": False, "identifier": "nsfw", "injection": None, "marker": False, "name": "nsfw", "role": "system"
    }
    assert [m["parts"] for m in p.compile({"nsfw": True}).render()["messages"]] == [["Hi"], ["Spicy"]]
    assert len(p.compile().render()["messages"]) == 1
    with pytest.raises(stpreset.PresetError) as e:
        p.compile({"nope": True})
    assert e.value.kind == "UnknownNode"
    with pytest.raises(TypeError):
        p.compile({"nsfw": "yes"})


def test_review_len_and_splices_wait_for_a_render_in_another_thread():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    chat = stpreset.Chat({"items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": f"m{i}"} for i in range(2000)]})
    errors = []

    def renders():
        try:
            for _ in range(50):
                compiled.render(chat)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def changes():
        try:
            for _ in range(50):
                chat.append({"tag": "DIALOGUE_HISTORY", "role": "user", "text": "n"})
                len(chat)
                chat.splice(-1, 1)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=renders), threading.Thread(target=changes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(chat) == 2000
    with pytest.raises(TypeError):
        chat.splice(None)


def test_a_chats_macro_function_answers_what_the_catalog_lacks():
    preset = stpreset.Preset.from_json(
        json.dumps(
            {
                "prompts": [
                    {
                        "identifier": "main",
                        "content": "[{{summary}}] [{{memory::recent::2}}] [{{memory::recent::2}}] "
                        "[{{user}}] [{{nobody}}] [{{boom}}] [{{number}}]",
                    }
                ]
            }
        )
    ).compile()
    calls = []

    def macros(name, args):
        calls.append((name, args))
        if name == "boom":
            raise RuntimeError("the memory service is down")
        if name == "number":
            return 7
        return {"summary": "So far.", "memory": f"{len(args)} notes"}.get(name)

    chat = stpreset.Chat({"user": "Alice"})
    chat.set_macro_fn(macros)
    out = preset.render(chat)
    text = "".join(out["messages"][0]["parts"])
    assert text == "[So far.] [2 notes] [2 notes] [Alice] [{{nobody}}] [{{boom}}] [{{number}}]"
    # Once per distinct call a render; never for a catalog macro.
    assert sorted(calls) == sorted(
        [("summary", []), ("memory", ["recent", "2"]), ("nobody", []), ("boom", []), ("number", [])]
    )
    failed = [d["message"] for d in out["diagnostics"] if d["kind"] == "HostMacroFailed"]
    assert any("the memory service is down" in m for m in failed), failed
    assert any("returned int, not str or None" in m for m in failed), failed
    chat.set_macro_fn(None)
    text = "".join(preset.render(chat)["messages"][0]["parts"])
    assert text.startswith("[{{summary}}]")
    with pytest.raises(TypeError):
        chat.set_macro_fn(3)


def test_a_macro_function_that_uses_its_chat_or_returns_a_flood_fails_cleanly():
    preset = stpreset.Preset.from_json(
        json.dumps({"prompts": [{"identifier": "main", "content": "[{{again}}] [{{change}}] [{{flood}}]"}]})
    ).compile()
    chat = stpreset.Chat({"user": "Alice"})

    def macros(name, args):
        if name == "again":
            return "".join(preset.render(chat)["messages"][0]["parts"])
        if name == "change":
            chat.set({"user": "Bob"})
            return "changed"
        return "x" * (20 << 20)

    chat.set_macro_fn(macros)
    out = preset.render(chat)
    text = "".join(out["messages"][0]["parts"])
    assert text.startswith("[{{again}}] [{{change}}] [")
    failed = [d for d in out["diagnostics"] if d["kind"] == "HostMacroFailed"]
    assert len(failed) == 2, out["diagnostics"]
    # The flood is data like any output: cut at the output limit, with its diagnostic.
    assert len(text) <= 8 << 20
    assert any(d["kind"] == "LimitReached" for d in out["diagnostics"]), out["diagnostics"]


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"SKIPPED: {CORPUS} not found")
def test_a_chat_request_is_the_dicts_request_kept_as_a_render():
    """``request(chat)`` gives ``request(dict)``'s document in both layouts, turn after turn;
    ``body`` is ``request_body``'s bytes; a render between requests has its own details (and
    in the SillyTavern layout spells replies ``assistant`` and names messages, as the dict)."""
    for path in sorted(CORPUS.iterdir()):
        compiled = stpreset.Preset.from_json(path.read_bytes()).compile()
        for layout in ("seed", "sillytavern"):
            ctx = dict(context(40), layout=layout)
            chat = stpreset.Chat(ctx)
            for t in range(3):
                a = compiled.request(ctx)
                b = compiled.request(chat)
                assert json.dumps(b.to_dict()) == json.dumps(a), (path.name, layout, t)
                assert json.loads(b.body) == a["request"]
                assert b.body == compiled.request_body(ctx)
                x, y = compiled.render(chat).to_dict(), compiled.render(ctx)
                assert json.dumps(x) == json.dumps(y), (path.name, layout, t)
                again = compiled.request(chat)
                ctx["variables"], ctx["globals"] = a["variables"], a["globals"]
                chat.keep(again)
                news = {"tag": "DIALOGUE_HISTORY", "role": "user", "text": f"Alice: turn {t}"}
                ctx["items"].append(news)
                chat.append(news)


def test_keeping_a_chat_request_carries_its_variables_edited_or_not():
    compiled = stpreset.Preset.from_json(
        json.dumps({"prompts": [{"identifier": "main", "content": "{{setvar::n::{{getvar::n}}x}}{{getvar::n}}"}]})
    ).compile()
    chat = stpreset.Chat({})
    chat.keep(compiled.request(chat))
    out = compiled.request(chat)
    assert out["request"]["messages"][0]["content"] == "xx"
    assert isinstance(out, stpreset.ChatRequest) and set(out) >= {"request", "variables", "diagnostics"}
    out["variables"]["n"] = "EDITED"
    chat.keep(out)
    assert compiled.request(chat)["request"]["messages"][0]["content"] == "EDITEDx"


@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"SKIPPED: {CORPUS} not found")
def test_a_chat_switching_layouts_renders_each_as_the_dict():
    """A reply is ``model`` in the seed layout and ``assistant`` (with names) in the
    SillyTavern layout; a message kept from a render in the other layout is not handed back."""
    path = sorted(CORPUS.iterdir())[0]
    compiled = stpreset.Preset.from_json(path.read_bytes()).compile()
    ctx = context(20)
    chat = stpreset.Chat(ctx)
    for layout in ("seed", "sillytavern", "seed", "sillytavern"):
        ctx["layout"] = layout
        chat.set({"layout": layout})
        out = compiled.render(chat).to_dict()
        assert json.dumps(out) == json.dumps(compiled.render(ctx)), layout
        roles = {m["role"] for m in out["messages"]}
        assert ("assistant" in roles) == (layout == "sillytavern") and ("model" in roles) == (layout == "seed")


def test_a_chat_requests_world_info_state_read_alone_is_the_documents():
    compiled = stpreset.Preset.from_json(json.dumps({"prompts": [
        {"identifier": "main", "content": "Hi{{setvar::v::{{getvar::v}}1}}"},
        {"identifier": "worldInfoBefore", "marker": True},
        {"identifier": "chatHistory", "marker": True},
    ]})).compile()
    ctx = {"position": 1, "world_info": {"budget_percent": 100},
           "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
           "lorebooks": [{"name": "w", "entries": {"0": {"key": ["rain"], "content": "It rains.", "sticky": 3}}}]}
    chat = stpreset.Chat(ctx)
    for turn in range(2, 5):
        a = compiled.request(ctx)
        b = compiled.request(chat)
        r = compiled.render(chat)
        assert b["wi_state"] == a["wi_state"] == r["wi_state"] and b["wi_state"]["effects"]
        assert json.dumps(b.to_dict()) == json.dumps(a)
        ctx.update(wi_state=a["wi_state"], position=turn, variables=a["variables"])
        chat.set({"wi_state": b["wi_state"], "position": turn})
        chat.keep(b)
    plain = compiled.request(chat)
    assert "wi_state" in plain and stpreset.Chat({}) is not None
    assert "wi_state" not in compiled.request(stpreset.Chat({})) and compiled.render(stpreset.Chat({})).get("wi_state") is None
