// Times `turn()` of bench/turn.mjs over every corpus preset, reading every part of every
// message as a bot would, beside the call it replaces (`render(object)`):
//   node bench/run.mjs [../../../shared/corpus/presets]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { setup } from './turn.mjs';

const require = createRequire(import.meta.url);
const { context } = require('./context.js');
const { Preset } = require('../index.js');

const here = path.dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2] || path.join(here, '..', '..', '..', '..', 'shared', 'corpus', 'presets');
if (!fs.existsSync(dir)) {
  console.log(`SKIPPED: ${dir} not found (../shared is not beside this checkout)`);
  process.exit(0);
}

// Every part of every message read, the lengths summed in a local: a module-level `sink +=`
// per part boxed a new heap number each time once the sum left the small-integer range, which
// cost the harness about 2.4 µs a turn (measured over the corpus), charged to every preset.
let sink = 0;
function read(result) {
  let n = 0;
  for (const m of result.messages) {
    n += m.role.length;
    for (const p of m.parts) n += p.length;
  }
  sink = (sink + n) % 1e9;
}

// Per function: warmed up for 300 ms (the first render may load a tokenizer's vocabulary: tens
// of milliseconds), then a batch size `n` found that runs at least 20 ms.
function calibrate(f) {
  const warm = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - warm) < 300e6) read(f());
  let n = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < n; i++) read(f());
    if (Number(process.hrtime.bigint() - t0) > 20e6) return n;
    n *= 2;
  }
}

// Median µs per call of each function over `rounds` batches, the functions taking turns batch
// by batch: a burst of load on a shared machine then costs every function one batch, rather
// than every batch of whichever function was being timed.
function time(fns, rounds = 21) {
  const ns = fns.map(calibrate);
  const samples = fns.map(() => []);
  for (let r = 0; r < rounds; r++) {
    fns.forEach((f, j) => {
      const n = ns[j];
      const t0 = process.hrtime.bigint();
      for (let i = 0; i < n; i++) read(f());
      samples[j].push(Number(process.hrtime.bigint() - t0) / n / 1000);
    });
  }
  return samples.map((s) => s.sort((a, b) => a - b)[s.length >> 1]);
}

// TomoriBot's own turn (`reassembleWithPreset`) on these presets, measured on a quiet machine of
// this kind (issue 20); the others were not given.
const TOMORIBOT = {
  'st-default__Default.json': 51,
  'marinara__Friendship-Ended-Gemini.json': 121,
  'marinara__Spaghetti-Recipe-Essentials.json': 170,
  'nemo__NemoEngine-11.5.2-General-RP.json': 2600,
};

const ctx = context(200);
console.log(`node ${process.version}; 200-message history; µs per turn (median), every part read`);
console.log(`${'preset'.padEnd(48)} ${'turn()'.padStart(9)} ${'render(obj)'.padStart(12)} ${'TomoriBot'.padStart(10)} ${'ratio'.padStart(6)}`);
// Every preset's turn first, then every `render(object)`: the plain calls leave megabytes of
// garbage whose collection would otherwise land in the turns.
const files = fs.readdirSync(dir).sort();
const read_ = (file) => fs.readFileSync(path.join(dir, file));
const fast = time(files.map((file) => setup(read_(file), ctx)));
const plain = time(
  files.map((file) => {
    const compiled = Preset.fromJson(read_(file)).compile();
    return () => compiled.render(ctx);
  }),
  7,
);
const rows = files.map((file, j) => ({ file, fast: fast[j], plain: plain[j] }));
for (const { file, fast, plain } of rows) {
  const ref = TOMORIBOT[file];
  const vs = ref ? `${String(ref).padStart(10)} ${(ref / fast).toFixed(1).padStart(5)}×` : '';
  console.log(`${file.padEnd(48)} ${fast.toFixed(1).padStart(9)} ${plain.toFixed(1).padStart(12)} ${vs}`);
}
const geo = (xs) => Math.exp(xs.reduce((a, x) => a + Math.log(x), 0) / xs.length);
console.log(`${'geometric mean'.padEnd(48)} ${geo(rows.map((r) => r.fast)).toFixed(1).padStart(9)} ${geo(rows.map((r) => r.plain)).toFixed(1).padStart(12)}`);
if (sink === 0) console.log('');
