// A bot's whole turn through the package (issue 54), in both layouts: NemoEngine 11.5.2 (else the
// corpus's largest preset), the generated card, 400-entry book and 200-message chat of
// `book.js` (`benches/turn.rs` in Rust), model gpt-4o. A turn: one message out at the front and
// one in, `request(chat)` (the render and the provider body's bytes), the `wi_state` set back,
// the variables kept. Beside it `render(chat)` and `lore(chat)` alone:
//   node bench/whole-turn.mjs [../../../shared/corpus/presets]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { ENTRIES, context } = require('./book.js');
const { Preset, Chat, lore } = require('../index.js');

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] || path.join(here, '..', '..', '..', '..', 'shared', 'corpus', 'presets');
if (!fs.existsSync(dir)) {
  console.log(`SKIPPED: ${dir} not found (../shared is not beside this checkout)`);
  process.exit(0);
}

// Median µs per call of 15 batches of at least 20 ms, after 300 ms of warm-up.
function time(f, rounds = 15) {
  const warm = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - warm) < 300e6) f();
  let n = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    if (Number(process.hrtime.bigint() - t0) > 20e6) break;
    n *= 2;
  }
  const samples = [];
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) f();
    samples.push(Number(process.hrtime.bigint() - t0) / n / 1000);
  }
  return samples.sort((a, b) => a - b)[samples.length >> 1];
}

const files = fs.readdirSync(dir).sort();
const file = files.find((f) => f.includes('NemoEngine-11.5.2'))
  || files.sort((a, b) => fs.statSync(path.join(dir, b)).size - fs.statSync(path.join(dir, a)).size)[0];
const compiled = Preset.fromJson(fs.readFileSync(path.join(dir, file))).compile();
console.log(`node ${process.version}; ${file}; ${ENTRIES}-entry book, 200 messages; median µs`);
console.log(`${'layout'.padEnd(12)} ${'whole turn'.padStart(11)} ${'render'.padStart(9)} ${'lore'.padStart(9)}`);
for (const layout of ['seed', 'sillytavern']) {
  const chat = new Chat(context(layout));
  let n = 0;
  const turn = () => {
    n += 1;
    chat.splice(0, 1);
    chat.push({ tag: 'DIALOGUE_HISTORY', role: n % 2 === 0 ? 'user' : 'model', text: `Alice: turn ${n}, and we talk of place${n % ENTRIES} again.` });
    // One render: the body's bytes (what a bot POSTs), the state set back, the variables kept.
    const r = compiled.request(chat);
    chat.set({ wi_state: r.wi_state });
    chat.keep(r);
    return r.body;
  };
  const whole = time(turn);
  const fixed = new Chat(context(layout));
  const render = time(() => compiled.render(fixed));
  const alone = time(() => lore(fixed));
  console.log(`${layout.padEnd(12)} ${whole.toFixed(0).padStart(11)} ${render.toFixed(0).padStart(9)} ${alone.toFixed(0).padStart(9)}`);
}
