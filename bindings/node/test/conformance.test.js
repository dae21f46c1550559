'use strict';
// The shared conformance vectors through the Node API: the same files the Rust tests run.
const { test } = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const { Preset, expand } = require('..');

const shared = path.join(__dirname, '..', '..', '..', '..', 'shared', 'conformance');

function vectors(file) {
  const p = path.join(shared, file);
  if (!fs.existsSync(p)) return null;
  return JSON.parse(fs.readFileSync(p, 'utf8'));
}

function warnings(out) {
  return out.diagnostics
    .filter((d) => d.severity === 'warning')
    .map((d) => d.kind)
    .sort();
}

for (const file of ['templates.json', 'st-templates.json']) {
  const cases = vectors(file);
  test(`template vectors: ${file}`, { skip: cases ? false : `SKIPPED: ${shared} not found` }, () => {
    const failures = [];
    for (const c of cases) {
      const out = expand(c.template, c.context);
      if (out.text !== c.expect) {
        failures.push(`${c.name}: text ${JSON.stringify(out.text)} != ${JSON.stringify(c.expect)}`);
      } else if (c.warnings && JSON.stringify(warnings(out)) !== JSON.stringify([...c.warnings].sort())) {
        failures.push(`${c.name}: warnings ${warnings(out)} != ${c.warnings}`);
      }
    }
    assert.deepStrictEqual(failures, [], `${failures.length} of ${cases.length} fail`);
  });
}

const renders = vectors('renders.json');
test('render vectors', { skip: renders ? false : `SKIPPED: ${shared} not found` }, () => {
  const failures = [];
  for (const c of renders) {
    const out = Preset.fromJson(JSON.stringify(c.preset)).compile().render(c.context);
    const got = out.messages.map((m) => [m.role, m.parts.join('')]);
    try {
      assert.deepStrictEqual(got, c.expect_messages);
    } catch {
      failures.push(`${c.name}: ${JSON.stringify(got)}`);
    }
  }
  assert.deepStrictEqual(failures, []);
});

test('own render vectors (injection modes)', () => {
  const file = path.join(__dirname, '..', '..', '..', 'tests', 'renders', 'injection.json');
  for (const c of JSON.parse(fs.readFileSync(file, 'utf8'))) {
    const out = Preset.fromJson(JSON.stringify(c.preset)).compile().render(c.context);
    assert.deepStrictEqual(out.messages.map((m) => [m.role, m.parts.join('')]), c.expect_messages, c.name);
    if (c.expect_sources) {
      assert.deepStrictEqual(out.messages.map((m) => m.source), c.expect_sources, c.name);
    }
  }
});

function same(a, b) {
  if (typeof a === 'number' && typeof b === 'number') return a === b;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    const ka = Object.keys(a).sort();
    const kb = Object.keys(b).sort();
    return same(ka, kb) && ka.every((k) => same(a[k], b[k]));
  }
  return a === b;
}

const settings = vectors('settings.json');
test('a sample of the settings vectors (SPEC §14)', { skip: settings ? false : `SKIPPED: ${shared} not found` }, () => {
  const cases = settings.cases.filter((c) => c.category !== 'prompt');
  const sample = cases.filter((c, i) => i % 3 === 1 || c.category === 'corpus' || c.category === 'error');
  const failures = [];
  for (const c of sample) {
    const { input, expect } = c;
    const preset = { ...input.preset, prompts: [{ identifier: 'main', content: 'You are {{char}}.' }, { identifier: 'chatHistory', marker: true }] };
    const ctx = { ...(input.context || {}), model: input.model };
    ctx.provider_options = { ...((input.context || {}).provider_options || {}), shape: input.shape };
    ctx.items = [{ tag: 'DIALOGUE_HISTORY', role: 'user', text: 'User: hi' }];
    const compiled = Preset.fromJson(JSON.stringify(preset)).compile();
    if (expect.error) {
      try {
        compiled.request(ctx);
        failures.push(`${c.name}: context accepted`);
      } catch (e) {
        if (!e.message.includes(expect.error)) failures.push(`${c.name}: ${e.message}`);
      }
      continue;
    }
    const out = compiled.request(ctx);
    const body = { ...out.request };
    for (const k of ['messages', 'system', 'contents', 'systemInstruction']) delete body[k];
    if (!same(out.effective, expect.effective)) failures.push(`${c.name}: effective ${JSON.stringify(out.effective)}`);
    else if (expect.request && !same(body, expect.request)) failures.push(`${c.name}: request ${JSON.stringify(body)}`);
  }
  assert.deepStrictEqual(failures, [], `${failures.length} of ${sample.length} fail`);
});

// SPEC §13: a sample of the regex vectors through the message passes and the prompt pass.
// Cases whose scripts draw `random` need the vectors' "first item" RNG, which a context cannot
// ask for; world-info and single-text prompt cases have no message call.
const regex = vectors('regex.json');
test('a sample of the regex vectors (SPEC §13)', { skip: regex ? false : `SKIPPED: ${shared} not found` }, () => {
  const scriptsOf = (c) => {
    if (Array.isArray(c.scripts)) return c.scripts;
    const set = regex.script_sets[c.scripts.set];
    return c.scripts.index === undefined ? set : [set[c.scripts.index]];
  };
  const eligible = regex.cases.filter(
    (c) =>
      !JSON.stringify(scriptsOf(c)).includes('random') &&
      (c.kind === 'history' || (c.input.pass !== 'prompt' && c.input.placement !== 5)),
  );
  const step = Math.ceil(eligible.length / 20);
  const sample = eligible.filter((c, i) => i % step === 0 || c.kind === 'history' || c.input.pass === 'edit');
  const failures = [];
  for (const c of sample) {
    const preset = { prompts: [{ identifier: 'main', content: 'x' }], extensions: { regex_scripts: scriptsOf(c) } };
    const compiled = Preset.fromJson(JSON.stringify(preset)).compile();
    const { input, expected } = c;
    const m = input.macros;
    const ctx = { user: m.user, char: m.char, variables: m.variables, globals: m.globals, allow_preset_regex: input.allowed };
    let got;
    let want;
    let out;
    if (c.kind === 'history') {
      out = compiled.promptPass({ ...ctx, items: input.items });
      [got, want] = [out.items, expected.items];
    } else {
      const role = input.placement === 1 ? 'user' : 'model';
      if (input.pass === 'store') out = compiled.storeMessage(input.text, role, ctx);
      else if (input.pass === 'edit') out = compiled.editMessage(input.text, role, input.speaker, ctx);
      else out = compiled.displayMessage(input.text, role, input.depth, input.speaker, ctx);
      [got, want] = [out.text, expected.text];
    }
    const kinds = out.diagnostics.filter((d) => d.kind.startsWith('Regex')).map((d) => [d.kind, d.script]);
    const wantKinds = expected.diagnostics.map((d) => [d.kind, d.script]);
    if (JSON.stringify(got) !== JSON.stringify(want)) {
      failures.push(`${c.id}: ${JSON.stringify(got).slice(0, 200)} != ${JSON.stringify(want).slice(0, 200)}`);
    } else if (JSON.stringify(kinds) !== JSON.stringify(wantKinds)) {
      failures.push(`${c.id}: diagnostics ${JSON.stringify(kinds)} != ${JSON.stringify(wantKinds)}`);
    }
  }
  assert.ok(sample.length >= 20, `only ${sample.length} cases sampled`);
  assert.deepStrictEqual(failures, [], `${failures.length} of ${sample.length} fail`);
});
