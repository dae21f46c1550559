'use strict';
// Regex scripts (SPEC §13): the scripts list, the message passes, the prompt pass and render.
const { test } = require('node:test');
const assert = require('node:assert');
const s = require('..');

const SCRIPTS = [
  { scriptName: 'plan', findRegex: '/<plan>[\\s\\S]*?<\\/plan>\\s*/g', placement: [2], promptOnly: true },
  { scriptName: 'ooc', findRegex: '/\\s*<ooc>.*?<\\/ooc>/g', placement: [1, 2] },
  { scriptName: 'bold', findRegex: '/\\*\\*(.+?)\\*\\*/g', replaceString: '<b>$1</b>', placement: [2], markdownOnly: true },
  { scriptName: 'trim', findRegex: '/^(.*)$/', replaceString: '[$1]', trimStrings: ['{{char}}: '], placement: [2], runOnEdit: true, disabled: false },
];
const PRESET = JSON.stringify({
  prompts: [
    { identifier: 'main', content: 'You are {{char}}.' },
    { identifier: 'chatHistory', marker: true },
  ],
  extensions: { regex_scripts: SCRIPTS },
});
const compiled = s.Preset.fromJson(PRESET).compile();
const ALLOWED = { char: 'Tomori', allow_preset_regex: true };

const kinds = (out) => out.diagnostics.map((d) => [d.kind, d.script]);

test('regexScripts lists the scripts as imported, on the preset and the compiled preset', () => {
  const preset = s.Preset.fromJson(PRESET);
  const list = preset.regexScripts;
  assert.deepStrictEqual(list.map((x) => [x.position, x.name]), [[0, 'plan'], [1, 'ooc'], [2, 'bold'], [3, 'trim']]);
  assert.deepStrictEqual(list[0], {
    position: 0,
    source: 'preset',
    id: '',
    name: 'plan',
    find_regex: '/<plan>[\\s\\S]*?<\\/plan>\\s*/g',
    replace_string: '',
    trim_strings: [],
    placement: [2],
    disabled: false,
    markdown_only: false,
    prompt_only: true,
    run_on_edit: false,
    substitute: 'none',
    min_depth: null,
    max_depth: null,
  });
  assert.deepStrictEqual(preset.compile().regexScripts, list);
  assert.deepStrictEqual(s.Preset.fromJson('{"prompts": [{"identifier": "main", "content": "x"}]}').regexScripts, []);
});

test('without allow_preset_regex nothing runs and RegexNotAllowed says so', () => {
  for (const ctx of [undefined, {}, { allow_preset_regex: false }]) {
    const out = compiled.storeMessage('Hi <ooc>brb</ooc> there', 'user', ctx);
    assert.strictEqual(out.text, 'Hi <ooc>brb</ooc> there');
    assert.deepStrictEqual(kinds(out), [['RegexNotAllowed', null]]);
    assert.strictEqual(out.diagnostics[0].severity, 'info');
  }
});

test('storeMessage runs the store scripts when allowed', () => {
  assert.deepStrictEqual(compiled.storeMessage('Hi <ooc>brb</ooc> there', 'user', ALLOWED), {
    diagnostics: [],
    text: 'Hi there',
  });
  // A reply: `ooc`, then `trim` (a store script too); `plan` is promptOnly. `assistant` is the model.
  const reply = '<plan>wave</plan> Hello <ooc>x</ooc>';
  assert.strictEqual(compiled.storeMessage(reply, 'assistant', ALLOWED).text, '[<plan>wave</plan> Hello]');
  assert.strictEqual(compiled.storeMessage(reply, 'model', JSON.stringify(ALLOWED)).text, '[<plan>wave</plan> Hello]');
});

test('editMessage runs runOnEdit scripts, with the speaker as {{char}} in trim strings', () => {
  assert.strictEqual(compiled.editMessage('Nova: hi', 'model', 'Nova', ALLOWED).text, '[hi]');
  assert.strictEqual(compiled.editMessage('Tomori: hi', 'model', null, ALLOWED).text, '[hi]');
  // Store scripts without runOnEdit do not run on an edit.
  assert.strictEqual(compiled.editMessage('a <ooc>b</ooc>', 'user', undefined, ALLOWED).text, 'a <ooc>b</ooc>');
});

test('displayText turns the display pass\'s HTML back into Markdown', () => {
  // `bold` writes <b>: the text shows **bold** again, and the reply's line breaks stay.
  const out = compiled.displayText('so **bold**\n<style>.x{}</style><span style="color:red">red</span>', 'model', 0, null, ALLOWED);
  assert.strictEqual(out.text, 'so **bold**\nred');
  assert.deepStrictEqual(out.diagnostics, compiled.displayMessage('so **bold**', 'model', 0, null, ALLOWED).diagnostics);
});

test('displayMessage runs markdownOnly scripts', () => {
  assert.strictEqual(compiled.displayMessage('so **bold**', 'model', 0, null, ALLOWED).text, 'so <b>bold</b>');
  assert.strictEqual(compiled.displayMessage('so **bold**', 'user', null, null, ALLOWED).text, 'so **bold**');
});

test('promptPass gives each item after the prompt scripts', () => {
  const out = compiled.promptPass({
    ...ALLOWED,
    items: [
      { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' },
      { tag: 'DIALOGUE_HISTORY', role: 'model', name: 'Tomori', text: '<plan>wave</plan>\nHello!' },
    ],
  });
  assert.deepStrictEqual(out, { diagnostics: [], items: ['hi', 'Hello!'] });
  assert.deepStrictEqual(kinds(compiled.promptPass({ items: [] })), [['RegexNotAllowed', null]]);
});

test('render with allow_preset_regex drops the plan and prefixes the name', () => {
  const items = [
    { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' },
    { tag: 'DIALOGUE_HISTORY', role: 'model', name: 'Tomori', text: '<plan>wave</plan>\nHello!' },
  ];
  const texts = (out) => out.messages.map((m) => [m.role, m.parts.join('')]);
  assert.deepStrictEqual(texts(compiled.render({ ...ALLOWED, items })), [
    ['system', 'You are Tomori.'],
    ['user', 'hi'],
    ['model', 'Tomori: Hello!'],
  ]);
  const off = compiled.render({ char: 'Tomori', items });
  assert.deepStrictEqual(texts(off)[2], ['model', 'Tomori: <plan>wave</plan>\nHello!']);
  assert.ok(off.diagnostics.some((d) => d.kind === 'RegexNotAllowed' && d.script === null));
});

test('the results are the JSON the library prints', () => {
  const raw = compiled._inner.storeMessageJson('a <ooc>b</ooc>', 'user', '{"allow_preset_regex": true}');
  assert.strictEqual(raw, '{"diagnostics":[],"text":"a"}');
  assert.strictEqual(compiled._inner.promptPassJson('{}').startsWith('{"diagnostics":[{'), true);
  assert.match(compiled._inner.promptPassJson('{}'), /"items":\[\]\}$/);
});

test('bad roles, contexts and arguments throw', () => {
  assert.throws(() => compiled.storeMessage('x', 'narrator', ALLOWED), (e) => {
    assert.ok(e instanceof s.ContextError);
    assert.strictEqual(e.kind, 'Role');
    assert.match(e.message, /role: expected .*"narrator"/);
    return true;
  });
  assert.throws(() => compiled.storeMessage('x', 'user', { allow_preset_regex: 'yes' }), (e) => {
    assert.ok(e instanceof s.ContextError);
    assert.match(e.message, /^context: /);
    return true;
  });
  assert.throws(() => compiled.promptPass([]), s.ContextError);
  assert.throws(() => compiled.storeMessage(5, 'user'), TypeError);
  assert.throws(() => compiled.storeMessage('x', null), TypeError);
  assert.throws(() => compiled.editMessage('x', 'user', 5), TypeError);
  assert.throws(() => compiled.displayMessage('x', 'user', -1), RangeError);
  assert.throws(() => compiled.displayMessage('x', 'user', 1.5), RangeError);
});
