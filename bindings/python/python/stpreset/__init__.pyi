from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

Context = Dict[str, Any]
"""The context file of SPEC §9 (``user``, ``char``, ``items``, ``variables``, ``injection``...)."""

class Diagnostic(TypedDict, total=False):
    severity: Literal["warning", "info"]
    kind: str
    node: str
    span: List[int]
    line: int
    column: int
    script: Optional[int]
    message: str

class Message(TypedDict):
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
    messages: List[Message]
    diagnostics: List[Diagnostic]
    variables: Dict[str, str]
    globals: Dict[str, str]
    prompt_tokens: Optional[int]
    effective: Effective

class RequestResult(TypedDict):
    request: Dict[str, Any]
    diagnostics: List[Diagnostic]
    prompt_tokens: Optional[int]
    effective: Effective
    variables: Dict[str, str]
    globals: Dict[str, str]

class RegexScript(TypedDict):
    position: int
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
_Ctx = Optional[Union[Context, str]]

class StpresetError(ValueError):
    kind: str
    message: str
    def __init__(self, kind: str, message: str) -> None: ...

class PresetError(StpresetError): ...
class ContextError(StpresetError): ...
class TemplateError(StpresetError): ...

class CompiledPreset:
    @property
    def settings(self) -> Dict[str, Any]: ...
    def render(self, context: _Ctx = ...) -> Rendered: ...
    def render_request(self, context: _Ctx = ...) -> RequestResult: ...
    def request_body(self, context: _Ctx = ...) -> bytes: ...
    @property
    def regex_scripts(self) -> List[RegexScript]: ...
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
    def prompt_pass(self, context: _Ctx = ...) -> PromptPass: ...

class Preset:
    @classmethod
    def from_json(cls, text: _Text) -> Preset: ...
    def compile(self) -> CompiledPreset: ...
    def audit(self) -> Audit: ...
    @property
    def settings(self) -> Dict[str, Any]: ...
    @property
    def regex_scripts(self) -> List[RegexScript]: ...

class Template:
    def __init__(self, source: _Text) -> None: ...
    def render(self, context: _Ctx = ...) -> Expansion: ...

def expand(source: _Text, context: _Ctx = ...) -> Expansion: ...
def preload_tokenizer(name: Literal["auto", "o200k", "cl100k", "approx", "words"] = ...) -> None: ...
