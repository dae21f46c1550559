"""Regex scripts (SPEC §13): the scripts list, the message passes, the prompt pass and render."""

import json

import pytest

import stpreset

SCRIPTS = [
    {"scriptName": "plan", "findRegex": "/<plan>[\\s\\S]*?<\\/plan>\\s*/g", "placement": [2], "promptOnly": True},
    {"scriptName": "ooc", "findRegex": "/\\s*<ooc>.*?<\\/ooc>/g", "placement": [1, 2]},
    {"scriptName": "bold", "findRegex": "/\\*\\*(.+?)\\*\\*/g", "replaceString": "<b>$1</b>", "placement": [2], "markdownOnly": True},
    {"scriptName": "trim", "findRegex": "/^(.*)$/", "replaceString": "[$1]", "trimStrings": ["{{char}}: "], "placement": [2], "runOnEdit": True},
]
PRESET = json.dumps(
    {
        "prompts": [{"identifier": "main", "content": "You are {{char}}."}, {"identifier": "chatHistory", "marker": True}],
        "extensions": {"regex_scripts": SCRIPTS},
    }
)
COMPILED = stpreset.Preset.from_json(PRESET).compile()
ALLOWED = {"char": "Tomori", "allow_preset_regex": True}
ITEMS = [
    {"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"},
    {"tag": "DIALOGUE_HISTORY", "role": "model", "name": "Tomori", "text": "<plan>wave</plan>\nHello!"},
]


def kinds(out):
    return [(d["kind"], d["script"]) for d in out["diagnostics"]]


def test_regex_scripts_lists_them_as_imported():
    preset = stpreset.Preset.from_json(PRESET)
    scripts = preset.regex_scripts
    assert [(s["position"], s["name"]) for s in scripts] == [(0, "plan"), (1, "ooc"), (2, "bold"), (3, "trim")]
    assert scripts[0] == {
        "position": 0,
        "source": "preset",
        "id": "",
        "name": "plan",
        "find_regex": "/<plan>[\\s\\S]*?<\\/plan>\\s*/g",
        "replace_string": "",
        "trim_strings": [],
        "placement": [2],
        "disabled": False,
        "markdown_only": False,
        "prompt_only": True,
        "run_on_edit": False,
        "substitute": "none",
        "min_depth": None,
        "max_depth": None,
    }
    assert preset.compile().regex_scripts == scripts
    assert stpreset.Preset.from_json('{"prompts": [{"identifier": "main", "content": "x"}]}').regex_scripts == []


@pytest.mark.parametrize("context", [None, {}, {"allow_preset_regex": False}, "{}"])
def test_not_allowed_runs_nothing_and_says_so(context):
    out = COMPILED.store_message("Hi <ooc>brb</ooc> there", "user", context)
    assert out["text"] == "Hi <ooc>brb</ooc> there"
    assert kinds(out) == [("RegexNotAllowed", None)]
    assert out["diagnostics"][0]["severity"] == "info"


def test_store_message_runs_the_store_scripts_when_allowed():
    assert COMPILED.store_message("Hi <ooc>brb</ooc> there", "user", ALLOWED) == {"diagnostics": [], "text": "Hi there"}
    # A reply: `ooc`, then `trim` (a store script too); `plan` is promptOnly. `assistant` is the model.
    reply = "<plan>wave</plan> Hello <ooc>x</ooc>"
    assert COMPILED.store_message(reply, "assistant", ALLOWED)["text"] == "[<plan>wave</plan> Hello]"
    assert COMPILED.store_message(reply, "model", json.dumps(ALLOWED))["text"] == "[<plan>wave</plan> Hello]"


def test_edit_message_runs_run_on_edit_scripts_with_the_speaker_as_char():
    assert COMPILED.edit_message("Nova: hi", "model", "Nova", ALLOWED)["text"] == "[hi]"
    assert COMPILED.edit_message("Tomori: hi", "model", context=ALLOWED)["text"] == "[hi]"
    # Store scripts without runOnEdit do not run on an edit.
    assert COMPILED.edit_message("a <ooc>b</ooc>", "user", None, ALLOWED)["text"] == "a <ooc>b</ooc>"


def test_display_text_turns_the_display_passs_html_back_into_markdown():
    # `bold` writes <b>: the text shows **bold** again, and the reply's line breaks stay.
    text = 'so **bold**\n<style>.x{}</style><span style="color:red">red</span>'
    out = COMPILED.display_text(text, "model", 0, None, ALLOWED)
    assert out["text"] == "so **bold**\nred"


def test_display_message_runs_markdown_only_scripts():
    assert COMPILED.display_message("so **bold**", "model", 0, None, ALLOWED)["text"] == "so <b>bold</b>"
    assert COMPILED.display_message("so **bold**", "user", context=ALLOWED)["text"] == "so **bold**"


def test_prompt_pass_gives_each_item_after_the_prompt_scripts():
    assert COMPILED.prompt_pass({**ALLOWED, "items": ITEMS}) == {"diagnostics": [], "items": ["hi", "Hello!"]}
    assert kinds(COMPILED.prompt_pass({"items": []})) == [("RegexNotAllowed", None)]


def test_render_with_allow_preset_regex_drops_the_plan_and_prefixes_the_name():
    def texts(out):
        return [[m["role"], "".join(m["parts"])] for m in out["messages"]]

    assert texts(COMPILED.render({**ALLOWED, "items": ITEMS})) == [
        ["system", "You are Tomori."],
        ["user", "hi"],
        ["model", "Tomori: Hello!"],
    ]
    off = COMPILED.render({"char": "Tomori", "items": ITEMS})
    assert texts(off)[2] == ["model", "Tomori: <plan>wave</plan>\nHello!"]
    assert any(d["kind"] == "RegexNotAllowed" and d["script"] is None for d in off["diagnostics"])


def test_results_are_the_json_the_library_prints():
    raw = COMPILED._inner.store_message_json("a <ooc>b</ooc>", "user", '{"allow_preset_regex": true}')
    assert raw == '{"diagnostics":[],"text":"a"}'
    raw = COMPILED._inner.prompt_pass_json("{}")
    assert raw.startswith('{"diagnostics":[{') and raw.endswith('"items":[]}')


def test_bad_roles_contexts_and_arguments_raise():
    with pytest.raises(stpreset.ContextError) as e:
        COMPILED.store_message("x", "narrator", ALLOWED)
    assert e.value.kind == "Role" and '"narrator"' in str(e.value)
    with pytest.raises(stpreset.ContextError, match="^context: "):
        COMPILED.store_message("x", "user", {"allow_preset_regex": "yes"})
    with pytest.raises(stpreset.ContextError):
        COMPILED.prompt_pass([])
    with pytest.raises(TypeError):
        COMPILED.store_message(b"x", "user")
    with pytest.raises(TypeError):
        COMPILED.store_message("x", None)
    with pytest.raises(TypeError):
        COMPILED.edit_message("x", "user", 5)
    with pytest.raises(TypeError):
        COMPILED.display_message("x", "user", 1.5)
    with pytest.raises(ValueError):
        COMPILED.display_message("x", "user", -1)
