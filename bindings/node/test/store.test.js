'use strict';
// The store in the package: same semantics and errors as the Rust store.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const s = require('..');

const PRESET = JSON.stringify({ prompts: [
  { identifier: 'main', content: 'Hi {{user}}' },
  { identifier: 'nsfw', content: 'Spicy', enabled: false },
  { identifier: 'chatHistory', marker: true },
] });

test('import, list, activate, toggle, render, delete: per server', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-store-'));
  const store = s.PresetStore.open(path.join(dir, 'presets.db'));
  const guild = 1234567890123456789n;  // past 2^53: kept exact
  const id = store.importPreset(guild, 'mine', PRESET);
  assert.match(id, /^[0-9]+$/);
  assert.deepStrictEqual(store.list(guild).map((p) => [p.name, p.active, p.nodes]), [['mine', true, 3]]);
  assert.deepStrictEqual(store.list('1234567890123456788'), [], 'another server sees nothing');
  const chat = new s.Chat({ user: 'Alice', items: [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'hi' }] });
  assert.deepStrictEqual(store.render(guild, chat).messages.map((m) => m.parts.join('')), ['Hi Alice', 'hi']);
  const switches = () => store.nodes(guild, id).map((n) => [n.identifier, n.enabled]);
  assert.deepStrictEqual(switches(), [['main', true], ['nsfw', false], ['chatHistory', true]]);
  store.setEnabled(guild, id, { nsfw: true });
  assert.deepStrictEqual(switches(), [['main', true], ['nsfw', true], ['chatHistory', true]]);
  assert.throws(() => store.nodes('1', id), (e) => e instanceof s.StoreError && e.kind === 'NotFound', "another server's preset");
  assert.deepStrictEqual(store.render(guild, {}).messages.map((m) => m.parts.join('')), ['Hi User', 'Spicy']);
  assert.throws(() => store.setEnabled(guild, id, { nope: true }), (e) => e instanceof s.StoreError && e.kind === 'UnknownNode');
  assert.throws(() => store.activate('1', id), (e) => e instanceof s.StoreError && e.kind === 'NotFound', 'another server cannot activate it');
  assert.throws(() => store.importPreset(guild, 'bad', '[]'), (e) => e instanceof s.PresetError);
  assert.throws(() => store.list(2 ** 60), TypeError, 'an inexact number is refused');
  store.allowRegex(guild, id, true);
  assert.strictEqual(store.list(guild)[0].regex_allowed, true);
  store.deactivate(guild);
  assert.strictEqual(store.render(guild, {}), null);
  store.delete(guild, id);
  assert.deepStrictEqual(store.list(guild), []);
  assert.throws(() => s.PresetStore.open(path.join(dir, 'no', 'such', 'dir', 'x.db')), (e) => e instanceof s.StoreError && e.kind === 'Open');
});

test('review: ids are strings everywhere, never reused; names with a half emoji are refused', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-store-'));
  const store = s.PresetStore.open(path.join(dir, 'presets.db'));
  store.importPreset(1n, 'base', PRESET);
  const safe = store.importPreset(1n, 'safe', PRESET);
  assert.strictEqual(store.list(1n).find((p) => p.id === safe).name, 'safe');
  store.delete(1n, safe);
  const next = store.importPreset(1n, 'evil', PRESET);
  assert.notStrictEqual(next, safe);
  assert.throws(() => store.activate(1n, safe), (e) => e instanceof s.StoreError && e.kind === 'NotFound');
  assert.throws(() => store.importPreset(1n, 'a\ud800', PRESET), (e) => e instanceof s.StoreError && e.kind === 'InvalidName');
  assert.throws(() => store.importPreset(1n, 'safe\u200b', PRESET), (e) => e instanceof s.StoreError && e.kind === 'InvalidName');
  assert.throws(() => s.PresetStore.open(''), (e) => e instanceof s.StoreError && e.kind === 'Open');
  // A toggle names a node as the engine read it: a half emoji is U+FFFD there too.
  const id = store.importPreset(1n, 'odd', JSON.stringify({ prompts: [{ identifier: 'n\ud800', content: 'x', enabled: false }] }));
  store.setEnabled(1n, id, { 'n\ud800': true });
  assert.strictEqual(s.Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'n\ud800', content: 'x', enabled: false }] })).compile({ 'n\udc00': true }).render({}).messages.length, 1);
});

test('review: a context or items list with toJSON is refused; getters are read once', () => {
  assert.throws(() => new s.Chat({ toJSON() { return {}; } }), s.ContextError);
  const items = [{ role: 'user', text: 'A' }];
  items.toJSON = () => [];
  assert.throws(() => new s.Chat({ items }), s.ContextError);
  let reads = 0;
  const item = { role: 'user', get text() { reads += 1; return reads === 1 ? 'first' : 'later'; } };
  const chat = new s.Chat({ items: [item] });
  const p = s.Preset.fromJson(JSON.stringify({ prompts: [{ identifier: 'chatHistory', marker: true }] })).compile();
  assert.strictEqual(p.render(chat).messages[0].parts[0], 'first');
  assert.strictEqual(reads, 1);
  assert.throws(() => chat.splice(1n), TypeError);
});

const PG = process.env.STPRESET_TEST_POSTGRES;
test('a PostgreSQL connection string opens the same store, shared between instances',
  { skip: !PG && 'STPRESET_TEST_POSTGRES is not set (scripts/pg-throwaway starts a server)' }, () => {
    const target = `${PG} dbname=postgres`;
    const bot = s.PresetStore.open(target);
    const admin = s.PresetStore.open(target);
    const guild = BigInt(Date.now()) * 1000n + BigInt(process.pid % 1000);
    const texts = () => { const r = bot.render(guild, {}); return r && r.messages.map((m) => m.parts.join('')); };
    const seen = (want) => {
      const deadline = Date.now() + 1000;
      while (JSON.stringify(texts()) !== JSON.stringify(want)) {
        assert.ok(Date.now() < deadline, `not seen within 1 s: ${JSON.stringify(want)}`);
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5);
      }
    };
    const id = admin.importPreset(guild, 'mine', PRESET);
    seen(['Hi User']);
    admin.setEnabled(guild, id, { nsfw: true });
    seen(['Hi User', 'Spicy']);
    assert.throws(() => bot.activate(guild + 1n, id), (e) => e instanceof s.StoreError && e.kind === 'NotFound');
    admin.delete(guild, id);
    seen(null);
    assert.throws(() => s.PresetStore.open('postgresql://nobody@127.0.0.1:1/x?connect_timeout=1'),
      (e) => e instanceof s.StoreError && e.kind === 'Open');
  });

test('toggles keep the author\'s exclusive groups: refused with the nodes in the way, or resolved', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-store-'));
  const store = s.PresetStore.open(path.join(dir, 'presets.db'));
  const id = store.importPreset(7n, 'styles', JSON.stringify({ prompts: [
    { identifier: 'h', name: '=== Style ===', content: '' },
    { identifier: 'terse', name: 'Terse', content: '{{// @mutual-exclusive-group len}}T' },
    { identifier: 'lush', name: 'Lush', content: '{{// @mutual-exclusive-group len}}{{// @exclusive-with-message One length.}}L', enabled: false },
  ] }));
  assert.throws(() => store.setEnabled(7n, id, { lush: true }), (e) => e instanceof s.StoreError && e.kind === 'Refused'
    && e.node === 'lush' && e.issues[0].kind === 'mutual-exclusive-group'
    && e.issues[0].others.join() === 'terse' && e.issues[0].author === 'One length.');
  assert.deepStrictEqual(store.outline(7n, id).sections[0].enabled, 1, 'nothing changed');
  const done = store.setEnabled(7n, id, { lush: true }, { resolve: true });
  assert.deepStrictEqual(done.changes, [{ identifier: 'lush', enabled: true }, { identifier: 'terse', enabled: false }]);
  const outline = store.outline(7n, id);
  assert.deepStrictEqual(outline.nodes.map((n) => [n.identifier, n.enabled]), [['h', true], ['terse', false], ['lush', true]]);
  assert.throws(() => store.setEnabled(7n, id, { lush: true }, { resolve: 'yes' }), TypeError);
  // The switches are checked in the caller's order: the second one asked meets the first.
  store.setEnabled(7n, id, { lush: false });
  assert.throws(() => store.setEnabled(7n, id, { terse: true, lush: true }, { resolve: true }),
    (e) => e.kind === 'Refused' && e.node === 'lush' && e.issues[0].kind === 'unresolvable');
});

const corpus = path.join(__dirname, '..', '..', '..', '..', 'shared', 'corpus', 'presets');
test('corpus directive presets: every exclusive group switched to another member leaves that one on', {
  skip: fs.existsSync(corpus) ? false : `SKIPPED: ${corpus} not found`,
}, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stpreset-store-'));
  const store = s.PresetStore.open(path.join(dir, 'presets.db'));
  let groups = 0;
  for (const file of ['nemo__NemoEngine-11.5.2-General-RP.json', 'nemo__NemoNet-2.0.json', 'nemo__Magpie-v1-Beta-2.1.json']) {
    const id = store.importPreset(5n, file, fs.readFileSync(path.join(corpus, file), 'utf8'));
    for (const g of store.outline(5n, id).groups.filter((x) => x.members.length > 1)) {
      const on = () => new Set(store.outline(5n, id).nodes.filter((n) => n.enabled).map((n) => n.identifier));
      const pick = g.members.find((m) => !on().has(m));
      store.setEnabled(5n, id, { [pick]: true }, { resolve: true });
      const now = on();
      assert.deepStrictEqual(g.members.filter((m) => now.has(m)), [pick], `${file} ${g.name}`);
      groups += 1;
    }
  }
  assert.strictEqual(groups, 58);
});
