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
