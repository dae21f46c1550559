'use strict';
// A `Chat` kept between turns renders exactly what `render(object)` renders for the same
// context, turn after turn, whatever the bot changes in between.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { Preset, Chat, ContextError } = require('..');
const { context } = require('../bench/context.js');

const corpus = path.join(__dirname, '..', '..', '..', '..', 'shared', 'corpus', 'presets');

// The same turn applied to a plain context object and to a chat.
function turns(compiled, ctx, chat, n) {
  for (let t = 0; t < n; t++) {
    const a = compiled.render(ctx);
    const b = compiled.render(chat);
    assert.strictEqual(JSON.stringify(b), JSON.stringify(a), `turn ${t}`);
    // Every message read, as a bot would, beside the plain result.
    assert.deepStrictEqual(b.messages, a.messages);
    const news = [
      { tag: 'DIALOGUE_HISTORY', role: 'user', text: `Alice: turn ${t} 🌧 rain` },
      { tag: 'DIALOGUE_HISTORY', role: 'model', text: `reply ${t}`, name: 'Tomori' },
    ];
    ctx.items.splice(ctx.items.length - 2, 0, ...news);
    chat.splice(chat.length - 2, 0, ...news);
    if (t === 1) {
      // The oldest history message leaves the window.
      const i = ctx.items.findIndex((it) => it.tag === 'DIALOGUE_HISTORY');
      ctx.items.splice(i, 1);
      chat.splice(i, 1);
    }
    ctx.variables = a.variables;
    ctx.globals = a.globals;
    chat.keep(b);
  }
}

test('every corpus preset: a chat renders as the context object, four turns running', {
  skip: fs.existsSync(corpus) ? false : `SKIPPED: ${corpus} not found`,
}, () => {
  for (const file of fs.readdirSync(corpus).sort()) {
    const compiled = Preset.fromJson(fs.readFileSync(path.join(corpus, file))).compile();
    const ctx = context(200);
    const chat = new Chat(ctx);
    turns(compiled, ctx, chat, 4);
  }
});

const PRESET = JSON.stringify({
  prompts: [
    { identifier: 'main', content: 'You are {{char}}. {{setvar::big::{{getvar::seed}}}}{{incvar::turn}}' },
    { identifier: 'chatHistory', marker: true },
    { identifier: 'jb', content: 'Last: {{lastMessage}}', injection_position: 1, injection_depth: 0 },
  ],
});

test('history strings come back as given; produced text as it was rendered', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const hi = 'hi '.repeat(20);
  const chat = new Chat({ char: 'Tomori', items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: hi }] });
  const out = compiled.render(chat);
  assert.strictEqual(out.messages[1].parts[0], hi);
  assert.strictEqual(out.messages[1].parts[1], `\n[System: Last: ${hi}]`);
  assert.strictEqual(out.messages[0].parts[0], 'You are Tomori. 1');
  assert.deepStrictEqual(out.variables, { big: '', turn: '1' });
  assert.ok(Object.isFrozen(out.messages[0].source));
});

test('an unchanged item is the same frozen message every turn, until it changes', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: 'Hi' }, { identifier: 'chatHistory', marker: true }] })).compile();
  const items = [
    { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'one' },
    { tag: 'DIALOGUE_HISTORY', role: 'assistant', text: 'two' },
    { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'three', name: 'Alice' },
  ];
  const chat = new Chat({ items });
  const a = compiled.render(chat).messages;
  const b = compiled.render(chat).messages;
  assert.strictEqual(b[1], a[1]);
  assert.strictEqual(b[2], a[2]);
  assert.deepStrictEqual(b[2], { parts: ['two'], role: 'model', source: { tag: 'DIALOGUE_HISTORY' } });
  assert.ok(Object.isFrozen(b[1]) && Object.isFrozen(b[1].source));
  assert.throws(() => {
    b[1].role = 'system';
  }, TypeError);
  // A named item is not the item as given: built every turn.
  assert.notStrictEqual(b[3], a[3]);
  assert.deepStrictEqual(b[3].parts, ['Alice: three']);
  // Spliced items get new messages; the others keep theirs, under their new indices.
  chat.splice(0, 1, { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'uno' }, { tag: 'DIALOGUE_HISTORY', role: 'system', text: 'dos' });
  const c = compiled.render(chat).messages;
  assert.deepStrictEqual(c.slice(1, 4).map((m) => [m.role, m.parts[0]]), [['user', 'uno'], ['system', 'dos'], ['model', 'two']]);
  assert.strictEqual(c[3], a[2]);
  assert.notStrictEqual(c[1], a[1]);
  // A bot that changes the parts it was handed changes no later render.
  c[3].parts[0] = 'edited';
  c[3].parts.push(' more');
  const d = compiled.render(chat).messages;
  assert.deepStrictEqual(d[3].parts, ['two']);
  d[3].parts[0] = 'two';
  d[3].parts.length = 1;
  assert.deepStrictEqual(compiled.render(chat).messages[3].parts, ['two']);
});

test('a rest that differs from the last render only in one variable or global is sent again', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: '{{setvar::v::{{getvar::w}}}}{{setglobalvar::g::{{getvar::w}}}}x' }] })).compile();
  const chat = new Chat({ variables: { w: 'aaaa' } });
  const seen = [];
  for (const w of ['aaaa', 'aaab', 'aaab', 'ba', 'b', '']) {
    chat.set({ variables: { w } });
    const out = compiled.render(chat);
    seen.push([out.variables.v, out.globals.g]);
  }
  assert.deepStrictEqual(seen, [['aaaa', 'aaaa'], ['aaab', 'aaab'], ['aaab', 'aaab'], ['ba', 'ba'], ['b', 'b'], ['', '']]);
  // A key and a value that change places are not the same maps.
  const swap = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: '{{setvar::{{getvar::k}}::{{getvar::val}}}}x' }] })).compile();
  const c = new Chat({ variables: { k: 'a', val: 'b' } });
  const first = swap.render(c).variables;
  c.set({ variables: { k: 'b', val: 'a' } });
  assert.deepStrictEqual([first, swap.render(c).variables], [{ a: 'b', k: 'a', val: 'b' }, { b: 'a', k: 'b', val: 'a' }]);
});

test('keep carries the variables a bot edited, once it read them', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: '{{setvar::n::{{getvar::n}}x}}{{getvar::n}}' }] })).compile();
  const chat = new Chat({});
  let out = compiled.render(chat);
  chat.keep(out);
  out = compiled.render(chat);
  assert.strictEqual(out.messages[0].parts[0], 'xx');
  out.variables.n = 'EDITED';
  chat.keep(out);
  assert.strictEqual(compiled.render(chat).messages[0].parts[0], 'EDITEDx');
});

test('a chat saved with JSON.stringify and read back renders the next turns as the kept one', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [
    { identifier: 'main', content: '{{setvar::n::{{getvar::n}}x}}{{setglobalvar::g::{{getglobalvar::g}}y}}{{getvar::n}}' },
    { identifier: 'worldInfoBefore', marker: true },
    { identifier: 'chatHistory', marker: true },
  ] })).compile();
  const kept = new Chat({ position: 1, world_info: { budget_percent: 100 },
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'rain 🌧', name: 'Alice', time: '2025-06-15T14:29:00.5+02:00' }],
    lorebooks: [{ name: 'w', entries: { 0: { key: ['rain'], content: 'It rains.', sticky: 3 } } }] });
  const turn = (chat, n, text) => {
    const out = compiled.render(chat);
    const doc = JSON.stringify(out);
    chat.keep(out);
    chat.set({ wi_state: out.wi_state, position: n });
    chat.push({ tag: 'DIALOGUE_HISTORY', role: 'model', text });
    return doc;
  };
  turn(kept, 2, 'It pours.');
  const saved = JSON.stringify(kept);
  assert.strictEqual(JSON.parse(saved).stpreset_chat, 1);
  assert.ok(!saved.includes('_inner'), saved);
  const loaded = new Chat(JSON.parse(saved));
  assert.strictEqual(loaded.length, kept.length);
  for (const [n, text] of [[3, 'Dry now.'], [4, 'Sun.'], [5, 'Night.']]) {
    assert.strictEqual(turn(loaded, n, text), turn(kept, n, text), `turn ${n}`);
  }
  assert.deepStrictEqual(loaded.toJSON(), kept.toJSON());
  assert.throws(() => new Chat({ stpreset_chat: 2 }), (e) => e instanceof ContextError && /stpreset_chat/.test(e.message));
});

test('source names the chat keeps start over past their cap, and after a render that was not taken', () => {
  const preset = (tag, n) => Preset.fromJson(JSON.stringify({ prompts: Array.from({ length: n }, (_, i) => ({ identifier: `${tag}${i}`, content: `${tag} ${i}` })) })).compile();
  const [big, other] = [preset('a', 5000), preset('b', 300)];
  const items = Array.from({ length: 3000 }, (_, i) => ({ tag: 'DIALOGUE_HISTORY', role: 'user', text: `m${i}` }));
  const chat = new Chat({ items });
  for (const p of [other, big, other, big, big, other]) {
    const out = p.render(chat);
    assert.strictEqual(JSON.stringify(out), JSON.stringify(p.render({ items })));
  }
});

test('node sources stay right when presets take turns at the same positions', () => {
  // Each produced message's identifier is checked against the one at its position in the
  // last render (by address): other identifiers there, the same texts from another compile,
  // swapped orders and more positions than the chat remembers must all name the right node.
  const json = (ids) => JSON.stringify({ prompts: ids.map((id, i) => ({ identifier: id, content: `node ${i}` })) });
  const ids = Array.from({ length: 40 }, (_, i) => `n${i}`);
  const presets = [
    json(ids),
    json(ids),
    json([...ids].reverse()),
    json(ids.map((id) => `${id}x`)),
    json(Array.from({ length: 5000 }, (_, i) => `w${i % 4500}`)),
  ].map((bytes) => Preset.fromJson(bytes).compile());
  const items = Array.from({ length: 20 }, (_, i) => ({ tag: 'DIALOGUE_HISTORY', role: 'user', text: `m${i}` }));
  const chat = new Chat({ items });
  for (const k of [0, 0, 1, 0, 2, 1, 3, 4, 0, 4, 4, 2, 3]) {
    const out = presets[k].render(chat);
    assert.strictEqual(JSON.stringify(out), JSON.stringify(presets[k].render({ items })), `preset ${k}`);
  }
});

test("another copy of the package's chat is refused, even through private fields", () => {
  // Two copies of the native module each have their own allocator: a chat grown by one and
  // freed by the other would crash the process.
  const dir = fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'stpreset-copy-'));
  const root = path.join(__dirname, '..');
  for (const f of fs.readdirSync(root)) {
    if (f === 'index.js' || f === 'native.js' || f.endsWith('.node')) fs.copyFileSync(path.join(root, f), path.join(dir, f));
  }
  const other = require(path.join(dir, 'index.js'));
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: 'hi' }] })).compile();
  const chat = new other.Chat({ items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hello' }] });
  assert.throws(() => compiled.render(chat), ContextError);
  assert.throws(() => compiled._inner.renderChat(chat._inner, new Uint32Array(4096)), /another copy/);
  assert.throws(() => compiled._inner.requestJson(chat._inner));
  fs.rmSync(dir, { recursive: true, force: true });
});

test('joined injections keep their own sources (names are numbered by text, not address)', () => {
  const inject = (id, depth) => ({ identifier: id, content: `inject ${id}`, injection_position: 1, injection_depth: depth });
  const compiled = Preset.fromJson(JSON.stringify({
    prompts: [{ identifier: 'main', content: 'Main.' }, { identifier: 'chatHistory', marker: true }, inject('aa', 1), inject('bb', 3), inject('cc', 5)],
  })).compile();
  const items = Array.from({ length: 8 }, (_, i) => ({ tag: 'DIALOGUE_HISTORY', role: i % 2 ? 'model' : 'user', text: `m${i}` }));
  const ctx = { injection: 'separate', items };
  const chat = new Chat(ctx);
  for (let turn = 0; turn < 2; turn++) {
    const sources = compiled.render(chat).messages.map((m) => m.source.injection).filter(Boolean);
    assert.deepStrictEqual(sources, [[{ node: 'cc' }], [{ node: 'bb' }], [{ node: 'aa' }]]);
    assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(ctx)));
  }
});

test('pushing or splicing tens of thousands of items at once keeps the chat whole', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'chatHistory', marker: true }] })).compile();
  const chat = new Chat({});
  const many = (n, p) => Array.from({ length: n }, (_, i) => ({ tag: 'DIALOGUE_HISTORY', role: 'user', text: `${p}${i}` }));
  assert.strictEqual(chat.push(...many(60000, 't')), 60000);
  const removed = chat.splice(10, 50000, ...many(45000, 'u'));
  assert.strictEqual(removed.length, 50000);
  assert.strictEqual(removed[0].text, 't10');
  chat.push({ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'last' });
  const out = compiled.render(chat).messages;
  assert.strictEqual(out.length, 55001);
  assert.deepStrictEqual([out[9].parts, out[10].parts, out[45010].parts, out[55000].parts], [['t9'], ['u0'], ['t50010'], ['last']]);
});

test('keep carries variables and globals, small or large', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  for (const seed of ['s', 'x'.repeat(20000)]) {
    const chat = new Chat({ variables: { seed } });
    let out;
    for (let i = 0; i < 3; i++) {
      out = compiled.render(chat);
      chat.keep(out);
    }
    assert.strictEqual(out.variables.turn, '3');
    assert.strictEqual(out.variables.big, seed);
    assert.deepStrictEqual(JSON.parse(JSON.stringify(out)).variables, out.variables);
  }
});

test('an older render keeps its own details after newer ones', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const chat = new Chat({ variables: { seed: 'y'.repeat(20000) } });
  const first = compiled.render(chat);
  chat.keep(first);
  for (let i = 0; i < 5; i++) chat.keep(compiled.render(chat));
  assert.strictEqual(first.variables.turn, '1');
});

test('a refused change changes nothing', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const chat = new Chat({ items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'a' }] });
  const before = JSON.stringify(compiled.render(chat));
  assert.throws(() => chat.push({ role: 'user', text: 'b' }, { role: 'narrator', text: 'c' }), (e) => e instanceof ContextError && /items\[1\]/.test(e.message));
  assert.throws(() => chat.push('not an item'), ContextError);
  assert.throws(() => chat.set({ seed: -1 }), ContextError);
  assert.throws(() => chat.set({ items: [] }), ContextError);
  assert.throws(() => new Chat([]), ContextError);
  assert.throws(() => new Chat({ items: 'x' }), ContextError);
  assert.strictEqual(chat.length, 1);
  assert.strictEqual(JSON.stringify(compiled.render(chat)), before);
});

test('splice follows Array.prototype.splice; set merges fields', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const item = (text) => ({ tag: 'DIALOGUE_HISTORY', role: 'user', text });
  const chat = new Chat({ char: 'A' });
  const plain = { char: 'A', items: [] };
  const both = (f) => {
    f(plain.items);
    f(chat);
  };
  both((x) => x.push(item('one'), item('two'), item('three')));
  both((x) => x.splice(-1, 1));
  both((x) => x.splice(0, 0, item('zero')));
  both((x) => x.splice(1));
  both((x) => x.splice(5, 2, item('end')));
  chat.set({ char: 'B' });
  plain.char = 'B';
  assert.strictEqual(chat.length, plain.items.length);
  assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(plain)));
});

test('a long chat outgrows the layout buffer and still renders whole', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const items = [];
  for (let i = 0; i < 5000; i++) items.push({ tag: 'DIALOGUE_HISTORY', role: i % 2 ? 'model' : 'user', text: `m${i}` });
  const ctx = { items };
  const chat = new Chat(ctx);
  for (let t = 0; t < 2; t++) {
    assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(ctx)));
  }
});

test('request, requestBody and the regex passes take a chat too', () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const ctx = { char: 'T', items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }] };
  const chat = new Chat(ctx);
  // A chat's request reads as the object's (its fields are getters; JSON gives the document).
  const r = compiled.request(chat);
  assert.deepStrictEqual(JSON.parse(JSON.stringify(r)), compiled.request(ctx));
  for (const k of ['request', 'diagnostics', 'prompt_tokens', 'effective', 'variables', 'globals']) {
    assert.deepStrictEqual(r[k], compiled.request(ctx)[k], k);
  }
  assert.deepStrictEqual(compiled.requestBody(chat), compiled.requestBody(ctx));
  assert.deepStrictEqual(compiled.promptPass(chat), compiled.promptPass(ctx));
  assert.deepStrictEqual(compiled.storeMessage('x', 'model', chat), compiled.storeMessage('x', 'model', ctx));
});

test("keep of an older render, of another chat's render, or of a plain result carries that one", () => {
  const compiled = Preset.fromJson(PRESET).compile();
  const chat = new Chat({ variables: { seed: 's' } });
  const first = compiled.render(chat);
  compiled.render(chat);
  chat.keep(first);
  assert.strictEqual(compiled.render(chat).variables.turn, '2');
  const other = new Chat({ variables: { turn: '41' } });
  chat.keep(compiled.render(other));
  assert.strictEqual(compiled.render(chat).variables.turn, '43');
  chat.keep({ variables: { turn: '9' }, globals: {} });
  assert.strictEqual(compiled.render(chat).variables.turn, '10');
});

test("a chat's macro function answers what the catalog lacks; a throw is a diagnostic", () => {
  const compiled = Preset.fromJson(JSON.stringify({
    prompts: [{
      identifier: 'main',
      content: '[{{summary}}] [{{memory::recent::2}}] [{{memory::recent::2}}] [{{user}}] [{{nobody}}] [{{boom}}] [{{number}}]',
    }],
  })).compile();
  const calls = [];
  const chat = new Chat({ user: 'Alice' });
  chat.setMacroFn((name, args) => {
    calls.push([name, args]);
    if (name === 'boom') throw new Error('the memory service is down');
    if (name === 'number') return 7;
    return { summary: 'So far.', memory: `${args.length} notes` }[name];
  });
  const out = compiled.render(chat);
  assert.strictEqual(out.messages[0].parts.join(''),
    '[So far.] [2 notes] [2 notes] [Alice] [{{nobody}}] [{{boom}}] [{{number}}]');
  // Once per distinct call a render; never for a catalog macro.
  assert.deepStrictEqual(calls.map((c) => JSON.stringify(c)).sort(), [
    ['boom', []], ['memory', ['recent', '2']], ['nobody', []], ['number', []], ['summary', []],
  ].map((c) => JSON.stringify(c)).sort());
  const failed = out.diagnostics.filter((d) => d.kind === 'HostMacroFailed').map((d) => d.message);
  assert.ok(failed.some((m) => m.includes('the memory service is down')), failed.join('\n'));
  assert.ok(failed.some((m) => m.includes('returned number, not a string or null')), failed.join('\n'));
  // The exception did not escape: the next call works.
  chat.setMacroFn(null);
  assert.ok(compiled.render(chat).messages[0].parts.join('').startsWith('[{{summary}}]'));
  assert.throws(() => chat.setMacroFn(3), TypeError);
});

test('a macro function that uses its chat or returns a flood fails cleanly', () => {
  const compiled = Preset.fromJson(JSON.stringify({
    prompts: [{ identifier: 'main', content: '[{{again}}] [{{change}}] [{{flood}}]' }],
  })).compile();
  const chat = new Chat({ user: 'Alice' });
  chat.setMacroFn((name) => {
    if (name === 'again') return compiled.render(chat).messages[0].parts.join('');
    if (name === 'change') { chat.set({ user: 'Bob' }); return 'changed'; }
    return 'x'.repeat(20 << 20);
  });
  const out = compiled.render(chat);
  const text = out.messages[0].parts.join('');
  assert.ok(text.startsWith('[{{again}}] [{{change}}] ['), text.slice(0, 80));
  const failed = out.diagnostics.filter((d) => d.kind === 'HostMacroFailed');
  assert.strictEqual(failed.length, 2, JSON.stringify(out.diagnostics));
  // Rendering the chat again is refused by the chat (ChatBusy); changing it by napi's own
  // borrow check: either way the callback throws and the render goes on.
  assert.ok(failed[0].message.includes('ChatBusy'), failed[0].message);
  assert.ok(failed.every((d) => d.message.includes('threw')), JSON.stringify(failed));
  assert.ok(text.length <= 8 << 20);
  assert.ok(out.diagnostics.some((d) => d.kind === 'LimitReached'), JSON.stringify(out.diagnostics));
  // The chat is usable again after the render.
  chat.set({ user: 'Carol' });
});

// A chat's request is the same document as the context object's, turn after turn, in both
// layouts; its body is what `requestBody` gives; keeping it carries the variables natively,
// and a render after it still gets its own details.
test('a chat request is the context object\'s request, kept as a render', {
  skip: fs.existsSync(corpus) ? false : `SKIPPED: ${corpus} not found`,
}, () => {
  for (const file of fs.readdirSync(corpus).sort()) {
    const compiled = Preset.fromJson(fs.readFileSync(path.join(corpus, file))).compile();
    for (const layout of ['seed', 'sillytavern']) {
      const ctx = { ...context(40), layout };
      const chat = new Chat(ctx);
      for (let t = 0; t < 3; t++) {
        const a = compiled.request(ctx);
        const b = compiled.request(chat);
        assert.strictEqual(JSON.stringify(b), JSON.stringify(a), `${file} ${layout} turn ${t}`);
        assert.ok(Buffer.isBuffer(b.body));
        assert.deepStrictEqual(JSON.parse(b.body.toString('utf8')), a.request);
        assert.strictEqual(b.body.toString('utf8'), compiled.requestBody(ctx).toString('utf8'));
        // The state read alone is the document's; twice the same request, the same document.
        assert.deepStrictEqual(compiled.request(chat).wi_state, a.wi_state);
        assert.strictEqual(JSON.stringify(compiled.request(chat)), JSON.stringify(a));
        // A render between requests: its details are its own, not the request's; in the
        // SillyTavern layout its replies are `assistant` and its example lines named.
        assert.strictEqual(JSON.stringify(compiled.render(chat)), JSON.stringify(compiled.render(ctx)), `${file} ${layout} render ${t}`);
        const again = compiled.request(chat);
        ctx.variables = a.variables;
        ctx.globals = a.globals;
        chat.keep(again);
        const news = { tag: 'DIALOGUE_HISTORY', role: 'user', text: `Alice: turn ${t}` };
        ctx.items.push(news);
        chat.push(news);
      }
    }
  }
});

test('keeping a chat request carries its variables, edited or not', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: '{{setvar::n::{{getvar::n}}x}}{{getvar::n}}' }] })).compile();
  const chat = new Chat({});
  let out = compiled.request(chat);
  chat.keep(out);
  out = compiled.request(chat);
  assert.strictEqual(out.request.messages[0].content, 'xx');
  out.variables.n = 'EDITED';
  chat.keep(out);
  assert.strictEqual(compiled.request(chat).request.messages[0].content, 'EDITEDx');
  // An older request, kept after newer renders, carries its own maps.
  const old = compiled.request(chat);
  compiled.render(chat);
  chat.keep(old);
  assert.strictEqual(compiled.render(chat).messages[0].parts[0], 'EDITEDxx');
});

test('a chat switching layouts renders each as the context object', {
  skip: fs.existsSync(corpus) ? false : `SKIPPED: ${corpus} not found`,
}, () => {
  const file = fs.readdirSync(corpus).sort()[0];
  const compiled = Preset.fromJson(fs.readFileSync(path.join(corpus, file))).compile();
  const ctx = context(20);
  const chat = new Chat(ctx);
  for (const layout of ['seed', 'sillytavern', 'seed', 'sillytavern']) {
    ctx.layout = layout;
    chat.set({ layout });
    const out = compiled.render(chat);
    assert.strictEqual(JSON.stringify(out), JSON.stringify(compiled.render(ctx)), layout);
    const roles = new Set(out.messages.map((m) => m.role));
    assert.strictEqual(roles.has('assistant'), layout === 'sillytavern');
    assert.strictEqual(roles.has('model'), layout === 'seed');
  }
});

test('a chat request\'s World Info state, read alone, is the document\'s', () => {
  const compiled = Preset.fromJson(JSON.stringify({ prompts: [
    { identifier: 'main', content: 'Hi{{setvar::v::{{getvar::v}}1}}' },
    { identifier: 'worldInfoBefore', marker: true },
    { identifier: 'chatHistory', marker: true },
  ] })).compile();
  const ctx = { position: 1, world_info: { budget_percent: 100 },
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'rain' }],
    lorebooks: [{ name: 'w', entries: { 0: { key: ['rain'], content: 'It rains.', sticky: 3 } } }] };
  const chat = new Chat(ctx);
  for (let turn = 2; turn < 5; turn++) {
    const a = compiled.request(ctx);
    const b = compiled.request(chat);
    assert.deepStrictEqual(b.wi_state, a.wi_state);
    assert.ok(b.wi_state.effects.length > 0);
    assert.strictEqual(JSON.stringify(b), JSON.stringify(a));
    ctx.wi_state = a.wi_state;
    ctx.position = turn;
    ctx.variables = a.variables;
    chat.set({ wi_state: b.wi_state, position: turn });
    chat.keep(b);
  }
});
