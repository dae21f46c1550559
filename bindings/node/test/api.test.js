'use strict';
// The API's shape, errors and concurrency.
const { test } = require('node:test');
const assert = require('node:assert');
const s = require('..');

const PRESET = JSON.stringify({
  prompts: [
    { identifier: 'main', content: 'You are {{char}}.{{setvar::n::{{roll:1d1}}}}' },
    { identifier: 'chatHistory', marker: true },
    { identifier: 'jb', content: '{{incvar::turn}}', injection_position: 1, injection_depth: 0 },
  ],
});

test('render returns plain objects in the SPEC §9 shape', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const out = compiled.render({
    char: 'Tomori',
    variables: { turn: '4' },
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }],
  });
  assert.deepStrictEqual(out.messages, [
    { role: 'system', parts: ['You are Tomori.'], source: { node: 'main' } },
    { role: 'user', parts: ['hi', '\n[System: 5]'], source: { tag: 'DIALOGUE_HISTORY' } },
  ]);
  assert.deepStrictEqual(out.variables, { n: '1', turn: '5' });
  assert.deepStrictEqual(out.globals, {});
  assert.deepStrictEqual(out.diagnostics, []);
});

test('a context may be JSON text, or nothing', () => {
  assert.strictEqual(s.expand('{{user}}').text, 'User');
  assert.strictEqual(s.expand('{{user}}', '{"user": "Ann"}').text, 'Ann');
  assert.strictEqual(s.Template.compile(Buffer.from('{{char}}!')).render({ char: 'T' }).text, 'T!');
});

test('audit reports findings with line and column', () => {
  const p = s.Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'main', content: 'a\n{{foo}}' }] }));
  const audit = p.audit();
  assert.strictEqual(audit.nodes, 1);
  assert.strictEqual(audit.enabled, 1);
  const d = audit.diagnostics.find((x) => x.kind === 'UnknownMacro');
  assert.deepStrictEqual([d.node, d.line, d.column], ['main', 2, 1]);
});

test('errors are typed, with kind and message', () => {
  const cases = [
    [() => s.Preset.fromJson('{"prompts": [}'), s.PresetError, 'Json'],
    [() => s.Preset.fromJson('[1]'), s.PresetError, 'NotAPreset'],
    [() => s.Preset.fromJson(Buffer.from([0x7b, 0xff, 0x7d])), s.PresetError, 'Utf8'],
    [() => s.Preset.fromJson('{"prompts": [{"identifier": 5}]}'), s.PresetError, 'Field'],
    [() => s.expand('x', { seed: 'seven' }), s.ContextError, 'Json'],
    [() => s.expand('x', { nope: 1 }), s.ContextError, 'Json'],
    [() => s.expand('x', [1]), s.ContextError, 'NotAnObject'],
    [() => s.expand('x', '[1]'), s.ContextError, 'NotAnObject'],
    [() => s.Template.compile(Buffer.from([0xc3])), s.TemplateError, 'Utf8'],
  ];
  for (const [f, Class, kind] of cases) {
    assert.throws(f, (e) => {
      assert.ok(e instanceof Class, `${e.name}: ${e.message}`);
      assert.ok(e instanceof s.StpresetError);
      assert.ok(e instanceof Error);
      assert.strictEqual(e.kind, kind, e.message);
      assert.ok(e.message.length > 0 && !e.message.includes('\n'));
      return true;
    });
  }
  // Wrong argument types fail as JS errors, never crash the process.
  assert.throws(() => s.Preset.fromJson(42));
  assert.throws(() => s.Template.compile({}));
});

test('one compiled preset serves many async tasks', async () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const tasks = Array.from({ length: 200 }, (_, i) =>
    Promise.resolve().then(() => compiled.render({ char: `C${i}`, variables: { turn: String(i) } })),
  );
  const outs = await Promise.all(tasks);
  outs.forEach((out, i) => {
    assert.strictEqual(out.messages[0].parts[0], `You are C${i}.`);
    assert.strictEqual(out.variables.turn, String(i + 1));
  });
});

test('the objects are exactly the JSON documents the CLI prints', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const ctx = JSON.stringify({ char: 'T', items: [{ tag: 'CONTEXT_CURRENT', role: 'system', text: 'x', depth: 0 }] });
  assert.deepStrictEqual(compiled.render(ctx), JSON.parse(compiled._inner.renderJson(ctx)));
});

test('request shapes the provider request the context asks for', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const out = compiled.request({
    char: 'T',
    max_context_tokens: 1000,
    tokenizer: 'words',
    provider_options: { shape: 'anthropic', assistant_prefill: 'Sure ' },
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }],
  });
  assert.deepStrictEqual(out.request.system, [{ type: 'text', text: 'You are T.' }]);
  assert.deepStrictEqual(out.request.messages.at(-1), { role: 'assistant', content: [{ type: 'text', text: 'Sure' }] });
  assert.strictEqual(typeof out.prompt_tokens, 'number');
  assert.strictEqual(out.wi_state, undefined, 'no lore, no state');
  assert.throws(() => compiled.request({ provider_options: { cache_ttl: '300' } }), (e) => e instanceof s.ContextError && /cache_ttl/.test(e.message));
  // With lore, the state the next turn needs comes with the body: one render a turn.
  const lored = compiled.request({ position: 1, items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'rain' }],
    lorebooks: [{ name: 'w', entries: { 0: { key: ['rain'], content: 'Wet.', sticky: 2 } } }] });
  assert.strictEqual(lored.wi_state.effects[0].entry, 'w.0');
});

test('requestBody is the request JSON as bytes', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const ctx = { char: 'T', provider_options: { shape: 'google' }, items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'héllo' }] };
  const body = compiled.requestBody(ctx);
  assert.ok(Buffer.isBuffer(body));
  assert.deepStrictEqual(JSON.parse(body.toString('utf8')), compiled.request(ctx).request);
});

test('settings are readable and reach the request', () => {
  const preset = s.Preset.fromJson(JSON.stringify({
    temperature: 1.5,
    openai_max_tokens: ' 400 ',
    top_k: 'x',
    prompts: [{ identifier: 'main', content: 'Hi' }],
  }));
  assert.deepStrictEqual(preset.settings, { openai_max_tokens: 400, temperature: 1.5 });
  const compiled = preset.compile();
  assert.deepStrictEqual(compiled.settings, preset.settings);
  const out = compiled.request({ model: 'claude-haiku-4-5', provider_options: { shape: 'anthropic' } });
  assert.deepStrictEqual([out.request.model, out.request.max_tokens, out.request.temperature], ['claude-haiku-4-5', 400, 1]);
  assert.ok(out.diagnostics.some((d) => d.kind === 'PresetSettingIgnored'));
  assert.strictEqual(out.effective.use_system_prompt, true);
  const body = JSON.parse(compiled.requestBody({ preset_settings: false }));
  assert.strictEqual(body.temperature, undefined);
});

test('preloadTokenizer loads a vocabulary up front; an unknown name throws', () => {
  s.preloadTokenizer('o200k');
  s.preloadTokenizer();
  s.preloadTokenizer('words');
  assert.throws(() => s.preloadTokenizer('gpt2'), /unknown tokenizer "gpt2"/);
  assert.throws(() => s.preloadTokenizer(7), TypeError);
  // A budgeted render after it counts as before.
  const compiled = s.Preset.fromJson(PRESET).compile();
  const out = compiled.render({
    max_context_tokens: 1000,
    tokenizer: 'o200k',
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'Hello world' }],
  });
  // What `stpreset render --format json` counts for the same preset and context.
  assert.strictEqual(out.prompt_tokens, 25);
});

test("an object context's errors name the field without a position", () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  assert.throws(
    () => compiled.render({ items: [{ role: 'user', txt: 'x' }] }),
    (e) => e instanceof s.ContextError && e.message.startsWith('context: `items[0].txt`: unknown field'),
  );
  assert.throws(() => compiled.render('{"user": 5}'), (e) => /line 1 column/.test(e.message));
});

test('layout sillytavern gives the body SillyTavern sends (SPEC §17)', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const ctx = {
    char: 'T',
    layout: 'sillytavern',
    provider_options: { shape: 'openai' },
    items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi {{char}}' }],
  };
  // No 100001 prompt order: ST's default order, which has no `jb`.
  assert.deepStrictEqual(compiled.request(ctx).request.messages, [
    { role: 'system', content: 'You are T.' },
    { role: 'system', content: '[Start a new Chat]' },
    { role: 'user', content: 'hi T' },
  ]);
  assert.notDeepStrictEqual(compiled.request({ ...ctx, layout: 'seed' }).request.messages, compiled.request(ctx).request.messages);
  assert.throws(() => compiled.request({ layout: 'tavern' }), (e) => e instanceof s.ContextError && /layout/.test(e.message));
});

test('a group of three in append mode: every member\'s card, one turn (SPEC §18.3)', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const card = (name, description) => ({ spec: 'chara_card_v2', spec_version: '2.0', data: { name, description } });
  const ctx = {
    user: 'Alice', char: 'Sera', description: 'Sera, who tends the shrine.',
    layout: 'sillytavern', provider_options: { shape: 'openai' },
    group: ['Sera', 'Mira', 'Kai'], group_muted: ['Kai'], group_generation_mode: 'append',
    group_join_prefix: '<FIELDNAME> of {{char}}: ',
    group_cards: { Mira: card('Mira', '{{char}} the fox.'), Kai: card('Kai', 'Kai the muted.') },
    items: [
      { tag: 'DIALOGUE_HISTORY', role: 'model', text: 'Hello.', name: 'Mira' },
      { tag: 'DIALOGUE_HISTORY', role: 'user', text: 'Hi all.', name: 'Alice' },
    ],
  };
  const contents = (c) => compiled.request(c).request.messages.map((m) => m.content);
  const turn = contents(ctx);
  assert.ok(turn.includes('Description of Sera: Sera, who tends the shrine.\nDescription of Mira: Mira the fox.'), JSON.stringify(turn));
  assert.ok(turn.includes('[Write the next reply only as Sera.]'));
  assert.ok(contents({ ...ctx, group_generation_mode: 'append_disabled' }).some((t) => t.includes('Kai the muted.')));
  assert.ok(!contents({ ...ctx, group_generation_mode: 'swap' }).some((t) => t.includes('Mira the fox.')));
  assert.throws(() => compiled.request({ ...ctx, group_generation_mode: 'merge' }), (e) => e instanceof s.ContextError && /group_generation_mode/.test(e.message));
});

test('readStChat turns a SillyTavern chat file into context fields', () => {
  const file = [
    JSON.stringify({ user_name: 'Alice', character_name: 'Sera', chat_metadata: { variables: { n: 2 } } }),
    JSON.stringify({ name: 'Sera', is_user: false, mes: 'Hello.', send_date: '2025-06-15T13:50:00Z' }),
    JSON.stringify({ name: 'Alice', is_user: true, is_system: true, mes: 'hidden' }),
    JSON.stringify({ name: 'Alice', is_user: true, mes: 'Hi {{char}}.' }),
  ].join('\n');
  const fields = s.readStChat(file);
  assert.deepStrictEqual(fields.items.map((i) => [i.role, i.name, i.text]), [['model', 'Sera', 'Hello.'], ['user', 'Alice', 'Hi {{char}}.']]);
  assert.deepStrictEqual([fields.user, fields.char, fields.variables, fields.position], ['Alice', 'Sera', { n: '2' }, 3]);
  const compiled = s.Preset.fromJson(PRESET).compile();
  const out = compiled.request({ ...fields, layout: 'sillytavern', provider_options: { shape: 'openai' } });
  assert.deepStrictEqual(out.request.messages.slice(-2), [{ role: 'assistant', content: 'Hello.' }, { role: 'user', content: 'Hi Sera.' }]);
  assert.throws(() => s.readStChat('{}\nnot json'), (e) => e instanceof s.ContextError && /chat line 2/.test(e.message));
});

test('the public calls are the vocabulary file’s', () => {
  // Every public name of the package is in bindings/vocabulary.json, and every Node name listed
  // there exists (the Python suite checks its side of the same file).
  const pkg = require('..');
  const table = JSON.parse(require('node:fs').readFileSync(require('node:path').join(__dirname, '..', '..', 'vocabulary.json'), 'utf8'));
  const listed = new Set(table.calls.filter((c) => c.node !== null).map((c) => c.node));
  const compiled = pkg.Preset.fromJson(PRESET).compile();
  // A render or request of a chat returns a class the package does not export.
  const classes = {
    ...pkg,
    ChatRender: compiled.render(new pkg.Chat()).constructor,
    ChatRequest: compiled.request(new pkg.Chat()).constructor,
  };
  const publicNames = new Set();
  for (const [name, value] of Object.entries(classes)) {
    publicNames.add(name);
    if (typeof value !== 'function' || !/^class\b/.test(Function.prototype.toString.call(value))) continue;
    const statics = Object.getOwnPropertyNames(value).filter((k) => !['length', 'name', 'prototype'].includes(k));
    // Members of the class and of the classes it extends within the package.
    const members = [];
    const ours = (proto) => proto && /^class\b/.test(Function.prototype.toString.call(proto.constructor));
    for (let proto = value.prototype; ours(proto); proto = Object.getPrototypeOf(proto)) {
      members.push(...Object.getOwnPropertyNames(proto).filter((k) => k !== 'constructor'));
    }
    for (const k of [...statics, ...members]) if (!k.startsWith('_')) publicNames.add(`${name}.${k}`);
  }
  assert.deepStrictEqual([...publicNames].filter((n) => !listed.has(n)), [], 'public but not in bindings/vocabulary.json');
  assert.deepStrictEqual([...listed].filter((n) => !publicNames.has(n)), [], 'listed in bindings/vocabulary.json but not public');
});

test('firstMessage starts a chat as SillyTavern opens one', () => {
  const compiled = s.Preset.fromJson(PRESET).compile();
  const first = compiled.firstMessage({ char: 'Sera', first_mes: '', alternate_greetings: ['Hello, {{user}}.', 'Hm?'] });
  assert.deepStrictEqual(first.item, { name: 'Sera', role: 'model', tag: 'DIALOGUE_HISTORY', text: 'Hello, {{user}}.' });
  assert.deepStrictEqual(first.swipes, ['Hello, {{user}}.', 'Hm?']);
  assert.strictEqual(compiled.firstMessage({ char: 'Sera' }), null);
  const chat = new s.Chat({ char: 'Sera', first_mes: 'Hi.' });
  chat.push(compiled.firstMessage(chat).item);
  assert.strictEqual(chat.length, 1);
});

test('outline() gives the authors\' sections, tooltips and exclusive groups', () => {
  const p = s.Preset.fromJson(JSON.stringify({
    prompts: [
      { identifier: 'h', name: '=== Style ===', content: '' },
      { identifier: 'a', name: 'Terse', content: '{{// @tooltip Short.}}{{// @badge LEN}}{{// @mutual-exclusive-group len}}Be terse.' },
      { identifier: 'b', name: 'Lush', content: '{{// @mutual-exclusive-group len}}Be lush.' },
    ],
  }));
  const o = p.outline();
  assert.deepStrictEqual(o.groups, [{ name: 'len', members: ['a', 'b'] }]);
  assert.strictEqual(o.sections[0].title, 'Style');
  assert.deepStrictEqual([o.sections[0].enabled, o.sections[0].total], [2, 2]);
  assert.deepStrictEqual(o.nodes[1].section, ['Style']);
  assert.strictEqual(o.nodes[1].tooltip, 'Short.');
  assert.deepStrictEqual(o.nodes[1].badges, ['LEN']);
  assert.strictEqual(o.nodes[0].header, 'main');
});
