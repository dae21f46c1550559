"""Mistakes the stubs must catch: `mypy --strict typed/mistakes.py` fails on each line marked
`# error` (CI checks that it reports exactly these)."""

from stpreset import ContextItem, Lorebook

a: ContextItem = {"tag": "DIALOG_HISTORY", "role": "user", "text": "x"}  # error
b: ContextItem = {"tag": "DIALOGUE_HISTORY", "role": "narrator", "text": "x"}  # error
c: ContextItem = {"tag": "DIALOGUE_HISTORY", "text": "x"}  # error
d: Lorebook = {"entries": {}}  # error
