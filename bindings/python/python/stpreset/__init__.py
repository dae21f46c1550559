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
import threading as _threading
from collections.abc import Mapping as _Mapping

from . import _native

# Typed in __init__.pyi (TypedDicts and a Literal); plain at run time, so `from stpreset import
# Context` works in code that mypy checks.
Context = dict
ContextItem = dict
Lorebook = dict
WiSettings = dict
WiState = dict
WiResult = dict
FirstMessage = dict
CardDocument = dict
Tag = str


def _refuse(self, *args, **kwargs):
    raise TypeError(f"a {type(self).__name__} cannot be changed; copy it with dict(...) first")


class FrozenDict(dict):
    """A dict that refuses changes (a rendered message's ``source``): read it as any dict."""

    __slots__ = ()
    __setitem__ = __delitem__ = __ior__ = _refuse
    clear = pop = popitem = setdefault = update = _refuse

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict.__repr__(self)})"

    def __reduce__(self):
        return (type(self), (dict(self),))


class Message(FrozenDict):
    """One message of ``render(chat)``: ``{"parts": (...), "role", "source"}``, a dict that
    refuses changes, so a chat hands the same object back next turn when the message did not
    change. ``parts`` is a tuple; ``to_dict()`` gives the message as ``render(dict)`` does."""

    __slots__ = ()

    def to_dict(self) -> dict:
        return {"parts": list(self["parts"]), "role": self["role"], "source": dict(self["source"])}


_native.register(Message, FrozenDict)

__all__ = [
    "PresetStore",
    "StoreError",
    "CardError",
    "read_card",
    "lore",
    "Chat",
    "ChatRender",
    "ChatRequest",
    "FrozenDict",
    "Message",
    "Preset",
    "CompiledPreset",
    "Template",
    "expand",
    "preload_tokenizer",
    "read_st_chat",
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


class CardError(StpresetError):
    """A character card that cannot be read (``CardPngInvalid``, ``CardNoMetadata``,
    ``CardJsonInvalid``, ``CardNotACard``, ``CardTooLarge``)."""


class StoreError(StpresetError):
    """A store call that failed (``Open``, ``Locked``, ``NotFound``, ``UnknownNode``,
    ``Refused``, ...); nothing was written. A ``Refused`` toggle has ``node`` (the node that
    could not be switched on) and ``issues`` (the constraints in the way); others have None."""

    def __init__(self, kind: str, message: str, node=None, issues=None) -> None:
        super().__init__(kind, message)
        self.node = node
        self.issues = issues


_CLASSES = {
    "PresetError": PresetError,
    "ContextError": ContextError,
    "TemplateError": TemplateError,
    "StoreError": StoreError,
    "CardError": CardError,
}


def _call(f, *args):
    # The native layer raises ValueError(class, kind, message).
    try:
        return f(*args)
    except ValueError as e:
        if len(e.args) == 3 and e.args[0] in _CLASSES:
            raise _CLASSES[e.args[0]](e.args[1], e.args[2]) from None
        if len(e.args) == 4 and e.args[0] in _CLASSES:
            details = _json.loads(e.args[3])
            raise _CLASSES[e.args[0]](e.args[1], e.args[2], details["node"], details["issues"]) from None
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
        if isinstance(context, (dict, Chat)):
            raise ContextError(e.kind, _POSITION.sub("context: ", str(e))) from None
        raise


def _context_json(context):
    if context is None:
        return "{}"
    if isinstance(context, (str, bytes, Chat)):
        return context._inner if isinstance(context, Chat) else context
    if not isinstance(context, dict):
        raise ContextError(
            "NotAnObject", f"the context must be a dict, a Chat or JSON text, not {type(context).__name__}"
        )
    return _dumps(context, "the context")


def _dumps(value, what: str) -> str:
    try:
        return _json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ContextError("Json", f"{what} is not JSON data: {e}") from None
    except RecursionError:
        raise ContextError("Json", f"{what} is nested too deeply") from None


class Chat:
    """A chat kept between turns: the context (SPEC §9) read once, then changed in place. Only
    what a turn adds crosses into the engine, and a render hands back the history ``str``
    objects given here instead of copies: the fast way to render the same chat turn after
    turn. Items are read when added; later changes to the dicts are not seen."""

    __slots__ = ("_inner", "_lock")

    def __init__(self, context=None) -> None:
        # One chat, one turn at a time: renders and changes from several threads wait their
        # turn (a render releases the GIL while it reads the chat). Re-entrant: a macro
        # function that changes or renders its own chat mid-render gets an error (the native
        # chat is borrowed), not a deadlock.
        self._lock = _threading.RLock()
        context = {} if context is None else context
        if not isinstance(context, dict):
            raise ContextError("NotAnObject", f"the context must be a dict, not {type(context).__name__}")
        items = context.get("items", [])
        if not isinstance(items, list):
            raise ContextError("Field", f"context: items: expected a list, not {type(items).__name__}")
        self._inner = _fields(_native.Chat, _dumps(context, "the context"), _texts(items))

    def __len__(self) -> int:
        with self._lock:
            return len(self._inner)

    def append(self, item: dict) -> None:
        """Adds one item at the end."""
        self._splice(None, 0, [item])

    def extend(self, items) -> None:
        """Adds items at the end; nothing changes when one is refused."""
        self._splice(None, 0, list(items))

    def splice(self, start: int, delete_count=None, *items) -> None:
        """Removes ``delete_count`` items from ``start`` (all to the end when ``None``) and
        inserts ``items`` there; a negative ``start`` counts from the end. Nothing changes when
        an item is refused (``ContextError``)."""
        if not isinstance(start, int) or isinstance(start, bool):
            raise TypeError(f"start must be an int, not {type(start).__name__}")
        if delete_count is not None and (not isinstance(delete_count, int) or isinstance(delete_count, bool)):
            raise TypeError(f"delete_count must be an int or None, not {type(delete_count).__name__}")
        self._splice(start, delete_count, list(items))

    def _splice(self, start, delete_count, items: list) -> None:
        # `start` None: the end. Positions are read under the lock, so a change from another
        # thread cannot move them between reading and splicing.
        json = _dumps(items, "the items")
        texts = _texts(items)
        with self._lock:
            n = len(self._inner)
            if start is None:
                start = n
            start = max(n + start, 0) if start < 0 else min(start, n)
            count = n - start if delete_count is None else min(max(delete_count, 0), n - start)
            _fields(self._inner.splice, start, count, json, texts)

    def set(self, fields: dict) -> None:
        """Replaces the given context fields (any but ``items``), e.g. ``{"now": ...}``."""
        if not isinstance(fields, dict):
            raise ContextError("NotAnObject", f"the fields must be a dict, not {type(fields).__name__}")
        with self._lock:
            _fields(self._inner.set, _dumps(fields, "the fields"))

    def set_macro_fn(self, fn) -> None:
        """Answers the macros the catalog and the context's ``macros`` lack (issue 39):
        ``fn(name, args)`` for ``{{name::a::b}}`` returns a ``str``, or ``None`` to leave the
        macro as written. Called during renders of this chat, at most once per distinct call
        per render; an exception (or another return type) is a ``HostMacroFailed``
        diagnostic and the macro stays literal. ``None`` removes it."""
        if fn is not None and not callable(fn):
            raise TypeError(f"the macro function must be callable or None, not {type(fn).__name__}")
        with self._lock:
            self._inner.set_macro_fn(fn)

    def keep(self, result) -> None:
        """Carries a render's ``variables`` and ``globals`` into the next turn (SPEC §9)."""
        # A render whose maps were never read carries its own, natively; once read they may
        # have been edited, and what the bot holds is what it keeps.
        if isinstance(result, (ChatRender, ChatRequest)) and not result._maps_read:
            with self._lock:
                self._inner.keep(result._rest)
        else:
            self.set({"variables": result["variables"], "globals": result["globals"]})

    def to_dict(self) -> dict:
        """The chat saved: a context dict (its fields, items, and ``"stpreset_chat": 1``) that
        ``Chat(saved)`` reads back; ``json.dumps`` it to store it across a restart
        (docs/context.md, "Saving a chat")."""
        with self._lock:
            text = self._inner.to_json()
        return _json.loads(text)


def _fields(f, *args):
    """Calls ``f`` on JSON the package wrote: errors name the field, not a line and column."""
    try:
        return _call(f, *args)
    except ContextError as e:
        raise ContextError(e.kind, _POSITION.sub("context: ", str(e))) from None


def _texts(items) -> list:
    return [item.get("text") if isinstance(item, dict) else None for item in items]


class _ChatDetails(_Mapping):
    """A chat's render or request as a read-only mapping: what the engine keeps beside the
    messages or the body (diagnostics, options, variables, tokens, ``wi_state``) read when
    first asked for."""

    __slots__ = ("_rest", "_doc", "_maps_read")
    _KEYS: tuple = ()

    def __init__(self, rest) -> None:
        self._rest = rest
        self._doc = None
        # Whether the bot was handed the variables or globals (which it may then edit).
        self._maps_read = False

    def _detail(self, key):
        if key not in self._KEYS and key != "wi_state":
            raise KeyError(key)
        if key in ("variables", "globals"):
            self._maps_read = True
        if key == "wi_state" and self._doc is None:
            # Read alone: a bot reads it every turn, and the variables beside it may be large.
            text = self._rest.wi_state_json()
            if text is None:
                raise KeyError(key)
            return _json.loads(text)
        return self._load()[key]

    def _load(self) -> dict:
        if self._doc is None:
            self._doc = _json.loads(self._rest.json())
        return self._doc

    def _keys(self) -> tuple:
        # `wi_state` only when the context had lore (as in the dict's document).
        return self._KEYS + ("wi_state",) if "wi_state" in self._load() else self._KEYS

    def __iter__(self):
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


class ChatRender(_ChatDetails):
    """What ``render(chat)`` returns: a read-only mapping with the keys of ``render(dict)``'s
    dict. ``messages`` is a list of ``Message`` dicts that refuse changes (``parts`` is a tuple
    whose history texts are the caller's own ``str`` objects); a message that did not change
    since the chat's last render is the same object. The other keys are read from the engine
    when first asked for. ``to_dict()`` gives exactly ``render(dict)``'s dict."""

    __slots__ = ("_messages",)
    _KEYS = ("diagnostics", "effective", "globals", "messages", "prompt_tokens", "variables")

    def __init__(self, messages, rest) -> None:
        super().__init__(rest)
        self._messages = messages

    def __getitem__(self, key):
        if key == "messages":
            return self._messages
        return self._detail(key)

    def __repr__(self) -> str:
        return f"ChatRender(messages={len(self._messages)})"

    def to_dict(self) -> dict:
        """The plain dict ``render(dict)`` returns for the same context."""
        doc = {k: self[k] for k in self._keys()}
        doc["messages"] = [m.to_dict() for m in self._messages]
        return doc


class ChatRequest(_ChatDetails):
    """What ``request(chat)`` returns: a read-only mapping with the keys of ``request(dict)``'s
    dict, and ``body``, the request body as UTF-8 JSON bytes ready to POST (what
    ``request_body`` gives). The other keys are read when first asked for (``request`` parses
    ``body``); ``Chat.keep`` carries its variables natively, as a render's. ``to_dict()``
    gives exactly ``request(dict)``'s dict."""

    __slots__ = ("body", "_request")
    _KEYS = ("diagnostics", "effective", "globals", "prompt_tokens", "request", "variables")

    def __init__(self, body, rest) -> None:
        super().__init__(rest)
        self.body = body
        self._request = None

    def __getitem__(self, key):
        if key == "request":
            if self._request is None:
                self._request = _json.loads(self.body)
            return self._request
        return self._detail(key)

    def __repr__(self) -> str:
        return f"ChatRequest(body={len(self.body)} bytes)"

    def to_dict(self) -> dict:
        """The plain dict ``request(dict)`` returns for the same context."""
        return {k: self[k] for k in self._keys()}


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

    def first_message(self, context=None):
        """A new chat's first message, as SillyTavern opens a chat with the context's
        character: ``{"item", "swipes", "diagnostics"}`` (append ``item`` to the chat;
        ``swipes`` are ``first_mes`` and the alternate greetings after the store pass), or
        ``None`` when the card has no greeting."""
        return _json.loads(_with_context(self._inner.first_message_json, context))

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
            _with_context(lambda c: self._inner.display_json(text, role, depth, speaker, False, c), context)
        )

    def display_text(self, text: str, role: str, depth=None, speaker=None, context=None) -> dict:
        """``display_message`` for a chat app that shows Markdown (Discord): the display pass,
        then its HTML as Markdown (styles, scripts and hidden elements dropped; emphasis,
        links, lists and line breaks kept; the reply's own Markdown untouched)."""
        _message(text, role)
        depth = _depth(depth)
        speaker = _speaker(speaker)
        return _json.loads(
            _with_context(lambda c: self._inner.display_json(text, role, depth, speaker, True, c), context)
        )

    def prompt_pass(self, context=None) -> dict:
        """The prompt pass ``render`` runs over the context's items (SPEC §13.2.3), alone:
        ``{"items", "diagnostics"}``, each item's text after it (no ``name`` prefix; ``None``
        for a lore item it dropped)."""
        return _json.loads(_with_context(self._inner.prompt_pass_json, context))

    def render(self, context=None):
        """``{"messages", "diagnostics", "variables", "globals", "prompt_tokens", "effective"}``
        (SPEC §9, §14.3): a dict, or for a ``Chat`` a ``ChatRender`` mapping with the same keys."""
        if isinstance(context, Chat):
            with context._lock:
                return ChatRender(*self._inner.render_chat(context._inner))
        return _json.loads(_with_context(self._inner.render_json, context))

    def request(self, context=None) -> dict:
        """The provider request the context's ``provider_options`` ask for (default shape
        ``openai``), over the preset's settings (SPEC §14: model, sampling, max tokens,
        reasoning): ``{"request", "diagnostics", "prompt_tokens", "effective", "variables",
        "globals"}``. Node's ``request`` too (``bindings/vocabulary.json``). For a ``Chat``, a
        ``ChatRequest`` mapping with the same keys and ``body``, the bytes to POST, rendered
        once with the chat's remembered counts."""
        if isinstance(context, Chat):
            with context._lock:
                return ChatRequest(*self._inner.request_chat(context._inner))
        return _json.loads(_with_context(self._inner.request_json, context))

    # The name before the packages shared one vocabulary: kept, the same call.
    render_request = request

    def request_body(self, context=None) -> bytes:
        """Only the provider request body as UTF-8 JSON bytes, ready to POST: the fastest way
        out (no Python objects are built); diagnostics come with ``request``."""
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

    def compile(self, toggles=None) -> CompiledPreset:
        """Parses every enabled node once. ``toggles`` switches nodes on or off by identifier
        first (``{"nsfw": True, "jailbreak": False}``, as a prompt manager does); an identifier
        the preset does not have raises ``PresetError`` (kind ``UnknownNode``)."""
        if toggles is None:
            return CompiledPreset(self._inner.compile())
        return CompiledPreset(_call(self._inner.compile_toggled, _toggles(toggles)))

    def nodes(self) -> list:
        """The nodes in walk order, as a prompt manager lists them: ``[{"identifier", "name",
        "role", "enabled", "marker", "injection": None or {"depth", "order"}}]``."""
        return _json.loads(self._inner.nodes_json())

    def outline(self) -> dict:
        """The nodes as the preset's authors arranged them (docs/presets.md, "Sections and
        directives"): ``{"nodes", "groups", "sections"}``, what a bot needs for a menu per
        section."""
        return _json.loads(self._inner.outline_json())

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

    @classmethod
    def compile(cls, source) -> "Template":
        """``Template(source)``, by Node's name (``Template.compile``)."""
        return cls(source)

    def render(self, context=None) -> dict:
        """``{"text", "diagnostics", "variables"}`` (SPEC §9)."""
        return _json.loads(_with_context(self._inner.render_json, context))


def _well_formed(s: str) -> bool:
    try:
        s.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _toggles(toggles) -> dict:
    """Toggles with identifiers as the engine read them (a lone surrogate is U+FFFD)."""
    if not isinstance(toggles, dict) or not all(isinstance(k, str) and isinstance(v, bool) for k, v in toggles.items()):
        raise TypeError("toggles are a dict of identifier: bool")
    return {
        (k if _well_formed(k) else k.encode("utf-16", "surrogatepass").decode("utf-16", "replace")): v
        for k, v in toggles.items()
    }


def _store_id(x, what: str) -> int:
    if not isinstance(x, int) or isinstance(x, bool):
        raise TypeError(f"the {what} id must be an int, not {type(x).__name__}")
    if not -(2**63) <= x < 2**63:
        raise ValueError(f"the {what} id must fit in 64 bits")
    return x


class PresetStore:
    """Presets per server in one SQLite file (``stpreset store`` on the command line): import,
    list, activate, toggle, and the active preset compiled through the store's cache. Calls
    release the GIL; one store serves every thread."""

    __slots__ = ("_inner",)

    def __init__(self, path) -> None:
        self._inner = _call(_native.PresetStore, str(path))

    @classmethod
    def open(cls, path) -> "PresetStore":
        """Opens (or creates) the store file; raises ``StoreError``."""
        return cls(path)

    def import_preset(self, server: int, name: str, text) -> int:
        """Imports a preset file under ``name`` (replacing the server's preset of that name);
        returns its id. (``import`` is a keyword.)"""
        if not isinstance(name, str):
            raise TypeError(f"the preset name must be a str, not {type(name).__name__}")
        if not _well_formed(name):
            # Two names that differ only in a half emoji would become one name and replace each other.
            raise StoreError("InvalidName", "a name may not hold a lone UTF-16 surrogate (half an emoji)")
        if not isinstance(text, (str, bytes, bytearray, memoryview)):
            raise TypeError(f"the preset file must be str or bytes, not {type(text).__name__}")
        if not isinstance(text, str):
            text = bytes(text)
        return _call(self._inner.import_preset, _store_id(server, "server"), name, text)

    def list(self, server: int) -> list:
        """``[{"id", "name", "active", "nodes", "regex_allowed"}]``."""
        return _json.loads(_call(self._inner.list_json, _store_id(server, "server")))

    def nodes(self, server: int, preset: int):
        """A stored preset's nodes in walk order, with the switches the store keeps (as
        ``Preset.nodes()``)."""
        return _json.loads(_call(self._inner.nodes_json, _store_id(server, "server"), _store_id(preset, "preset")))

    def activate(self, server: int, preset: int) -> None:
        _call(self._inner.activate, _store_id(server, "server"), _store_id(preset, "preset"))

    def deactivate(self, server: int) -> None:
        _call(self._inner.deactivate, _store_id(server, "server"))

    def set_enabled(self, server: int, preset: int, toggles: dict, resolve: bool = False) -> dict:
        """Switches nodes on or off: ``{identifier: bool}``, under their author's constraints
        (exclusive groups, ``@exclusive-with``, ``@requires``...). An unknown identifier fails
        the whole call; a switch that breaks a constraint raises ``StoreError`` of kind
        ``Refused`` (with ``node`` and ``issues``) and nothing changes, unless ``resolve``:
        then the conflicting nodes go off and the required ones on. Returns ``{"changes",
        "resolved", "warnings"}``."""
        if not isinstance(resolve, bool):
            raise TypeError("resolve takes True or False")
        return _json.loads(
            # As pairs: the caller's order is the order the switches are checked in.
            _call(self._inner.set_enabled, _store_id(server, "server"), _store_id(preset, "preset"), list(_toggles(toggles).items()), resolve)
        )

    def outline(self, server: int, preset: int) -> dict:
        """A stored preset's nodes under their sections, with the stored switches (as
        ``Preset.outline()``)."""
        return _json.loads(_call(self._inner.outline_json, _store_id(server, "server"), _store_id(preset, "preset")))

    def allow_regex(self, server: int, preset: int, allowed: bool) -> None:
        """Lets (or stops) the preset's regex scripts run for this server (SPEC §13.6)."""
        if not isinstance(allowed, bool):
            raise TypeError("allow_regex takes True or False")
        _call(self._inner.allow_regex, _store_id(server, "server"), _store_id(preset, "preset"), allowed)

    def delete(self, server: int, preset: int) -> None:
        _call(self._inner.delete, _store_id(server, "server"), _store_id(preset, "preset"))

    def active(self, server: int):
        """The server's active preset, compiled (cached), or ``None``."""
        inner = _call(self._inner.active, _store_id(server, "server"))
        return None if inner is None else CompiledPreset(inner)

    def render(self, server: int, context=None):
        """Renders the server's active preset; ``None`` when it has none."""
        compiled = self.active(server)
        return None if compiled is None else compiled.render(context)


def expand(source, context=None) -> dict:
    """Compiles and renders one template."""
    return Template(source).render(context)


def read_card(data, *, png: bool = False) -> dict:
    """Reads a character card (SPEC §15.1): PNG or JSON ``bytes`` (``png=True`` refuses anything
    but a PNG). Returns ``{"card", "context", "diagnostics", "items"}``: merge ``context`` under
    your own context fields and put ``items`` before your items, and the card (its book
    included) is part of every render. Raises ``CardError``."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"read_card takes the card file as bytes, not {type(data).__name__}")
    if not isinstance(png, bool):
        raise TypeError("png must be True or False")
    return _json.loads(_call(_native.read_card_json, bytes(data), png))


def read_st_chat(data) -> dict:
    """Reads a SillyTavern chat file (``.jsonl`` as ST saves and exports it, SPEC §17.5;
    ``bytes`` or ``str``) into context fields: ``items`` (its messages, hidden ones left out,
    each with its speaker's ``name`` and ``time``) and, where the file has them, ``user``,
    ``char``, ``variables``, ``chat_id_hash``, ``author_note``, ``position``, ... Merge them into
    your context (with ``"layout": "sillytavern"`` to replay the chat as ST would). Raises
    ``ContextError``."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"read_st_chat takes the chat file as bytes or str, not {type(data).__name__}")
    return _json.loads(_call(_native.read_st_chat_json, bytes(data)))


def lore(context=None) -> dict:
    """The World Info activation a render of ``context`` would place (its ``lorebooks``,
    ``world_info``, ``wi_state``, ``position``, ``generation_type``): ``{"activated", "before",
    "after", "depth", "examples", "an_top", "an_bottom", "outlets", "state", "diagnostics"}``
    (SPEC §15.7). Keep ``state`` and pass it back as the next turn's ``wi_state``."""
    return _json.loads(_with_context(_native.lore_json, context))


def preload_tokenizer(name: str = "auto") -> None:
    """Loads a tokenizer's vocabulary now rather than in the first render that counts with it
    (0.3–0.4 s per vocabulary, once per process): ``"o200k"``, ``"cl100k"``, ``"auto"`` (both,
    the default), ``"approx"``/``"words"`` (nothing to load). Releases the GIL while it loads, so
    a thread can do it at start-up."""
    if not isinstance(name, str):
        raise TypeError(f"preload_tokenizer takes a str, not {type(name).__name__}")
    _native.preload_tokenizer(name)


# `from __future__ import annotations` binds `annotations` in the module: not part of the API.
del annotations
