// Mistakes index.d.ts must catch: each line below is an error (`@ts-expect-error` fails the
// check if it is not).
import type { ContextItem } from '..';

// @ts-expect-error a misspelt tag
export const a: ContextItem = { tag: 'DIALOG_HISTORY', role: 'user', text: 'x' };
// @ts-expect-error an unknown role
export const b: ContextItem = { tag: 'DIALOGUE_HISTORY', role: 'narrator', text: 'x' };
// @ts-expect-error no role
export const c: ContextItem = { tag: 'DIALOGUE_HISTORY', text: 'x' };
import type { Lorebook } from '..';
// @ts-expect-error a book without a name
export const d: Lorebook = { entries: {} };
import type { ChatRendered } from '..';
export function edit(out: ChatRendered): void {
  // @ts-expect-error a shared message's parts are read-only (the next turn hands them back)
  out.messages[0].parts.push('x');
  // @ts-expect-error and so is the message
  out.messages[0].role = 'user';
}
