"""The API's shape, errors and threads."""

import json
import pathlib
import re
import threading

import pytest

import stpreset

PRESET = json.dumps(
    {
        "prompts": [
            {"identifier": "main", "content": "You are {{char}}.{{setvar::n::{{roll:1d1}}}}"},
            {"identifier": "chatHistory", "marker": True},
            {"identifier": "jb", "content": "{{incvar::turn}}", "injection_position": 1, "injection_depth": 0},
        ]
    }
)


def test_render_returns_dicts_in_the_spec_shape():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    out = compiled.render(
        {"char": "Tomori", "variables": {"turn": "4"}, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}]}
    )
    assert out == {
        "messages": [
            {"role": "system", "parts": ["You are Tomori."], "source": {"node": "main"}},
            {"role": "user", "parts": ["hi", "\n[System: 5]"], "source": {"tag": "DIALOGUE_HISTORY"}},
        ],
        "diagnostics": [],
        "variables": {"n": "1", "turn": "5"},
        "globals": {},
        "prompt_tokens": None,
        "effective": {
            "squash_system": False,
            "use_system_prompt": True,
            "assistant_prefill": "",
            "post_processing": "none",
            "max_context_tokens": None,
            "reserve_tokens": 0,
        },
    }


def test_contexts_may_be_json_text_or_nothing():
    assert stpreset.expand("{{user}}")["text"] == "User"
    assert stpreset.expand("{{user}}", '{"user": "Ann"}')["text"] == "Ann"
    assert stpreset.Template(b"{{char}}!").render({"char": "T"})["text"] == "T!"


def test_audit_has_line_and_column():
    audit = stpreset.Preset.from_json('{"prompts": [{"identifier": "main", "content": "a\\n{{foo}}"}]}').audit()
    assert (audit["nodes"], audit["enabled"]) == (1, 1)
    d = next(d for d in audit["diagnostics"] if d["kind"] == "UnknownMacro")
    assert (d["node"], d["line"], d["column"]) == ("main", 2, 1)


@pytest.mark.parametrize(
    "call, cls, kind",
    [
        (lambda: stpreset.Preset.from_json('{"prompts": [}'), stpreset.PresetError, "Json"),
        (lambda: stpreset.Preset.from_json("[1]"), stpreset.PresetError, "NotAPreset"),
        (lambda: stpreset.Preset.from_json(b'{"prompts": "\xff"}'), stpreset.PresetError, "Utf8"),
        (lambda: stpreset.Preset.from_json('{"prompts": [{"identifier": 5}]}'), stpreset.PresetError, "Field"),
        (lambda: stpreset.expand("x", {"seed": "seven"}), stpreset.ContextError, "Json"),
        (lambda: stpreset.expand("x", {"nope": 1}), stpreset.ContextError, "Json"),
        (lambda: stpreset.expand("x", [1]), stpreset.ContextError, "NotAnObject"),
        (lambda: stpreset.expand("x", "[1]"), stpreset.ContextError, "NotAnObject"),
        (lambda: stpreset.expand("x", {"user": object()}), stpreset.ContextError, "Json"),
        (lambda: stpreset.Template(b"\xc3"), stpreset.TemplateError, "Utf8"),
    ],
)
def test_errors_are_value_errors_with_a_kind(call, cls, kind):
    with pytest.raises(cls) as info:
        call()
    e = info.value
    assert isinstance(e, stpreset.StpresetError) and isinstance(e, ValueError)
    assert e.kind == kind, str(e)
    assert str(e) and "\n" not in str(e)


def test_wrong_types_are_type_errors():
    with pytest.raises(TypeError):
        stpreset.Preset.from_json(42)
    with pytest.raises(TypeError):
        stpreset.Template({})


def test_one_compiled_preset_serves_many_threads():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    results = {}

    def work(i):
        results[i] = compiled.render({"char": f"C{i}", "variables": {"turn": str(i)}})

    threads = [threading.Thread(target=work, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, out in results.items():
        assert out["messages"][0]["parts"][0] == f"You are C{i}."
        assert out["variables"]["turn"] == str(i + 1)
    assert len(results) == 32


def test_dicts_are_exactly_the_json_documents_the_cli_prints():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    ctx = json.dumps({"char": "T", "items": [{"tag": "CONTEXT_CURRENT", "role": "system", "text": "x", "depth": 0}]})
    assert compiled.render(ctx) == json.loads(compiled._inner.render_json(ctx))


def test_render_request_shapes_what_the_context_asks_for():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    out = compiled.render_request({
        "char": "T", "max_context_tokens": 1000, "tokenizer": "words",
        "provider_options": {"shape": "google"},
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}],
    })
    assert out["request"]["systemInstruction"] == {"parts": [{"text": "You are T."}]}
    assert isinstance(out["prompt_tokens"], int)
    assert "wi_state" not in out
    with pytest.raises(stpreset.ContextError, match="cache_ttl"):
        compiled.render_request({"provider_options": {"cache_ttl": "300"}})
    # With lore, the state the next turn needs comes with the body: one render a turn.
    lored = compiled.request({"position": 1, "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "rain"}],
                              "lorebooks": [{"name": "w", "entries": {"0": {"key": ["rain"], "content": "Wet.", "sticky": 2}}}]})
    assert lored["wi_state"]["effects"][0]["entry"] == "w.0"


def test_request_body_is_the_request_json_as_bytes():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    ctx = {"char": "T", "provider_options": {"shape": "anthropic"},
           "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "héllo"}]}
    body = compiled.request_body(ctx)
    assert isinstance(body, bytes)
    assert json.loads(body) == compiled.render_request(ctx)["request"]


def test_settings_are_readable_and_reach_the_request():
    preset = stpreset.Preset.from_json(
        json.dumps(
            {
                "temperature": 1.5,
                "openai_max_tokens": " 400 ",
                "top_k": "x",
                "prompts": [{"identifier": "main", "content": "Hi"}],
            }
        )
    )
    assert preset.settings == {"openai_max_tokens": 400, "temperature": 1.5}
    compiled = preset.compile()
    assert compiled.settings == preset.settings
    out = compiled.render_request({"model": "claude-haiku-4-5", "provider_options": {"shape": "anthropic"}})
    body = out["request"]
    assert (body["model"], body["max_tokens"], body["temperature"]) == ("claude-haiku-4-5", 400, 1.0)
    assert any(d["kind"] == "PresetSettingIgnored" for d in out["diagnostics"])
    assert json.loads(compiled.request_body({"preset_settings": False}))["messages"][0]["content"] == "Hi"


def test_preload_tokenizer_loads_up_front_and_refuses_unknown_names():
    stpreset.preload_tokenizer("o200k")
    stpreset.preload_tokenizer()
    stpreset.preload_tokenizer("words")
    with pytest.raises(ValueError, match='unknown tokenizer "gpt2"'):
        stpreset.preload_tokenizer("gpt2")
    with pytest.raises(TypeError):
        stpreset.preload_tokenizer(7)
    compiled = stpreset.Preset.from_json(PRESET).compile()
    out = compiled.render(
        {
            "max_context_tokens": 1000,
            "tokenizer": "o200k",
            "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hello world"}],
        }
    )
    # What `stpreset render --format json` counts for the same preset and context.
    assert out["prompt_tokens"] == 25


def test_a_dict_contexts_errors_name_the_field_without_a_position():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    with pytest.raises(stpreset.ContextError) as e:
        compiled.render({"items": [{"role": "user", "txt": "x"}]})
    assert str(e.value).startswith("context: `items[0].txt`: unknown field"), str(e.value)
    with pytest.raises(stpreset.ContextError) as e:
        compiled.render('{"user": 5}')
    assert "line 1 column" in str(e.value)


def test_layout_sillytavern_gives_the_body_sillytavern_sends():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    ctx = {
        "char": "T", "layout": "sillytavern", "provider_options": {"shape": "openai"},
        "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi {{char}}"}],
    }
    # No 100001 prompt order: ST's default order, which has no `jb`.
    assert compiled.render_request(ctx)["request"]["messages"] == [
        {"role": "system", "content": "You are T."},
        {"role": "system", "content": "[Start a new Chat]"},
        {"role": "user", "content": "hi T"},
    ]
    seed = compiled.render_request({**ctx, "layout": "seed"})["request"]["messages"]
    assert seed != compiled.render_request(ctx)["request"]["messages"]
    with pytest.raises(stpreset.ContextError, match="layout"):
        compiled.render_request({"layout": "tavern"})


def test_a_group_of_three_in_append_mode_gives_every_members_card():
    compiled = stpreset.Preset.from_json(PRESET).compile()

    def card(name, description):
        return {"spec": "chara_card_v2", "spec_version": "2.0", "data": {"name": name, "description": description}}

    ctx = {
        "user": "Alice", "char": "Sera", "description": "Sera, who tends the shrine.",
        "layout": "sillytavern", "provider_options": {"shape": "openai"},
        "group": ["Sera", "Mira", "Kai"], "group_muted": ["Kai"], "group_generation_mode": "append",
        "group_join_prefix": "<FIELDNAME> of {{char}}: ",
        "group_cards": {"Mira": card("Mira", "{{char}} the fox."), "Kai": card("Kai", "Kai the muted.")},
        "items": [
            {"tag": "DIALOGUE_HISTORY", "role": "model", "text": "Hello.", "name": "Mira"},
            {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "Hi all.", "name": "Alice"},
        ],
    }

    def contents(c):
        return [m["content"] for m in compiled.render_request(c)["request"]["messages"]]

    turn = contents(ctx)
    assert "Description of Sera: Sera, who tends the shrine.\nDescription of Mira: Mira the fox." in turn
    assert "[Write the next reply only as Sera.]" in turn
    assert any("Kai the muted." in t for t in contents({**ctx, "group_generation_mode": "append_disabled"}))
    assert not any("Mira the fox." in t for t in contents({**ctx, "group_generation_mode": "swap"}))
    with pytest.raises(stpreset.ContextError, match="group_generation_mode"):
        compiled.render_request({**ctx, "group_generation_mode": "merge"})


def test_read_st_chat_turns_a_sillytavern_chat_file_into_context_fields():
    lines = [
        {"user_name": "Alice", "character_name": "Sera", "chat_metadata": {"variables": {"n": 2}}},
        {"name": "Sera", "is_user": False, "mes": "Hello.", "send_date": "2025-06-15T13:50:00Z"},
        {"name": "Alice", "is_user": True, "is_system": True, "mes": "hidden"},
        {"name": "Alice", "is_user": True, "mes": "Hi {{char}}."},
    ]
    fields = stpreset.read_st_chat("\n".join(json.dumps(line) for line in lines))
    assert [(i["role"], i["name"], i["text"]) for i in fields["items"]] == [
        ("model", "Sera", "Hello."), ("user", "Alice", "Hi {{char}}."),
    ]
    assert (fields["user"], fields["char"], fields["variables"], fields["position"]) == ("Alice", "Sera", {"n": "2"}, 3)
    compiled = stpreset.Preset.from_json(PRESET).compile()
    out = compiled.render_request({**fields, "layout": "sillytavern", "provider_options": {"shape": "openai"}})
    assert out["request"]["messages"][-2:] == [
        {"role": "assistant", "content": "Hello."}, {"role": "user", "content": "Hi Sera."},
    ]
    with pytest.raises(stpreset.ContextError, match="chat line 2"):
        stpreset.read_st_chat("{}\nnot json")


def test_the_public_calls_are_the_vocabulary_files():
    """Every public name of the package is in bindings/vocabulary.json, and every Python name
    listed there exists (the Node suite checks its side of the same file)."""
    table = json.loads((pathlib.Path(__file__).resolve().parents[2] / "vocabulary.json").read_text())
    listed = {c["python"] for c in table["calls"] if c["python"] is not None}
    public = set(stpreset.__all__)
    for name in stpreset.__all__:
        obj = getattr(stpreset, name)
        if isinstance(obj, type):
            # Calls the class adds, not a base's it overrides (FrozenDict refusing dict.update).
            inherited = {a for base in obj.__mro__[1:] for a in vars(base)}
            public |= {f"{name}.{a}" for a in vars(obj) if not a.startswith("_") and a not in inherited}
    # `from __future__ import annotations` does not leak a name (issue 39).
    assert "annotations" not in vars(stpreset)
    assert public - listed == set(), "public but not in bindings/vocabulary.json"
    assert listed - public == set(), "listed in bindings/vocabulary.json but not public"
    # Pairs differ only by the naming rule unless the file says why.
    def snake(name):
        cls, _, member = name.rpartition(".")
        if not cls and name[0].isupper():
            return name
        words = re.sub(r"(?<=[a-z])([A-Z])", lambda m: "_" + m.group(1).lower(), member)
        return f"{cls}.{words}" if cls else words

    for c in table["calls"]:
        if c["node"] is not None and c["python"] is not None and "why" not in c:
            assert snake(c["node"]) == c["python"], c


def test_first_message_starts_a_chat_as_sillytavern_opens_one():
    compiled = stpreset.Preset.from_json(PRESET).compile()
    first = compiled.first_message({"char": "Sera", "first_mes": "", "alternate_greetings": ["Hello, {{user}}.", "Hm?"]})
    assert first["item"] == {"name": "Sera", "role": "model", "tag": "DIALOGUE_HISTORY", "text": "Hello, {{user}}."}
    assert first["swipes"] == ["Hello, {{user}}.", "Hm?"]
    assert compiled.first_message({"char": "Sera"}) is None
    chat = stpreset.Chat({"char": "Sera", "first_mes": "Hi."})
    chat.append(compiled.first_message(chat)["item"])
    assert len(chat) == 1


def test_outline_gives_the_authors_sections_tooltips_and_groups():
    p = stpreset.Preset.from_json(json.dumps({"prompts": [
        {"identifier": "h", "name": "=== Style ===", "content": ""},
        {"identifier": "a", "name": "Terse",
         "content": "{{// @tooltip Short.}}{{// @badge LEN}}{{// @mutual-exclusive-group len}}Be terse."},
        {"identifier": "b", "name": "Lush", "content": "{{// @mutual-exclusive-group len}}Be lush."},
    ]}))
    o = p.outline()
    assert o["groups"] == [{"name": "len", "members": ["a", "b"]}]
    assert (o["sections"][0]["title"], o["sections"][0]["enabled"], o["sections"][0]["total"]) == ("Style", 2, 2)
    assert o["nodes"][1]["section"] == ["Style"]
    assert (o["nodes"][1]["tooltip"], o["nodes"][1]["badges"], o["nodes"][0]["header"]) == ("Short.", ["LEN"], "main")
