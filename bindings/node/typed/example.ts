// A bot's turn, typed: `tsc -p typed` runs in CI (`npm test`), so index.d.ts keeps catching
// mistakes (a misspelt tag or role is an error; see mistakes.ts).
import { Chat, Preset, type Context, type ContextItem, lore } from '..';
import type { WiState, WiResult, FirstMessage, Switched } from '..';
import { PresetStore, StoreError } from '..';

const PRESET = '{"prompts": [{"identifier": "main", "content": "Hi {{user}}"}, {"identifier": "chatHistory", "marker": true}]}';

// A public bot sets its render budget: about 400 ms, 50 of them for chat text.
const ctx: Context = {
  user: 'Alice', char: 'Tomori', items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }],
  limits: { render_work: 400_000_000, chat_work: 50_000_000 },
};
const compiled = Preset.fromJson(PRESET).compile();
const chat = new Chat(ctx);
for (let turn = 0; turn < 2; turn++) {
  const out = compiled.render(chat);
  for (const m of out.messages) console.log(m.role, m.parts.join(''));
  chat.keep(out);
  const reply: ContextItem = { tag: 'DIALOGUE_HISTORY', role: 'model', text: `reply ${turn}` };
  chat.push(reply);
}
const plain = compiled.render(ctx);
const tokens: number | null = plain.prompt_tokens;
console.log(tokens, plain.diagnostics.length);

// World Info: books in the context, the state kept between turns.
let state: WiState | undefined;
const lored: Context = { ...ctx, position: 1, lorebooks: [{ name: 'town', entries: { 0: { key: ['hi'], content: 'Lore.' } } }] };
const withLore = compiled.render({ ...lored, wi_state: state });
state = withLore.wi_state;
// Or the body and the state from one render.
state = compiled.request({ ...lored, wi_state: state }).wi_state ?? state;
// A chat's turn in one render: the bytes to POST, the state, the variables kept natively.
const lorebooks = lored.lorebooks ?? [];
const loreChat = new Chat({ ...lored, lorebooks });
const turn = compiled.request(loreChat);
const body: Buffer = turn.body;
loreChat.set({ wi_state: turn.wi_state });
loreChat.keep(turn);
console.log(body.length);
const activation: WiResult = lore(lored);
console.log(state?.effects.length, activation.activated);

// A chat started from the card's greeting, saved across a restart and read back.
const greeted = new Chat({ char: 'Tomori', first_mes: 'Welcome.' });
const first: FirstMessage | null = compiled.firstMessage(greeted);
if (first !== null) greeted.push(first.item);
const saved: string = JSON.stringify(greeted);
const restored = new Chat(JSON.parse(saved) as Context);
console.log(restored.length, first?.swipes.length, compiled.request({ provider_options: { shape: 'gemini' } }));

// A bot's menu switching a node on: the author's exclusive groups refuse it, then the bot asks
// the admin and resolves (issue 41).
function switchOn(store: PresetStore, guild: bigint, preset: string, node: string): string[] {
  let done: Switched;
  try {
    done = store.setEnabled(guild, preset, { [node]: true });
  } catch (e) {
    if (!(e instanceof StoreError) || e.kind !== 'Refused' || !e.issues) throw e;
    console.log(e.issues.map((i) => i.message + (i.author ? ` ("${i.author}")` : '')).join('; '));
    done = store.setEnabled(guild, preset, { [node]: true }, { resolve: true });
  }
  console.log(store.outline(guild, preset).sections.map((s) => `${s.title} ${s.enabled}/${s.total}`));
  return done.changes.filter((c) => !c.enabled).map((c) => c.identifier);
}
void switchOn;
