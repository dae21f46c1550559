// A bot's turn through the package, as the README recommends it: the preset compiled once, the
// chat kept natively (`Chat`), each turn one `render(chat)`. `setup` prepares what a bot keeps
// between turns; `turn()` renders that same context once and returns `{ messages }`, each
// message `{ role, parts }` with string parts.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Preset, Chat } = require('../index.js');

export function setup(presetBytes, context) {
  const compiled = Preset.fromJson(presetBytes).compile();
  const chat = new Chat(context);
  return function turn() {
    return compiled.render(chat);
  };
}
