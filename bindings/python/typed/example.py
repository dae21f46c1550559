"""A bot's turn, typed: `mypy --strict typed/example.py` runs in CI (.ci/run), so the stubs keep
catching mistakes (a misspelt tag or role is an error; see typed/mistakes.py)."""

import json
from typing import Optional

import stpreset
from stpreset import Chat, Context, ContextItem, FirstMessage, WiResult, WiState, lore

PRESET = '{"prompts": [{"identifier": "main", "content": "Hi {{user}}"}, {"identifier": "chatHistory", "marker": true}]}'


def switch_on(store: stpreset.PresetStore, guild: int, preset: int, node: str) -> list[str]:
    """A bot's menu switching a node on: the author's exclusive groups refuse it, then the bot
    asks the admin and resolves (issue 41)."""
    try:
        done = store.set_enabled(guild, preset, {node: True})
    except stpreset.StoreError as e:
        if e.kind != "Refused" or e.issues is None:
            raise
        reasons = [i["message"] + (f' ("{i["author"]}")' if i["author"] else "") for i in e.issues]
        print("; ".join(reasons))
        done = store.set_enabled(guild, preset, {node: True}, resolve=True)
    sections = store.outline(guild, preset)["sections"]
    print([f'{s["title"]} {s["enabled"]}/{s["total"]}' for s in sections])
    return [c["identifier"] for c in done["changes"] if not c["enabled"]]


def main() -> None:
    # A public bot sets its render budget: about 400 ms, 50 of them for chat text.
    ctx: Context = {"user": "Alice", "char": "Tomori", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "hi"}],
                    "limits": {"render_work": 400_000_000, "chat_work": 50_000_000}}
    compiled = stpreset.Preset.from_json(PRESET).compile()
    chat = Chat(ctx)
    for turn in range(2):
        out = compiled.render(chat)
        for m in out["messages"]:
            print(m["role"], "".join(m["parts"]))
        chat.keep(out)
        reply: ContextItem = {"tag": "DIALOGUE_HISTORY", "role": "model", "text": f"reply {turn}"}
        chat.append(reply)
    plain = compiled.render(ctx)
    print(plain["prompt_tokens"], len(plain["diagnostics"]))
    # A chat's turn in one render: the bytes to POST, the variables kept natively.
    turn_request = compiled.request(chat)
    body: bytes = turn_request.body
    chat.keep(turn_request)
    print(len(body), turn_request["prompt_tokens"])
    # World Info: books in the context, the state kept between turns.
    lored: Context = {**ctx, "position": 1,
                      "lorebooks": [{"name": "town", "entries": {"0": {"key": ["hi"], "content": "Lore."}}}]}
    result: WiResult = lore(lored)
    state: WiState = result["state"]
    # Or the body and the state from one render.
    state = compiled.request({**lored, "wi_state": state}).get("wi_state", state)
    print(result["activated"], len(state["effects"]))
    # A chat started from the card's greeting, saved across a restart and read back.
    greeted = Chat({"char": "Tomori", "first_mes": "Welcome."})
    first: Optional[FirstMessage] = compiled.first_message(greeted)
    if first is not None:
        greeted.append(first["item"])
    restored = Chat(json.loads(json.dumps(greeted.to_dict())))
    print(len(restored), compiled.request({"provider_options": {"shape": "gemini"}})["request"])


if __name__ == "__main__":
    main()
