'use strict';
// Run against the installed npm tarball (.ci/artifacts): `stpreset` resolves to the package
// installed in a clean folder, not to this tree.
const assert = require('node:assert');
const s = require('stpreset');

assert.ok(require.resolve('stpreset').includes('/node_modules/stpreset/'), 'resolved to the tree, not the tarball');
const p = s.Preset.fromJson('{"prompts": [{"identifier": "main", "content": "Hi {{user}}{{incvar::n}}"}, {"identifier": "chatHistory", "marker": true}]}');
const chat = new s.Chat({ user: 'Alice', items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi \ud83d' }] });
const out = p.compile().render(chat);
assert.deepStrictEqual(out.messages.map((m) => m.parts.join('')), ['Hi Alice1', 'hi \ufffd']);
assert.strictEqual(out.diagnostics[0].kind, 'LoneSurrogate');
chat.keep(out);
assert.strictEqual(p.compile().render(chat).variables.n, '2');
assert.throws(() => s.Preset.fromJson('[]'), s.PresetError);
console.log('npm package smoke test: ok');
