// Types of the `stpreset` package. Field names follow SPEC §9's JSON (snake_case where the
// context file uses it): the objects are exactly the documents the CLI prints.

export type Role = 'system' | 'user' | 'model';

/** The host item tags of SPEC §9 (docs/context.md says which marker takes each). */
export type Tag =
  | 'SYSTEM_SERVER_PROMPT'
  | 'SYSTEM_FALLBACK_PROMPT'
  | 'SYSTEM_HUMANIZER_RULES'
  | 'SYSTEM_CHANNEL_PROMPT'
  | 'SYSTEM_PERSONA_PROMPT'
  | 'SYSTEM_PERSONALITY'
  | 'DIALOGUE_SAMPLE'
  | 'DIALOGUE_HISTORY'
  | 'KNOWLEDGE_LOREBOOK_BEFORE'
  | 'KNOWLEDGE_LOREBOOK_AFTER'
  | 'KNOWLEDGE_SERVER_INFO'
  | 'KNOWLEDGE_SERVER_MEMORIES'
  | 'KNOWLEDGE_EMOJIS'
  | 'KNOWLEDGE_STICKERS'
  | 'KNOWLEDGE_ACTIVE_USERS'
  | 'KNOWLEDGE_SHORT_TERM_MEMORY'
  | 'SYSTEM_CONDITIONING'
  | 'KNOWLEDGE_LORE_ACTIVATED'
  | 'KNOWLEDGE_RETRIEVED_DOCUMENTS'
  | 'CONTEXT_PARTICIPANT_PRESENCE'
  | 'CONTEXT_CURRENT';

export interface ContextItem {
  /** Absent or `null`: an untagged item. */
  tag?: Tag | null;
  role: Role | 'assistant';
  text: string;
  /** RFC 3339, read by `idle_duration`. */
  time?: string;
  /** Tail items only: inject at this depth. */
  depth?: number;
  /** The speaker: a chat-history item reaches the prompt as `name: text`. */
  name?: string;
  /** How many swipes the message has (`{{lastSwipeId}}`). */
  swipes?: number;
  /** The swipe shown, from 0 (`{{currentSwipeId}}`). */
  swipe_id?: number;
}

/** The context file of SPEC §9; every field optional. */
export interface Context {
  /** A saved chat's format (`chat.toJSON()`). */
  stpreset_chat?: 1;
  /** One render's work budget and chat text's share of it, in units of about a nanosecond
   *  (docs/hardening.md; defaults 800000000 and 100000000). */
  limits?: { render_work?: number; chat_work?: number };
  /** Macros the bot supplies (`{{summary}}`, `{{long_term_memory}}`, …): name → value. The value
   *  is data (never parsed again); a catalog macro (`user`, …) is never replaced. */
  macros?: Record<string, string>;
  user?: string;
  char?: string;
  description?: string;
  personality?: string;
  scenario?: string;
  persona?: string;
  mes_examples?: string;
  mes_examples_raw?: string;
  char_version?: string;
  char_prompt?: string;
  char_instruction?: string;
  group?: string[];
  group_muted?: string[];
  /** The other members' cards (card JSON) by name, read in a group's append modes. */
  group_cards?: Record<string, object>;
  group_generation_mode?: 'swap' | 'append' | 'append_disabled';
  /** Put around each member's card field in the append modes, `<FIELDNAME>` replaced. */
  group_join_prefix?: string;
  group_join_suffix?: string;
  model?: string;
  provider?: string;
  /** RFC 3339; absent: the system clock at render time. */
  now?: string;
  utc_offset_minutes?: number;
  time_awareness?: boolean;
  seed?: number;
  chat_id?: string;
  capabilities?: Record<string, boolean>;
  tools?: string[];
  tool_families?: Record<string, boolean>;
  tool_names?: Record<string, string>;
  tool_phrases?: Record<string, string>;
  globals?: Record<string, string>;
  /** The chat's variables as the last render returned them. */
  variables?: Record<string, string>;
  items?: ContextItem[];
  /**
   * SPEC §13.6: lets the preset's regex scripts run (in `render`'s prompt pass and the message
   * calls). Default `false`: nothing runs and a `RegexNotAllowed` note says so.
   */
  allow_preset_regex?: boolean;
  /** The host's own regex scripts (SillyTavern's global ones, its export format): they run before the preset's, always. */
  regex_scripts?: Record<string, unknown>[];
  /** A card's regex scripts: they run after the preset's, with `allow_char_regex`. */
  char_regex_scripts?: Record<string, unknown>[];
  /** Lets the card's regex scripts run (default false). */
  allow_char_regex?: boolean;
  /** SPEC §15.4: World Info settings (defaults: SillyTavern's fresh install). */
  world_info?: WiSettings;
  /** SPEC §15.9: lorebooks to activate for this chat (World Info files with a name and a source). */
  lorebooks?: Lorebook[];
  /** The state the previous turn returned (`wi_state` of a render, `state` of `lore()`). */
  wi_state?: WiState;
  /** Messages in the conversation so far, the newest included (the timed-effect clock). */
  position?: number;
  generation_type?: 'normal' | 'continue' | 'impersonate' | 'swipe' | 'regenerate' | 'quiet';
  /** A card's `char_prompt` replaces the `main` node (default `true`). */
  prefer_char_prompt?: boolean;
  /** A card's `char_instruction` replaces the `jailbreak` node (default `true`). */
  prefer_char_instruction?: boolean;
  /** A card's depth prompt: a tail item at its depth. */
  char_depth_prompt?: { text: string; depth?: number; role?: 'system' | 'user' | 'model' | 'assistant' } | null;
  /** A card's greetings: `{{greeting::N}}`. */
  first_mes?: string;
  alternate_greetings?: string[];
  /** A card's creator notes: `{{charCreatorNotes}}`. */
  creator_notes?: string;
  /** SillyTavern's system prompt for `{{systemPrompt}}`: `null` a fresh install's, `""` off. */
  system_prompt?: string | null;
  /** Extensions the host has on, for `{{hasExtension::NAME}}` (`null`: ST's built-ins). */
  extensions?: string[] | null;
  /** `{{firstIncludedMessageId}}`, `{{firstDisplayedMessageId}}`. */
  first_included_message_id?: number | null;
  first_displayed_message_id?: number | null;
  /** How depth nodes enter the history (default `merge`). */
  injection?: 'merge' | 'separate';
  /**
   * SPEC §17: `sillytavern` builds the body the live SillyTavern 1.18 app sends for the same
   * inputs (docs/sillytavern.md); default `seed`, stpreset's own layout.
   */
  layout?: 'seed' | 'sillytavern' | null;
  /** SPEC §17.3.1: every random draw returns this number in [0, 1). */
  random?: { constant: number } | null;
  /** SPEC §17.2: SillyTavern's user state (fresh-install defaults when absent). */
  persona_position?: 0 | 2 | 3 | 4 | 9;
  persona_depth?: number;
  persona_role?: 'system' | 'user' | 'assistant';
  author_note?: { text?: string; interval?: number; position?: 0 | 1 | 2; depth?: number; role?: 'system' | 'user' | 'assistant' } | null;
  char_note_depth?: number;
  char_note_role?: 'system' | 'user' | 'assistant';
  chat_scenario?: string;
  chat_mes_example?: string;
  chat_system_prompt?: string;
  start_reply_with?: string;
  pin_examples?: boolean;
  chat_id_hash?: number;
  pick_reroll_seed?: string | number;
  /**
   * SPEC §12, §14.5: the history budget. Absent: the preset's (`openai_max_context` minus its
   * `openai_max_tokens`); `null`: none.
   */
  max_context_tokens?: number | null;
  reserve_tokens?: number | null;
  tokenizer?: 'auto' | 'o200k' | 'cl100k' | 'approx' | 'words';
  /** SPEC §14.3: use the preset's settings (`true`), none (`false`), or these keys replaced. */
  preset_settings?: boolean | PresetSettings;
  /** SPEC §12, §14.3: the request; `null` means "the default, whatever the preset says". */
  provider_options?: {
    /** `gemini` is another name for `google`. */
    shape?: 'openai' | 'anthropic' | 'google' | 'gemini';
    post_processing?: 'none' | 'merge' | 'semi' | 'strict' | 'single' | 'claude' | 'merge_tools' | 'semi_tools' | 'strict_tools' | null;
    squash_system?: boolean | null;
    use_system_prompt?: boolean | null;
    assistant_prefill?: string | null;
    placeholder?: string;
    cache_system_prompt?: boolean;
    cache_at_depth?: number | null;
    cache_ttl?: '5m' | '1h';
    temperature?: number | null;
    top_p?: number | null;
    top_k?: number | null;
    frequency_penalty?: number | null;
    presence_penalty?: number | null;
    max_tokens?: number | null;
    seed?: number | null;
    n?: number | null;
    reasoning_effort?: 'auto' | 'min' | 'low' | 'medium' | 'high' | 'max' | null;
    verbosity?: 'auto' | 'low' | 'medium' | 'high' | null;
    stream?: boolean;
    include_reasoning?: boolean;
    /** Cap the body's output tokens at the model's maximum (docs/provider.md). */
    cap_to_model?: boolean;
  };
}

export type Source =
  | { node: string }
  | { tag: Tag | 'SAMPLE_SEPARATOR' | null }
  | { setting: string }
  | { injection: Source[] | { depth: number; order: number; role: 'system' | 'user' | 'assistant' } }
  | { example: number };

export interface Message {
  role: Role;
  /** Flattened text: `parts.join('')`. */
  parts: string[];
  source: Source;
}

export interface Diagnostic {
  severity: 'warning' | 'info';
  kind: string;
  node?: string;
  span?: [number, number];
  line?: number;
  column?: number;
  /** Regex diagnostics (SPEC §13.8): the script's 0-based position, `null` for the call. */
  script?: number | null;
  message: string;
}

export interface Rendered {
  messages: Message[];
  diagnostics: Diagnostic[];
  variables: Record<string, string>;
  globals: Record<string, string>;
  /** Tokens the history budget counted (null without a budget). */
  prompt_tokens: number | null;
  /** The §12 options the render used, after the preset's settings (SPEC §14.3). */
  effective: Effective;
  /** The World Info state after the render (SPEC §15.9); present when the context had lore. */
  wi_state?: WiState;
}

/** The §12 options a render uses once the preset's settings apply (SPEC §14.3). */
export interface Effective {
  squash_system: boolean;
  use_system_prompt: boolean;
  assistant_prefill: string;
  post_processing: 'none' | 'merge' | 'semi' | 'strict' | 'single';
  max_context_tokens: number | null;
  reserve_tokens: number;
}

/** A preset's settings (SPEC §14.2): only the keys the file has with valid values. */
export interface PresetSettings {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  frequency_penalty?: number;
  presence_penalty?: number;
  openai_max_tokens?: number;
  openai_max_context?: number;
  seed?: number;
  n?: number;
  stream_openai?: boolean;
  reasoning_effort?: 'auto' | 'min' | 'low' | 'medium' | 'high' | 'max';
  verbosity?: 'auto' | 'low' | 'medium' | 'high';
  use_sysprompt?: boolean;
  squash_system_messages?: boolean;
  custom_prompt_post_processing?: '' | 'merge' | 'semi' | 'strict' | 'single';
  assistant_prefill?: string;
  personality_format?: string;
  scenario_format?: string;
  wi_format?: string;
  new_chat_prompt?: string;
  new_group_chat_prompt?: string;
  new_example_chat_prompt?: string;
  send_if_empty?: string;
  group_nudge_prompt?: string;
  [key: string]: unknown;
}

/** One imported regex script (SPEC §13.1), its fields as read (snake_case). */
export interface RegexScript {
  /** 0-based position in its list (diagnostics say `script`). */
  position: number;
  /** Whose list: the host's own (`global`), the preset's, or the card's (`character`). */
  source: 'global' | 'preset' | 'character';
  id: string;
  name: string;
  /** The pattern as written (`/body/flags` or a bare body). */
  find_regex: string;
  replace_string: string;
  trim_strings: string[];
  /** 1 user input, 2 model output, 5 world info (others are kept but never run). */
  placement: number[];
  disabled: boolean;
  /** Runs only in the display pass. */
  markdown_only: boolean;
  /** Runs only in the prompt pass. */
  prompt_only: boolean;
  /** Also runs when a message is edited. */
  run_on_edit: boolean;
  /** How `find_regex` is expanded as a template first. */
  substitute: 'none' | 'raw' | 'escaped';
  min_depth: number | null;
  max_depth: number | null;
}

/** One regex pass over one text (SPEC §13.7). */
export interface Regexed {
  text: string;
  diagnostics: Diagnostic[];
}

/** A new chat's first message (`compiled.firstMessage`): push `item` into the chat. */
export interface FirstMessage {
  item: ContextItem;
  swipes: string[];
  diagnostics: Diagnostic[];
}

/** The prompt pass over a context's items (SPEC §13.2.3). */
export interface PromptPass {
  /** One per context item: its text after the pass (no `name` prefix); `null`: a lore item it dropped. */
  items: (string | null)[];
  diagnostics: Diagnostic[];
}

/** A message's role; `'assistant'` is read as `'model'`. */
export type MessageRole = Role | 'assistant';

export interface Expansion {
  text: string;
  diagnostics: Diagnostic[];
  variables: Record<string, string>;
}

export interface Audit {
  nodes: number;
  enabled: number;
  diagnostics: Diagnostic[];
}

export declare class StpresetError extends Error {
  readonly kind: string;
}
export declare class PresetError extends StpresetError {}
export declare class ContextError extends StpresetError {}
export declare class TemplateError extends StpresetError {}
/** A character card that cannot be read (kind `CardPngInvalid`, `CardNoMetadata`, `CardJsonInvalid`, `CardNotACard`, `CardTooLarge`). */
export declare class CardError extends StpresetError {}
export declare class StoreError extends StpresetError {
  /** For kind `Refused`: the node that could not be switched on. */
  readonly node?: string;
  /** For kind `Refused`: the constraints in the way. */
  readonly issues?: SwitchIssue[];
}

/** A constraint a switch meets (kinds as the NemoPresetExt extension names them). */
export interface SwitchIssue {
  kind: 'exclusive' | 'mutual-exclusive-group' | 'category-limit' | 'missing-dependency' | 'soft-conflict' | 'deprecated' | 'unresolvable';
  /** The node being switched on. */
  node: string;
  /** The nodes in the way (on) or needed (off), identifiers. */
  others: string[];
  /** What is wrong, naming the nodes. */
  message: string;
  /** The author's message, when the preset has one. */
  author: string | null;
}

/** What `store.setEnabled` did. */
export interface Switched {
  /** Every identifier switched: the asked ones, then the resolutions'. */
  changes: { identifier: string; enabled: boolean }[];
  /** The errors resolved (by `resolve: true` or the author's own directives). */
  resolved: SwitchIssue[];
  /** Soft conflicts, deprecated nodes, unmet requirements switched on anyway. */
  warnings: SwitchIssue[];
}

/** A server or preset id: BigInt, a safe integer, or decimal text (Discord ids are past 2^53). */
export type StoreId = bigint | number | string;

export interface PresetSummary {
  id: string;
  name: string;
  active: boolean;
  nodes: number;
  regex_allowed: boolean;
}

/** Presets per server in one database (a SQLite file path, or a PostgreSQL connection string
 * such as `postgresql://bot@db/presets` or `host=/run/postgresql dbname=presets`); the active
 * preset compiled through a cache, which changes made by other instances invalidate. */
export declare class PresetStore {
  static open(path: string): PresetStore;
  importPreset(server: StoreId, name: string, text: string | Uint8Array): string;
  list(server: StoreId): PresetSummary[];
  /** A stored preset's nodes in walk order, with the switches the store keeps. */
  nodes(server: StoreId, preset: StoreId): PresetNodeInfo[];
  /** A stored preset's nodes under their sections, with the stored switches. */
  outline(server: StoreId, preset: StoreId): Outline;
  activate(server: StoreId, preset: StoreId): void;
  deactivate(server: StoreId): void;
  setEnabled(server: StoreId, preset: StoreId, toggles: Record<string, boolean>, options?: { resolve?: boolean }): Switched;
  allowRegex(server: StoreId, preset: StoreId, allowed: boolean): void;
  delete(server: StoreId, preset: StoreId): void;
  active(server: StoreId): CompiledPreset | null;
  render(server: StoreId, context: Chat): ChatRendered | null;
  render(server: StoreId, context?: Context | string): Rendered | null;
}

export interface RequestResult {
  /** The provider's request body: OpenAI `{messages}`, Anthropic `{system?, messages}`, Gemini `{systemInstruction?, contents}`. */
  request: Record<string, unknown>;
  diagnostics: Diagnostic[];
  prompt_tokens: number | null;
  effective: Effective;
  variables: Record<string, string>;
  globals: Record<string, string>;
  /** The World Info state to keep for the next turn, from the same render (present with lore). */
  wi_state?: WiState;
}

/** A chat's request (`compiled.request(chat)`): the body as bytes too. */
export interface ChatRequested extends RequestResult {
  /** The request body as UTF-8 JSON bytes, ready to POST (what `requestBody` gives). */
  readonly body: Buffer;
}

/**
 * A chat kept between turns (the fast way to render the same chat turn after turn): the
 * context read once, then changed in place; a render hands back the history strings given
 * here. Items are read when added: later changes to the objects are not seen.
 */
export declare class Chat {
  constructor(context?: Context);
  /** How many items it has. */
  readonly length: number;
  /** Adds items at the end; returns the new length. Throws `ContextError`, changing nothing. */
  push(...items: ContextItem[]): number;
  /** As `Array.prototype.splice` (a negative `start` counts from the end). */
  splice(start: number, deleteCount?: number, ...items: ContextItem[]): ContextItem[];
  /** Replaces the given fields (any but `items`), e.g. `{ now, variables }`. */
  set(fields: Omit<Context, 'items'>): void;
  /** Carries a render's `variables` and `globals` into the next turn. */
  /** Answers the macros the catalog and the context's `macros` lack: a string, or null to leave one literal. */
  setMacroFn(fn: ((name: string, args: string[]) => string | null | undefined) | null): void;
  keep(result: { variables: Record<string, string>; globals: Record<string, string> }): void;
  /** The chat saved: a context `new Chat(saved)` reads back (`JSON.stringify(chat)` stores it). */
  toJSON(): Context;
}

/**
 * A message of `render(chat)`: read it, do not change it. A history item passed through
 * unchanged is the same frozen object every turn, with the same `parts` array (left unfrozen:
 * V8 iterates frozen arrays several times slower); copy a message to edit it.
 */
export interface SharedMessage {
  readonly role: Role;
  readonly parts: readonly string[];
  readonly source: Source;
}

/** What `render(chat)` returns: `messages` at once, the rest read when first asked for. */
export interface ChatRendered extends Omit<Rendered, 'messages'> {
  /** Shared between turns (see `SharedMessage`); `source` objects are frozen. */
  readonly messages: readonly SharedMessage[];
  toJSON(): Rendered;
}

/** Anything that stands for a context: an object, its JSON text, or a `Chat`. */
export type ContextLike = Context | string | Chat;

export declare class CompiledPreset {
  /** The settings it renders with (SPEC §14). */
  readonly settings: PresetSettings;
  render(context: Chat): ChatRendered;
  render(context?: ContextLike): Rendered;
  /**
   * A chat's request: its `body` as bytes to POST, the rest read when first asked for; keep
   * it with `chat.keep(result)` as a render (the variables stay native until read).
   */
  request(context: Chat): ChatRequested;
  /** Renders and shapes the request `context.provider_options` asks for (SPEC §12). */
  request(context?: ContextLike): RequestResult;
  /** Only the request body, as UTF-8 JSON bytes to POST (no JS strings made: the fast path). */
  requestBody(context?: ContextLike): Buffer;
  /** The regex scripts it runs (SPEC §13.1). */
  readonly regexScripts: RegexScript[];
  /**
   * A model reply or user message before the bot stores it (SPEC §13.7 store pass: scripts
   * with neither `markdownOnly` nor `promptOnly`). Scripts run only when the context has
   * `allow_preset_regex: true`; otherwise the text comes back unchanged with a
   * `RegexNotAllowed` note. Throws `ContextError` (kind `Role`) for an unknown role.
   */
  storeMessage(text: string, role: MessageRole, context?: ContextLike): Regexed;
  /** A new chat's first message, as SillyTavern opens a chat with the character; `null` without a greeting. */
  firstMessage(context?: ContextLike): FirstMessage | null;
  /**
   * An edited message (the store pass's scripts that have `runOnEdit`). `speaker` (or `null`)
   * stands for `{{char}}` in trim strings.
   */
  editMessage(text: string, role: MessageRole, speaker?: string | null, context?: ContextLike): Regexed;
  /**
   * Text shown to people (`markdownOnly` scripts; they often emit HTML, never sanitized here:
   * do not send the result to a model). `depth`: 0 is the newest message, `null` none;
   * `speaker` (or `null`) stands for `{{char}}` in trim strings.
   */
  displayMessage(
    text: string,
    role: MessageRole,
    depth?: number | null,
    speaker?: string | null,
    context?: ContextLike,
  ): Regexed;
  /** `displayMessage`, then its HTML as Markdown, for a chat app that shows Markdown. */
  displayText(
    text: string,
    role: MessageRole,
    depth?: number | null,
    speaker?: string | null,
    context?: ContextLike,
  ): Regexed;
  /**
   * The prompt pass `render` runs over the context's items (SPEC §13.2.3), alone: each item's
   * text after it, without the `name` prefix.
   */
  promptPass(context?: ContextLike): PromptPass;
}

export interface PresetNodeInfo {
  identifier: string;
  name: string;
  role: string;
  enabled: boolean;
  marker: boolean;
  /** Depth nodes: where they are injected into the history. */
  injection: { depth: number; order: number } | null;
}

/** The directives of a node (`{{// @NAME VALUE}}`; docs/presets.md). */
export interface NodeDirectives {
  tooltip: string | null;
  badge: string | null;
  color: string | null;
  highlight: boolean;
  categories: string[];
  exclusive_group: string | null;
  exclusive_with: string[];
  exclusive_message: string | null;
  requires: string[];
  requires_message: string | null;
  auto_enable_dependencies: boolean;
  conflicts_with: string[];
  conflicts_message: string | null;
  max_one_per_category: string | null;
  auto_disable: string[];
  deprecated: string | null;
}

/** One node of `preset.outline()`, in display order. */
export interface OutlineNode {
  identifier: string;
  name: string;
  enabled: boolean;
  /** The titles of the headers above it, main then sub (empty at the top level). */
  section: string[];
  /** `main` or `sub` for a header node. */
  header: 'main' | 'sub' | null;
  tooltip: string | null;
  badges: string[];
  /** The exclusive groups it belongs to. */
  groups: string[];
  directives: NodeDirectives;
}

/** A header and what is under it, with on/total counts (sub-sections included). */
export interface OutlineSection {
  title: string;
  /** The header node's identifier: sections are told apart by it. */
  identifier: string;
  nodes: string[];
  sections: OutlineSection[];
  enabled: number;
  total: number;
}

/** What `preset.outline()` returns. */
export interface Outline {
  nodes: OutlineNode[];
  groups: { name: string; members: string[] }[];
  sections: OutlineSection[];
}

export declare class Preset {
  static fromJson(text: string | Uint8Array): Preset;
  /** `toggles` switches nodes on or off by identifier first (unknown: `PresetError`, kind `UnknownNode`). */
  compile(toggles?: Record<string, boolean>): CompiledPreset;
  /** The nodes in walk order, as a prompt manager lists them. */
  nodes(): PresetNodeInfo[];
  /** The nodes as the authors arranged them: sections, tooltips, badges, exclusive groups. */
  outline(): Outline;
  audit(): Audit;
  /** The preset's settings (SPEC §14), after SillyTavern's migration. */
  readonly settings: PresetSettings;
  /** The preset's regex scripts as imported (SPEC §13.1): valid entries only, each with its `position`. */
  readonly regexScripts: RegexScript[];
}

export declare class Template {
  static compile(source: string | Uint8Array): Template;
  render(context?: ContextLike): Expansion;
}

/**
 * Loads a tokenizer's vocabulary now (0.3–0.4 s each, once per process) rather than in the
 * first budgeted render: `'auto'` (default) loads both `o200k` and `cl100k`.
 */
/**
 * Reads a SillyTavern chat file (`.jsonl`, SPEC §17.5) into context fields to merge into a
 * context: `items` and, where the file has them, `user`, `char`, `variables`, `chat_id_hash`,
 * `pick_reroll_seed`, `chat_scenario`, `chat_mes_example`, `chat_system_prompt`, `author_note`,
 * `position`. Throws `ContextError`.
 */
export declare function readStChat(bytes: Uint8Array | string): Partial<Context> & { items: ContextItem[] };
export declare function preloadTokenizer(name?: 'auto' | 'o200k' | 'cl100k' | 'approx' | 'words'): void;

export declare function expand(source: string | Buffer, context?: ContextLike): Expansion;

/** SPEC §15.4's settings; every field optional. */
export interface WiSettings {
  scan_depth?: number;
  budget_percent?: number;
  budget_cap?: number;
  include_names?: boolean;
  recursive?: boolean;
  case_sensitive?: boolean;
  match_whole_words?: boolean;
  /** 0: character and global books together; 1: character first; 2: global first. */
  character_strategy?: 0 | 1 | 2;
  min_activations?: number;
  min_activations_depth_max?: number;
  max_recursion_steps?: number;
  group_scoring?: boolean;
}

/** A lorebook in a context: a World Info file's `entries` (or a `character_book` array). */
export interface Lorebook {
  /** The book's identity in `wi_state` (`NAME.UID`): a stable key, not a title. */
  name: string;
  source?: 'chat' | 'persona' | 'character' | 'global';
  entries: Record<string, Record<string, unknown>> | Record<string, unknown>[];
}

export interface WiEffect {
  kind: 'sticky' | 'cooldown';
  entry: string;
  fingerprint: string;
  start: number;
  end: number;
  protected: boolean;
}

export interface WiState {
  version: 1;
  effects: WiEffect[];
}

/** What `lore()` returns (SPEC §15.7). */
export interface WiResult {
  activated: string[];
  before: string;
  after: string;
  depth: { depth: number; role: 'system' | 'user' | 'assistant'; text: string }[];
  examples: { position: 'top' | 'bottom'; text: string }[];
  an_top: string[];
  an_bottom: string[];
  outlets: Record<string, string>;
  state: WiState;
  diagnostics: Diagnostic[];
}

/** What `readCard()` returns: merge `context` under your context and put `items` first. */
export interface CardDocument {
  card: Record<string, unknown>;
  context: Partial<Context>;
  diagnostics: Diagnostic[];
  items: ContextItem[];
}

/** Reads a character card (PNG or JSON bytes). Throws `CardError`. */
export declare function readCard(bytes: Uint8Array, options?: { png?: boolean }): CardDocument;

/** The World Info activation a render of `context` would place. */
export declare function lore(context?: ContextLike): WiResult;
