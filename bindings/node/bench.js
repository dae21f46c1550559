'use strict';
// Per-render cost through the Node package on the corpus's largest preset with a 200-message
// history (the context of `benches/support`): node bench.js [../../../shared/corpus/presets]
const fs = require('node:fs');
const path = require('node:path');
const { Preset } = require('.');

const dir = process.argv[2] || path.join(__dirname, '..', '..', '..', 'shared', 'corpus', 'presets');
const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
const largest = files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];

function context(history) {
  const items = [
    { tag: 'SYSTEM_CHANNEL_PROMPT', role: 'system', text: 'Channel: #roleplay' },
    { tag: 'SYSTEM_PERSONA_PROMPT', role: 'system', text: '{{char}} is a shrine maiden who tends the hill shrine.' },
    { tag: 'SYSTEM_PERSONALITY', role: 'system', text: 'kind, witty, stubborn' },
    { tag: 'KNOWLEDGE_SERVER_INFO', role: 'system', text: 'Server: Moonlit Hill' },
    { tag: 'KNOWLEDGE_SERVER_MEMORIES', role: 'system', text: '{user} once lost a bet.' },
    { tag: 'KNOWLEDGE_LOREBOOK_BEFORE', role: 'system', text: 'The shrine is 300 years old.' },
    { tag: 'KNOWLEDGE_LOREBOOK_AFTER', role: 'system', text: 'Festivals happen in autumn.' },
    { tag: 'KNOWLEDGE_ACTIVE_USERS', role: 'system', text: 'Active: Alice, Bob' },
    { tag: 'DIALOGUE_SAMPLE', role: 'user', text: 'Alice: hello?' },
    { tag: 'DIALOGUE_SAMPLE', role: 'model', text: 'Tomori: Welcome, traveller.' },
  ];
  for (let i = 0; i < history; i++) {
    const [role, who] = i % 2 === 0 ? ['user', 'Alice'] : ['model', 'Tomori'];
    items.push({ tag: 'DIALOGUE_HISTORY', role, text: `${who}: message ${i} about the festival and the old shrine.`, time: '2026-11-29T16:00:00Z' });
  }
  items.push({ tag: 'CONTEXT_CURRENT', role: 'system', text: 'It is raining.', depth: 1 });
  items.push({ tag: 'KNOWLEDGE_LORE_ACTIVATED', role: 'system', text: 'Rain omen lore.' });
  return {
    user: 'Alice', char: 'Tomori', description: 'A shrine maiden. {{user}} is her friend.',
    personality: 'kind\nwitty', persona: 'Alice is a student.', scenario: '',
    model: 'gemini-2.5-pro', provider: 'google', now: '2026-11-29T17:07:00Z',
    utc_offset_minutes: 480, seed: 42, chat_id: 'chat-1',
    capabilities: { web_search: true }, tools: ['web_search'],
    globals: { mood: 'calm' }, items,
  };
}

function time(label, n, f) {
  for (let i = 0; i < Math.min(n, 200); i++) f();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) f();
  const us = Number(process.hrtime.bigint() - t0) / n / 1000;
  console.log(`${label.padEnd(44)} ${us.toFixed(1)} µs`);
  return us;
}

const compiled = Preset.fromJson(fs.readFileSync(largest)).compile();
const ctx = context(200);
const ctxJson = JSON.stringify(ctx);
console.log(`node ${process.version}, ${path.basename(largest)}, 200-message history`);
const n = 2000;
time('render(object) → object (whole call)', n, () => compiled.render(ctx));
time('  native renderJson(string) → string', n, () => compiled._inner.renderJson(ctxJson));
time('  JSON.stringify(context)', n, () => JSON.stringify(ctx));
const out = compiled._inner.renderJson(ctxJson);
time('  JSON.parse(result)', n, () => JSON.parse(out));
time('  native render(string) → object', n, () => compiled._inner.render(ctxJson));
time('requestBody(object) → Buffer (whole call)', n, () => compiled.requestBody(ctx));

// A bot's turn: the same history with one new message each call (never in the count cache),
// the preset's own settings and budget (SPEC §14.5), o200k.
const { preloadTokenizer } = require('.');
preloadTokenizer('o200k');
let turn = 0;
function nextTurn(extra) {
  turn += 1;
  const c = context(200);
  c.items.splice(c.items.length - 2, 0, { tag: 'DIALOGUE_HISTORY', role: 'user', text: `Alice: turn ${turn} brings rain.` });
  return { ...c, tokenizer: 'o200k', ...extra };
}
const m = 300;
time('new turn: requestBody (preset budget)', m, () => compiled.requestBody(nextTurn()));
time('new turn: request, with prompt_tokens', m, () => compiled.request(nextTurn()));
time('new turn: requestBody, no budget', m, () => compiled.requestBody(nextTurn({ max_context_tokens: null })));
