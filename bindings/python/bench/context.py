"""The bot context of `benches/support` (7 host items, 200 `DIALOGUE_HISTORY` messages, Alice /
Tomori), built in Python as a bot would build it. Shared by the bench scripts."""


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
