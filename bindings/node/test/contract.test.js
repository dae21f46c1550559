'use strict';
// One contract for text and errors (issue 20 §2): lone surrogates, `__proto__`, wrong types,
// deep JSON, errors that name the field.
const { test } = require('node:test');
const assert = require('node:assert');
const { Worker } = require('node:worker_threads');
const s = require('..');

const HALF = '\ud83d';
const PRESET = JSON.stringify({
  prompts: [
    { identifier: 'main', content: 'Hi {{user}}' },
    { identifier: 'chatHistory', marker: true },
  ],
});
const compiled = s.Preset.fromJson(PRESET).compile();

function notes(out) {
  return out.diagnostics.filter((d) => d.kind === 'LoneSurrogate').map((d) => d.message);
}

test('a lone surrogate anywhere becomes U+FFFD with one note; the render goes on', () => {
  const ctx = { user: `A${HALF}`, items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: `x${HALF}y${HALF}` }] };
  for (const input of [ctx, JSON.stringify(ctx), `{"user": "A${HALF}", "items": [{"tag": "DIALOGUE_HISTORY", "role": "user", "text": "x${HALF}y${HALF}"}]}`, new s.Chat(ctx)]) {
    const out = compiled.render(input);
    assert.deepStrictEqual(out.messages.map((m) => m.parts.join('')), ['Hi A\ufffd', 'x\ufffdy\ufffd']);
    assert.strictEqual(notes(out).length, 1);
    assert.match(notes(out)[0], /the context had 3 lone UTF-16 surrogates/);
  }
  const chat = new s.Chat({});
  chat.push({ role: 'user', tag: 'DIALOGUE_HISTORY', text: HALF });
  assert.strictEqual(notes(compiled.render(chat)).length, 1);
  chat.splice(0, 1);
  assert.strictEqual(notes(compiled.render(chat)).length, 0, 'the note leaves with the message');

  const p = s.Preset.fromJson(`{"prompts": [{"identifier": "main", "content": "a${HALF}"}]}`);
  assert.strictEqual(p.compile().render({}).messages[0].parts[0], 'a\ufffd');
  assert.match(notes(p.audit())[0], /the preset had 1 lone/);
  const t = s.expand(`b${HALF}{{user}}`, { user: 'U' });
  assert.strictEqual(t.text, 'b\ufffdU');
  assert.match(notes(t)[0], /the template had 1/);
  const stored = compiled.storeMessage(`c${HALF}`, 'model', {});
  assert.strictEqual(stored.text, 'c\ufffd');
  assert.match(notes(stored)[0], /the message had 1/);
  // A pair is a character, not two halves.
  assert.strictEqual(notes(s.expand('😀')).length, 0);
});

test('variables named __proto__ stay data in every method', () => {
  const p = s.Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: '{{setvar::__proto__::x}}{{setglobalvar::__proto__::y}}' }] })).compile();
  const ctx = JSON.parse('{"variables": {"__proto__": "a"}}');
  for (const out of [p.render(ctx), p.request(ctx), p.render(new s.Chat(ctx))]) {
    assert.deepStrictEqual(Object.keys(out.variables), ['__proto__']);
    assert.strictEqual(Object.getPrototypeOf(out.variables), Object.prototype);
    assert.deepStrictEqual(JSON.stringify(out.variables), '{"__proto__":"x"}');
    assert.deepStrictEqual(JSON.stringify(out.globals), '{"__proto__":"y"}');
  }
});

test('misuse throws the package error with a kind, or TypeError for a wrong type', () => {
  assert.throws(() => s.Preset.fromJson(undefined), TypeError);
  assert.throws(() => s.Preset.fromJson(5), TypeError);
  assert.throws(() => s.Template.compile({}), TypeError);
  for (const bad of [new Map([['user', 'A']]), /re/, [1], 5, true, new (class Ctx {})()]) {
    assert.throws(() => compiled.render(bad), (e) => e instanceof s.ContextError && e.kind === 'NotAnObject', String(bad));
    assert.throws(() => compiled.request(bad), s.ContextError);
  }
  assert.throws(() => new s.Chat(new Map()), s.ContextError);
  assert.throws(() => compiled.storeMessage(5, 'user'), TypeError);
  assert.throws(() => compiled.storeMessage('x', 'narrator'), (e) => e instanceof s.ContextError && e.kind === 'Role');
  assert.throws(() => s.Preset.fromJson('[]'), (e) => e instanceof s.PresetError && typeof e.kind === 'string');
  // A Uint8Array that is not a Buffer is bytes too.
  assert.strictEqual(s.Preset.fromJson(new TextEncoder().encode(PRESET)).compile().render({}).messages.length, 1);
});

test('errors name the field', () => {
  assert.throws(() => compiled.render({ variables: { turns: 3 } }), (e) => e instanceof s.ContextError && /^context: `variables\.turns`: .*integer `3`.*string/.test(e.message));
  assert.throws(() => compiled.render({ items: [{ role: 'user', text: 5 }] }), /`items\[0\]\.text`/);
  assert.throws(() => new s.Chat({}).push({ role: 'user' }, { role: 'user', text: [] }), /`items\[1\]\.text`/);
  assert.throws(() => compiled.render({ provider_options: { temperature: 'hot' } }), /provider_options\.temperature/);
});

test('JSON nested 127 deep reads on a thread with a small stack', async () => {
  const deep = '['.repeat(127) + ']'.repeat(127);
  const code = `
    const s = require(${JSON.stringify(require.resolve('..'))});
    const { parentPort } = require('node:worker_threads');
    const p = s.Preset.fromJson('{"prompts": [{"identifier": "main", "content": "x"}]}').compile();
    let kind = 'none';
    try { p.request('{"provider_options": {"stop": ${deep}}}'); } catch (e) { kind = e.kind || e.name; }
    parentPort.postMessage(kind);`;
  const kind = await new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, resourceLimits: { stackSizeMb: 0.5 } });
    w.on('message', resolve);
    w.on('error', reject);
  });
  assert.notStrictEqual(kind, 'none');
});

test('review findings: notes follow set and keep; the message passes note the context', () => {
  const ctx = { user: `A${HALF}`, items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }] };
  const chat = new s.Chat(ctx);
  const r = compiled.render(chat);
  chat.keep(r);
  ctx.variables = r.variables;
  ctx.globals = r.globals;
  assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(ctx)));
  chat.set({ user: `\udc00x` });
  ctx.user = `\udc00x`;
  assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(ctx)));
  assert.strictEqual(notes(compiled.render(chat)).length, 1);
  assert.match(notes(compiled.storeMessage('a', 'user', { user: `U${HALF}` }))[0], /the context had 1/);
  assert.match(notes(compiled.promptPass({ items: [{ role: 'user', text: `a${HALF}` }] }))[0], /the context had 1/);
  // A raw half after a backslash was never a valid escape: the reader refuses it.
  assert.throws(() => s.expand('[{{user}}]', `{"user": "a\\${HALF}"}`), (e) => e instanceof s.ContextError && e.kind === 'Json');
});

test('review findings: splice, keep and items as Array.prototype and JSON see them', () => {
  const item = (text) => ({ tag: 'DIALOGUE_HISTORY', role: 'user', text });
  const chat = new s.Chat({ items: [item('a'), item('b'), item('c')] });
  const mirror = [item('a'), item('b'), item('c')];
  assert.deepStrictEqual(chat.splice(), mirror.splice());
  assert.deepStrictEqual(chat.splice(0, undefined), mirror.splice(0, undefined));
  assert.deepStrictEqual(chat.splice(1), mirror.splice(1));
  assert.strictEqual(chat.length, mirror.length);
  assert.throws(() => chat.keep(5), TypeError);
  assert.throws(() => chat.keep({}), TypeError);
  assert.throws(() => chat.push({ role: 'user', text: new String('boxed') }), s.ContextError);
  assert.throws(() => chat.push({ role: 'user', text: 'x', toJSON: () => ({ role: 'user', text: 'y' }) }), s.ContextError);
  assert.strictEqual(chat.length, 1);
});

test('nodes() lists the prompt manager; compile(toggles) switches nodes', () => {
  const p = s.Preset.fromJson(JSON.stringify({ prompts: [
    { identifier: 'main', name: 'Main', content: 'Hi' },
    { identifier: 'nsfw', content: 'Spicy', enabled: false },
    { identifier: 'jb', content: 'JB', injection_position: 1, injection_depth: 2 },
  ] }));
  assert.deepStrictEqual(p.nodes()[2], { enabled: true, identifier: 'jb', injection: { depth: 2, order: 100 }, marker: false, name: 'jb', role: 'system' });
  const on = p.compile({ nsfw: true, jb: false }).render({});
  assert.deepStrictEqual(on.messages.map((m) => m.parts.join('')), ['Hi', 'Spicy']);
  assert.strictEqual(p.compile().render({}).messages.length, 1, 'the preset itself is unchanged');
  assert.throws(() => p.compile({ nope: true }), (e) => e instanceof s.PresetError && e.kind === 'UnknownNode');
  assert.throws(() => p.compile({ nsfw: 'yes' }), TypeError);
});
