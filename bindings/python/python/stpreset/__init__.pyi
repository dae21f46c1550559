import os
from typing import Any, Callable, Dict, Iterator, List, Literal, Mapping, Optional, Tuple, TypedDict, Union, overload

Tag = Literal[
    "SYSTEM_SERVER_PROMPT",
    "SYSTEM_FALLBACK_PROMPT",
    "SYSTEM_HUMANIZER_RULES",
    "SYSTEM_CHANNEL_PROMPT",
    "SYSTEM_PERSONA_PROMPT",
    "SYSTEM_PERSONALITY",
    "DIALOGUE_SAMPLE",
    "DIALOGUE_HISTORY",
    "KNOWLEDGE_LOREBOOK_BEFORE",
    "KNOWLEDGE_LOREBOOK_AFTER",
    "KNOWLEDGE_SERVER_INFO",
    "KNOWLEDGE_SERVER_MEMORIES",
    "KNOWLEDGE_EMOJIS",
    "KNOWLEDGE_STICKERS",
    "KNOWLEDGE_ACTIVE_USERS",
    "KNOWLEDGE_SHORT_TERM_MEMORY",
    "SYSTEM_CONDITIONING",
    "KNOWLEDGE_LORE_ACTIVATED",
    "KNOWLEDGE_RETRIEVED_DOCUMENTS",
    "CONTEXT_PARTICIPANT_PRESENCE",
    "CONTEXT_CURRENT",
]
"""The host item tags of SPEC §9 (docs/context.md says which marker takes each)."""

class _ItemRequired(TypedDict):
    role: Literal["system", "user", "model", "assistant"]

class ContextItem(_ItemRequired, total=False):
    tag: Optional[Tag]
    text: str
    time: str
    depth: int
    name: str
    swipes: int
    swipe_id: int

class WiSettings(TypedDict, total=False):
    """SPEC §15.4's World Info settings (defaults: SillyTavern's fresh install)."""

    scan_depth: int
    budget_percent: int
    budget_cap: int
    include_names: bool
    recursive: bool
    case_sensitive: bool
    match_whole_words: bool
    character_strategy: Literal[0, 1, 2]
    min_activations: int
    min_activations_depth_max: int
    max_recursion_steps: int
    group_scoring: bool

class _LorebookBase(TypedDict):
    name: str
    entries: Union[Dict[str, Dict[str, Any]], List[Dict[str, Any]]]

class Lorebook(_LorebookBase, total=False):
    """A lorebook in a context: a World Info file's entries, a stable name, a source."""

    source: Literal["chat", "persona", "character", "global"]

class NodeDirectives(TypedDict):
    tooltip: Optional[str]
    badge: Optional[str]
    color: Optional[str]
    highlight: bool
    categories: List[str]
    exclusive_group: Optional[str]
    exclusive_with: List[str]
    exclusive_message: Optional[str]
    requires: List[str]
    requires_message: Optional[str]
    auto_enable_dependencies: bool
    conflicts_with: List[str]
    conflicts_message: Optional[str]
    max_one_per_category: Optional[str]
    auto_disable: List[str]
    deprecated: Optional[str]

class OutlineNode(TypedDict):
    identifier: str
    name: str
    enabled: bool
    section: List[str]  # the header titles above it, main then sub
    header: Optional[Literal["main", "sub"]]
    tooltip: Optional[str]
    badges: List[str]
    groups: List[str]
    directives: NodeDirectives

class OutlineGroup(TypedDict):
    name: str
    members: List[str]

class OutlineSection(TypedDict):
    title: str
    identifier: str  # the header node: sections are told apart by it
    nodes: List[str]
    sections: List["OutlineSection"]
    enabled: int
    total: int

class Outline(TypedDict):
    nodes: List[OutlineNode]
    groups: List[OutlineGroup]
    sections: List[OutlineSection]

class WiEffect(TypedDict):
    kind: Literal["sticky", "cooldown"]
    entry: str
    fingerprint: str
    start: int
    end: int
    protected: bool

class WiState(TypedDict):
    version: int
    effects: List[WiEffect]

class WorkLimits(TypedDict, total=False):
    """One render's work budget and chat text's share of it, in units of about a nanosecond."""

    render_work: int
    chat_work: int

class Context(TypedDict, total=False):
    """The context file of SPEC §9 (docs/context.md): every field optional."""

    stpreset_chat: int  # a saved chat's format (Chat.to_dict)
    limits: "WorkLimits"  # one render's work budget (docs/hardening.md)
    macros: Dict[str, str]  # macros the bot supplies ({{summary}}, ...): name -> value, data
    user: str
    char: str
    description: str
    personality: str
    scenario: str
    persona: str
    mes_examples: str
    mes_examples_raw: str
    char_version: str
    char_prompt: str
    char_instruction: str
    group: List[str]
    group_muted: List[str]
    group_cards: Dict[str, Dict[str, Any]]
    group_generation_mode: Literal["swap", "append", "append_disabled"]
    group_join_prefix: str
    group_join_suffix: str
    model: str
    provider: str
    now: str
    utc_offset_minutes: int
    time_awareness: bool
    seed: int
    chat_id: str
    capabilities: Dict[str, bool]
    tools: List[str]
    tool_families: Dict[str, bool]
    tool_names: Dict[str, str]
    tool_phrases: Dict[str, str]
    globals: Dict[str, str]
    variables: Dict[str, str]
    items: List[ContextItem]
    allow_preset_regex: bool
    regex_scripts: List[Dict[str, Any]]
    char_regex_scripts: List[Dict[str, Any]]
    allow_char_regex: bool
    world_info: WiSettings
    lorebooks: List[Lorebook]
    wi_state: WiState
    position: int
    generation_type: Literal["normal", "continue", "impersonate", "swipe", "regenerate", "quiet"]
    prefer_char_prompt: bool
    prefer_char_instruction: bool
    char_depth_prompt: Optional[Dict[str, Any]]
    first_mes: str
    alternate_greetings: List[str]
    creator_notes: str
    system_prompt: Optional[str]
    extensions: Optional[List[str]]
    first_included_message_id: Optional[int]
    first_displayed_message_id: Optional[int]
    injection: Literal["merge", "separate"]
    layout: Optional[Literal["seed", "sillytavern"]]
    random: Optional[Dict[str, float]]
    persona_position: Literal[0, 2, 3, 4, 9]
    persona_depth: int
    persona_role: Literal["system", "user", "assistant"]
    author_note: Optional[Dict[str, Any]]
    char_note_depth: int
    char_note_role: Literal["system", "user", "assistant"]
    chat_scenario: str
    chat_mes_example: str
    chat_system_prompt: str
    start_reply_with: str
    pin_examples: bool
    chat_id_hash: int
    pick_reroll_seed: Union[str, int]
    max_context_tokens: Optional[int]
    reserve_tokens: Optional[int]
    tokenizer: Literal["auto", "o200k", "cl100k", "approx", "words"]
    preset_settings: Union[bool, Dict[str, Any]]
    provider_options: Optional[Dict[str, Any]]

class Diagnostic(TypedDict, total=False):
    severity: Literal["warning", "info"]
    kind: str
    node: str
    span: List[int]
    line: int
    column: int
    script: Optional[int]
    message: str

class MessageDict(TypedDict):
    role: Literal["system", "user", "model"]
    parts: List[str]
    source: Dict[str, Any]

class Effective(TypedDict):
    squash_system: bool
    use_system_prompt: bool
    assistant_prefill: str
    post_processing: Literal["none", "merge", "semi", "strict", "single"]
    max_context_tokens: Optional[int]
    reserve_tokens: int

class Rendered(TypedDict):
    messages: List[MessageDict]
    diagnostics: List[Diagnostic]
    variables: Dict[str, str]
    globals: Dict[str, str]
    prompt_tokens: Optional[int]
    effective: Effective

class _RequestLore(TypedDict, total=False):
    wi_state: WiState  # the World Info state to keep, from the same render (present with lore)

class RequestResult(_RequestLore):
    request: Dict[str, Any]
    diagnostics: List[Diagnostic]
    prompt_tokens: Optional[int]
    effective: Effective
    variables: Dict[str, str]
    globals: Dict[str, str]

class RegexScript(TypedDict):
    position: int
    source: Literal["global", "preset", "character"]
    id: str
    name: str
    find_regex: str
    replace_string: str
    trim_strings: List[str]
    placement: List[int]
    disabled: bool
    markdown_only: bool
    prompt_only: bool
    run_on_edit: bool
    substitute: Literal["none", "raw", "escaped"]
    min_depth: Optional[float]
    max_depth: Optional[float]

class Regexed(TypedDict):
    text: str
    diagnostics: List[Diagnostic]

class FirstMessage(TypedDict):
    item: ContextItem
    swipes: List[str]
    diagnostics: List[Diagnostic]

class PromptPass(TypedDict):
    items: List[Optional[str]]
    diagnostics: List[Diagnostic]

Role = Literal["user", "model", "assistant", "system"]

class Expansion(TypedDict):
    text: str
    diagnostics: List[Diagnostic]
    variables: Dict[str, str]

class Audit(TypedDict):
    nodes: int
    enabled: int
    diagnostics: List[Diagnostic]

_Text = Union[str, bytes, bytearray, memoryview]
_Ctx = Optional[Union[Context, str, bytes, "Chat"]]

class StpresetError(ValueError):
    kind: str
    message: str
    def __init__(self, kind: str, message: str) -> None: ...

class PresetError(StpresetError): ...
class ContextError(StpresetError): ...
class TemplateError(StpresetError): ...
class StoreError(StpresetError):
    node: Optional[str]
    issues: Optional[List[SwitchIssue]]

class SwitchIssue(TypedDict):
    kind: str
    node: str
    others: List[str]
    message: str
    author: Optional[str]

class SwitchChange(TypedDict):
    identifier: str
    enabled: bool

class Switched(TypedDict):
    changes: List[SwitchChange]
    resolved: List[SwitchIssue]
    warnings: List[SwitchIssue]
class CardError(StpresetError): ...

class PresetSummary(TypedDict):
    id: int
    name: str
    active: bool
    nodes: int
    regex_allowed: bool

class PresetStore:
    """Presets per server in one database: a SQLite file path, or a PostgreSQL connection
    string (``postgresql://bot@db/presets``, ``host=/run/postgresql dbname=presets``)."""

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None: ...
    @classmethod
    def open(cls, path: Union[str, "os.PathLike[str]"]) -> PresetStore: ...
    def import_preset(self, server: int, name: str, text: _Text) -> int: ...
    def list(self, server: int) -> List[PresetSummary]: ...
    def nodes(self, server: int, preset: int) -> List[Dict[str, Any]]: ...
    def activate(self, server: int, preset: int) -> None: ...
    def deactivate(self, server: int) -> None: ...
    def set_enabled(self, server: int, preset: int, toggles: Dict[str, bool], resolve: bool = False) -> Switched: ...
    def outline(self, server: int, preset: int) -> Outline: ...
    def allow_regex(self, server: int, preset: int, allowed: bool) -> None: ...
    def delete(self, server: int, preset: int) -> None: ...
    def active(self, server: int) -> Optional[CompiledPreset]: ...
    @overload
    def render(self, server: int, context: Chat) -> Optional[ChatRender]: ...
    @overload
    def render(self, server: int, context: _Ctx = ...) -> Optional[Rendered]: ...

class FrozenDict(Dict[str, Any]):
    """A dict that refuses changes."""

class Message(FrozenDict):
    """A message of ``render(chat)``: ``m["role"]``, ``m["parts"]`` (a tuple), ``m["source"]``."""

    def to_dict(self) -> MessageDict: ...

class Chat:
    def __init__(self, context: Optional[Context] = ...) -> None: ...
    def __len__(self) -> int: ...
    def append(self, item: ContextItem) -> None: ...
    def extend(self, items: List[ContextItem]) -> None: ...
    def splice(self, start: int, delete_count: Optional[int] = ..., *items: ContextItem) -> None: ...
    def set(self, fields: Context) -> None: ...
    def set_macro_fn(self, fn: Optional[Callable[[str, List[str]], Optional[str]]]) -> None: ...
    def keep(self, result: Mapping[str, Any]) -> None: ...
    def to_dict(self) -> Context: ...

class ChatRender(Mapping[str, Any]):
    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> Rendered: ...

class ChatRequest(Mapping[str, Any]):
    body: bytes  # the request body as UTF-8 JSON, ready to POST
    def __getitem__(self, key: str) -> Any: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def to_dict(self) -> RequestResult: ...

class CompiledPreset:
    @property
    def settings(self) -> Dict[str, Any]: ...
    @overload
    def render(self, context: Chat) -> ChatRender: ...
    @overload
    def render(self, context: _Ctx = ...) -> Rendered: ...
    @overload
    def request(self, context: Chat) -> ChatRequest: ...
    @overload
    def request(self, context: _Ctx = ...) -> RequestResult: ...
    def render_request(self, context: _Ctx = ...) -> RequestResult: ...
    def request_body(self, context: _Ctx = ...) -> bytes: ...
    @property
    def regex_scripts(self) -> List[RegexScript]: ...
    def first_message(self, context: _Ctx = ...) -> Optional[FirstMessage]: ...
    def store_message(self, text: str, role: Role, context: _Ctx = ...) -> Regexed: ...
    def edit_message(self, text: str, role: Role, speaker: Optional[str] = ..., context: _Ctx = ...) -> Regexed: ...
    def display_message(
        self,
        text: str,
        role: Role,
        depth: Optional[int] = ...,
        speaker: Optional[str] = ...,
        context: _Ctx = ...,
    ) -> Regexed: ...
    def display_text(
        self,
        text: str,
        role: Role,
        depth: Optional[int] = ...,
        speaker: Optional[str] = ...,
        context: _Ctx = ...,
    ) -> Regexed: ...
    def prompt_pass(self, context: _Ctx = ...) -> PromptPass: ...

class Preset:
    @classmethod
    def from_json(cls, text: _Text) -> Preset: ...
    def compile(self, toggles: Optional[Dict[str, bool]] = ...) -> CompiledPreset: ...
    def nodes(self) -> List[Dict[str, Any]]: ...
    def outline(self) -> Outline: ...
    def audit(self) -> Audit: ...
    @property
    def settings(self) -> Dict[str, Any]: ...
    @property
    def regex_scripts(self) -> List[RegexScript]: ...

class Template:
    def __init__(self, source: _Text) -> None: ...
    @classmethod
    def compile(cls, source: _Text) -> Template: ...
    def render(self, context: _Ctx = ...) -> Expansion: ...

def expand(source: _Text, context: _Ctx = ...) -> Expansion: ...

class WiResult(TypedDict):
    activated: List[str]
    before: str
    after: str
    depth: List[Dict[str, Any]]
    examples: List[Dict[str, str]]
    an_top: List[str]
    an_bottom: List[str]
    outlets: Dict[str, str]
    state: WiState
    diagnostics: List[Diagnostic]

class CardDocument(TypedDict):
    card: Dict[str, Any]
    context: Context
    diagnostics: List[Diagnostic]
    items: List[ContextItem]

def read_card(data: Union[bytes, bytearray, memoryview], *, png: bool = ...) -> CardDocument: ...
def lore(context: _Ctx = ...) -> WiResult: ...
def preload_tokenizer(name: Literal["auto", "o200k", "cl100k", "approx", "words"] = ...) -> None: ...
def read_st_chat(data: Union[bytes, bytearray, memoryview, str]) -> Dict[str, Any]: ...
