"""Render SillyTavern chat-completion presets: the stpreset Rust engine for Python.

    >>> import stpreset
    >>> preset = stpreset.Preset.from_json('{"prompts": [{"identifier": "main", "content": "Hi {{user}}"}]}')
    >>> preset.compile().render({"user": "Alice"})["messages"][0]["parts"]
    ['Hi Alice']

Contexts and results are dicts in the JSON shape of SPEC §9 (the context file, and what
``stpreset render --format json`` prints). Rendering releases the GIL.
"""

from __future__ import annotations

import json as _json
import re as _re

from . import _native

__all__ = [
    "Preset",
    "CompiledPreset",
    "Template",
    "expand",
    "preload_tokenizer",
    "StpresetError",
    "PresetError",
    "ContextError",
    "TemplateError",
]


class StpresetError(ValueError):
    """An input the engine refuses. ``kind`` names the variant (``Json``, ``TooLarge``, ...)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message


class PresetError(StpresetError):
    """A preset file that cannot be imported."""


class ContextError(StpresetError):
    """A context that is not the SPEC §9 shape."""


class TemplateError(StpresetError):
    """Template bytes that are not UTF-8, or too large."""


_CLASSES = {"PresetError": PresetError, "ContextError": ContextError, "TemplateError": TemplateError}


def _call(f, *args):
    # The native layer raises ValueError(class, kind, message).
    try:
        return f(*args)
    except ValueError as e:
        if len(e.args) == 3 and e.args[0] in _CLASSES:
            raise _CLASSES[e.args[0]](e.args[1], e.args[2]) from None
        raise


_POSITION = _re.compile(r"^context file, line \d+ column \d+: ")


def _with_context(f, context):
    """Calls ``f`` with the context's JSON. A dict's errors drop the line and column, which
    would point into JSON the package wrote, not anything the caller did (the field path
    stays)."""
    text = _context_json(context)
    try:
        return _call(f, text)
    except ContextError as e:
        if isinstance(context, dict):
            raise ContextError(e.kind, _POSITION.sub("context: ", str(e))) from None
        raise


def _context_json(context) -> str:
    if context is None:
        return "{}"
    if isinstance(context, str):
        return context
    if not isinstance(context, dict):
        raise ContextError("NotAnObject", f"the context must be a dict, not {type(context).__name__}")
    try:
        return _json.dumps(context, ensure_ascii=False)
    except (TypeError, ValueError) as e:
        raise ContextError("Json", f"the context is not JSON data: {e}") from None


def _message(text, role) -> None:
    # The role's spelling is checked natively (ContextError, kind "Role").
    if not isinstance(text, str):
        raise TypeError(f"the message text must be a str, not {type(text).__name__}")
    if not isinstance(role, str):
        raise TypeError(f"the role must be a str ('user', 'model' or 'system'), not {type(role).__name__}")


def _speaker(speaker):
    if speaker is not None and not isinstance(speaker, str):
        raise TypeError(f"the speaker must be a str or None, not {type(speaker).__name__}")
    return speaker


def _depth(depth):
    if depth is None:
        return None
    if not isinstance(depth, int) or isinstance(depth, bool):
        raise TypeError(f"the depth must be an int or None, not {type(depth).__name__}")
    if not 0 <= depth <= 0xFFFFFFFF:
        raise ValueError(f"the depth must be 0 (the newest message) or more, not {depth}")
    return depth


class CompiledPreset:
    """A preset compiled once, rendered many times (from any thread)."""

    __slots__ = ("_inner",)

    def __init__(self, inner) -> None:
        self._inner = inner

    @property
    def settings(self) -> dict:
        """The settings it renders with (SPEC §14)."""
        return _json.loads(self._inner.settings_json())

    @property
    def regex_scripts(self) -> list:
        """The regex scripts it runs (SPEC §13.1): ``[{"position", "name", "find_regex", ...}]``."""
        return _json.loads(self._inner.regex_scripts_json())

    def store_message(self, text: str, role: str, context=None) -> dict:
        """A model reply (``"model"``) or user message (``"user"``) before the bot stores it
        (SPEC §13.7 store pass): ``{"text", "diagnostics"}``. Scripts run only when the context
        has ``"allow_preset_regex": True``; otherwise the text comes back unchanged with a
        ``RegexNotAllowed`` note. An unknown role raises ``ContextError`` (kind ``Role``)."""
        _message(text, role)
        return _json.loads(_with_context(lambda c: self._inner.store_message_json(text, role, c), context))

    def edit_message(self, text: str, role: str, speaker=None, context=None) -> dict:
        """An edited message (the store pass's scripts that have ``runOnEdit``); ``speaker``
        stands for ``{{char}}`` in trim strings: ``{"text", "diagnostics"}``."""
        _message(text, role)
        speaker = _speaker(speaker)
        return _json.loads(_with_context(lambda c: self._inner.edit_message_json(text, role, speaker, c), context))

    def display_message(self, text: str, role: str, depth=None, speaker=None, context=None) -> dict:
        """Text shown to people (``markdownOnly`` scripts, which often emit HTML, never
        sanitized here: do not send the result to a model). ``depth`` 0 is the newest message;
        ``speaker`` stands for ``{{char}}`` in trim strings: ``{"text", "diagnostics"}``."""
        _message(text, role)
        depth = _depth(depth)
        speaker = _speaker(speaker)
        return _json.loads(
            _with_context(lambda c: self._inner.display_message_json(text, role, depth, speaker, c), context)
        )

    def prompt_pass(self, context=None) -> dict:
        """The prompt pass ``render`` runs over the context's items (SPEC §13.2.3), alone:
        ``{"items", "diagnostics"}``, each item's text after it (no ``name`` prefix; ``None``
        for a lore item it dropped)."""
        return _json.loads(_with_context(self._inner.prompt_pass_json, context))

    def render(self, context=None) -> dict:
        """``{"messages", "diagnostics", "variables", "globals", "prompt_tokens", "effective"}``
        (SPEC §9, §14.3)."""
        # Built natively from the same serializer as the JSON text: half the cost of loads().
        return _with_context(self._inner.render, context)

    def render_request(self, context=None) -> dict:
        """The provider request the context's ``provider_options`` ask for (default shape
        ``openai``), over the preset's settings (SPEC §14: model, sampling, max tokens,
        reasoning): ``{"request", "diagnostics", "prompt_tokens", "effective", "variables",
        "globals"}``."""
        return _json.loads(_with_context(self._inner.request_json, context))

    def request_body(self, context=None) -> bytes:
        """Only the provider request body as UTF-8 JSON bytes, ready to POST: the fastest way
        out (no Python objects are built); diagnostics come with ``render_request``."""
        return _with_context(self._inner.request_body, context)


class Preset:
    """An imported preset."""

    __slots__ = ("_inner",)

    def __init__(self, inner) -> None:
        self._inner = inner

    @classmethod
    def from_json(cls, text) -> "Preset":
        """Imports a preset file (``str`` or ``bytes``); raises ``PresetError``."""
        if not isinstance(text, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"from_json takes str or bytes, not {type(text).__name__}")
        if not isinstance(text, str):
            text = bytes(text)
        return cls(_call(_native.Preset.from_json, text))

    def compile(self) -> CompiledPreset:
        """Parses every enabled node once."""
        return CompiledPreset(self._inner.compile())

    @property
    def regex_scripts(self) -> list:
        """The preset's regex scripts as imported (SPEC §13.1): valid entries, each with its
        ``position`` in the file's list: ``[{"position", "id", "name", "find_regex", ...}]``."""
        return _json.loads(self._inner.regex_scripts_json())

    def audit(self) -> dict:
        """``{"nodes", "enabled", "diagnostics"}``: findings for preset authors, with line and column."""
        return _json.loads(self._inner.audit_json())

    @property
    def settings(self) -> dict:
        """The preset's settings (SPEC §14): the keys the file has, after SillyTavern's
        migration; ignored values are left out (``audit()`` says why)."""
        return _json.loads(self._inner.settings_json())


class Template:
    """A template compiled once."""

    __slots__ = ("_inner",)

    def __init__(self, source) -> None:
        if not isinstance(source, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"Template takes str or bytes, not {type(source).__name__}")
        if not isinstance(source, str):
            source = bytes(source)
        self._inner = _call(_native.Template, source)

    def render(self, context=None) -> dict:
        """``{"text", "diagnostics", "variables"}`` (SPEC §9)."""
        return _json.loads(_with_context(self._inner.render_json, context))


def expand(source, context=None) -> dict:
    """Compiles and renders one template."""
    return Template(source).render(context)


def preload_tokenizer(name: str = "auto") -> None:
    """Loads a tokenizer's vocabulary now rather than in the first render that counts with it
    (0.3–0.4 s per vocabulary, once per process): ``"o200k"``, ``"cl100k"``, ``"auto"`` (both,
    the default), ``"approx"``/``"words"`` (nothing to load). Releases the GIL while it loads, so
    a thread can do it at start-up."""
    if not isinstance(name, str):
        raise TypeError(f"preload_tokenizer takes a str, not {type(name).__name__}")
    _native.preload_tokenizer(name)
