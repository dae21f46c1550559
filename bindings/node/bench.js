'use strict';
// Per-render cost through the Node package on the corpus's largest preset with a 200-message
// history (the context of `benches/support`): node bench.js [../../../shared/corpus/presets]
const fs = require('node:fs');
const path = require('node:path');
const { Preset } = require('.');
const { context } = require('./bench/context.js');

const dir = process.argv[2] || path.join(__dirname, '..', '..', '..', 'shared', 'corpus', 'presets');
const files = fs.readdirSync(dir).map((f) => path.join(dir, f));
const largest = files.sort((a, b) => fs.statSync(b).size - fs.statSync(a).size)[0];

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
