// Types of the `stpreset` package. Field names follow SPEC §9's JSON (snake_case where the
// context file uses it): the objects are exactly the documents the CLI prints.

export type Role = 'system' | 'user' | 'model';

export interface ContextItem {
  tag?: string;
  role: Role | 'assistant';
  text: string;
  /** RFC 3339, read by `idle_duration`. */
  time?: string;
  /** Tail items only: inject at this depth. */
  depth?: number;
}

/** The context file of SPEC §9; every field optional. */
export interface Context {
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
  /** How depth nodes enter the history (default `merge`). */
  injection?: 'merge' | 'separate';
}

export type Source =
  | { node: string }
  | { tag: string | null }
  | { injection: Source[] };

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
  message: string;
}

export interface Rendered {
  messages: Message[];
  diagnostics: Diagnostic[];
  variables: Record<string, string>;
  globals: Record<string, string>;
}

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

export declare class CompiledPreset {
  render(context?: Context | string): Rendered;
}

export declare class Preset {
  static fromJson(text: string | Buffer): Preset;
  compile(): CompiledPreset;
  audit(): Audit;
}

export declare class Template {
  static compile(source: string | Buffer): Template;
  render(context?: Context | string): Expansion;
}

export declare function expand(source: string | Buffer, context?: Context | string): Expansion;
