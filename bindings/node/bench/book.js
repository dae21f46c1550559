'use strict';
// The card, 400-entry book and 200-message chat of `benches/turn.rs` (issue 54's bot turn),
// built in JavaScript as a bot would build them (`bindings/python/bench/book.py` is the same).
// Generated: keys of names and places, a tenth of them regular expressions, 400–1,200-byte
// entries with {{char}}/{{user}}, a few constants, recursion on.

const ENTRIES = 400;
const HISTORY = 200;

function entry(i) {
  const keys = i % 10 === 3 ? [`/\\b(person|hero)${i}s?\\b/i`] : [`place${i}`, `Person${i}`];
  const body = `{{char}} knows place${i} well: the road there runs past the old mill and the river ford, where {{user}} once lost a bet. Person${i} keeps the records of the town. `.repeat(2 + (i % 5));
  const e = {
    uid: i, key: keys, content: body, comment: `Entry ${i}`,
    order: 100 + (i % 50), position: (i % 5) % 2, depth: 4,
    selective: i % 9 === 0, keysecondary: i % 9 === 0 ? ['river'] : [],
    constant: i % 40 === 0,
  };
  if (i % 5 === 2) {
    e.position = 4;
    e.role = 0;
  }
  return e;
}

function book() {
  const entries = {};
  for (let i = 0; i < ENTRIES; i++) entries[String(i)] = entry(i);
  return { name: 'Generated World', source: 'character', entries };
}

function context(layout) {
  const items = [];
  for (let i = 0; i < HISTORY; i++) {
    const [role, who] = i % 2 === 0 ? ['user', 'Alice'] : ['model', 'Tomori'];
    const mention = i % 20 === 0 ? ` We passed place${i * 2}.` : '';
    items.push({ tag: 'DIALOGUE_HISTORY', role, text: `${who}: message ${i} about the festival and the old shrine.${mention}` });
  }
  return {
    user: 'Alice', char: 'Tomori', layout, model: 'gpt-4o', provider_options: { shape: 'openai' },
    description: 'Tomori is a shrine maiden of the hill shrine. {{user}} is her oldest friend. '.repeat(20),
    personality: 'kind, witty, stubborn', scenario: 'An autumn festival at the shrine.',
    persona: 'Alice is a student who visits on weekends.',
    mes_examples: '<START>\n{{user}}: Hello?\n{{char}}: Welcome, traveller.',
    world_info: { scan_depth: 4, budget_percent: 25 },
    lorebooks: [book()], items,
  };
}

module.exports = { ENTRIES, context };
