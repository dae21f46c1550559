'use strict';
// Character cards and World Info in the package (SPEC §15): the same documents as the CLI.
const { test } = require('node:test');
const assert = require('node:assert');
const s = require('..');

const PRESET = s.Preset.fromJson(JSON.stringify({ prompts: [
  { identifier: 'main', content: 'Main. {{outlet::sky}}' },
  { identifier: 'worldInfoBefore', marker: true },
  { identifier: 'chatHistory', marker: true },
] })).compile();

const BOOK = { name: 'town', entries: {
  1: { key: ['bell'], content: 'The bell tolls.', sticky: 2 },
  0: { key: ['bell'], content: 'Grey sky.', position: 7, outletName: 'sky' },
} };

test('lore in a context object: placed in a render, the state comes back, and lore() agrees', () => {
  const context = { user: 'Alice', position: 1, lorebooks: [BOOK],
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'ring the bell' }] };
  const out = PRESET.render(context);
  assert.deepStrictEqual(out.messages.map((m) => m.parts.join('')), ['Main. Grey sky.', 'The bell tolls.', 'ring the bell']);
  assert.deepStrictEqual(out.wi_state.effects.map((e) => [e.entry, e.start, e.end]), [['town.1', 1, 3]]);
  const lore = s.lore(context);
  assert.deepStrictEqual(lore.activated, ['town.0', 'town.1']);
  assert.deepStrictEqual(lore.state, out.wi_state);
  // The next turn, without the key: the sticky entry stays, through a Chat too.
  const chat = new s.Chat({ ...context, position: 2, wi_state: out.wi_state,
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'quiet' }] });
  const next = PRESET.render(chat);
  assert.ok(next.messages.some((m) => m.parts.join('') === 'The bell tolls.'));
  assert.strictEqual(next.toJSON().wi_state.effects.length, 1);
});

test('readCard: a JSON card merged into a context brings its fields, items and book', () => {
  const card = Buffer.from(JSON.stringify({ spec: 'chara_card_v2', data: { name: 'Sera', personality: 'kind',
    character_book: { entries: [{ keys: ['forest'], content: 'Old trees.', enabled: true, position: 'before_char' }] } } }));
  const doc = s.readCard(card);
  assert.strictEqual(doc.card.name, 'Sera');
  assert.strictEqual(doc.context.char, 'Sera');
  const context = { ...doc.context, position: 1,
    items: [...doc.items, { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'the forest' }] };
  assert.deepStrictEqual(s.lore(context).activated, ["Sera's Lorebook.0"]);
  assert.throws(() => s.readCard(Buffer.from('[1]')), (e) => e instanceof s.CardError && e.kind === 'CardNotACard');
  assert.throws(() => s.readCard(Buffer.from('{}'), { png: true }), (e) => e instanceof s.CardError && e.kind === 'CardPngInvalid');
  assert.throws(() => s.readCard('not bytes'), TypeError);
});

test('lore errors name the context field', () => {
  assert.throws(() => s.lore({ lorebooks: [{ name: 'a', source: 'moon', entries: {} }] }),
    (e) => e instanceof s.ContextError && /lorebooks\[0\]\.source/.test(e.message));
});
