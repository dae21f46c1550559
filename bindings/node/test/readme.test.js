'use strict';
// The README's Node example runs as written: extracted from README.md, run from the repository
// root with `stpreset` resolving to this package.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');

const root = path.join(__dirname, '..', '..', '..');

test('README Node.js example', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Node.js'));
  const code = section.match(/```js\n([\s\S]*?)```/)[1];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-readme-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'stpreset'), 'dir');
  fs.writeFileSync(path.join(dir, 'example.mjs'), code);
  const out = execFileSync(process.execPath, [path.join(dir, 'example.mjs')], { cwd: root, encoding: 'utf8' });
  assert.match(out, /^system You are Tomori/m);
  assert.match(out, /^user hi$/m);
  assert.match(out, /^Alice$/m);
  assert.match(out, /^true NotAPreset$/m);
  assert.match(out, /^\*waves\* \*\*hello\*\*$/m);
  // Each generation type's last message (SPEC §18.1, the seed layout).
  assert.match(out, /^continue system \[Continue your last message without repeating its original content\.\]$/m);
  assert.match(out, /^impersonate system \[Write your next reply from the point of view of Alice/m);
  assert.match(out, /^quiet system Summarize the chat\.$/m);
  assert.match(out, /^swipe (?!.*hello)/m);
  assert.match(out, /^regenerate (?!.*hello)/m);
});

test('README store example (Node)', () => {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('## Store'));
  const code = section.match(/```js\n([\s\S]*?)```/)[1];
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-readme-'));
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(path.join(__dirname, '..'), path.join(dir, 'node_modules', 'stpreset'), 'dir');
  fs.writeFileSync(path.join(dir, 'store.mjs'), code);
  const out = execFileSync(process.execPath, [path.join(dir, 'store.mjs')], { cwd: root, encoding: 'utf8' });
  assert.match(out, /^main=on /m);
  assert.match(out, /^\d+ messages$/m);
});
