// Runs SillyTavern 1.18's own macro engine (public/scripts/macros/, exported from a git
// directory of SillyTavern) in Node on every case of cases.json and writes vectors.json: the
// same format as ../shared/conformance/st-templates.json (name, template, context, expect),
// read by tests/conformance.rs. See README.md.
//
// What is ST's own code here: the whole macro engine and every macro definition, unchanged;
// and, cut out of script.js / utils.js / variables.js / extensions.js by name (`extract`), the
// functions the definitions call (card fields, variables, token limits, timestamps,
// findExtension). What is not: the app's state those read (the chat, the card, settings),
// which `stState` builds from each case's stpreset context the way the app holds it.
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { register } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

// moment reads the local zone; the cases' clocks are UTC.
if (process.env.TZ !== 'UTC') {
    const r = spawnSync(process.execPath, process.argv.slice(1), { stdio: 'inherit', env: { ...process.env, TZ: 'UTC' } });
    process.exit(r.status ?? 1);
}

const here = path.dirname(fileURLToPath(import.meta.url));
const stGit = process.env.ST_GIT;
if (!stGit) {
    console.error('ST_GIT: a git directory holding SillyTavern (e.g. the Vibecoder9000/SillyTavern mirror)');
    process.exit(2);
}
const stCommit = process.env.ST_COMMIT || 'e1d95b16';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'st-macros-'));
const pub = path.join(work, 'public');

const files = ['public/scripts/macros', 'public/script.js', 'public/scripts/utils.js',
    'public/scripts/variables.js', 'public/scripts/extensions.js', 'public/scripts/constants.js',
    'public/scripts/extensions/regex/engine.js'];
const tar = execFileSync('git', ['--git-dir', stGit, 'archive', stCommit, ...files], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] });
execFileSync('tar', ['-x', '-C', work], { input: tar });
fs.symlinkSync(path.join(here, 'node_modules'), path.join(work, 'node_modules'));
const original = name => fs.readFileSync(path.join(pub, name), 'utf8');

/** The source of `function NAME(…) {…}` (with `export` if it has one), cut out of `src`. */
function extract(src, name) {
    const m = new RegExp(`(?:export\\s+)?function\\s+${name}\\s*\\(`).exec(src);
    if (!m) throw new Error(`no function ${name}`);
    let i = m.index + m[0].length;
    let depth = 1;
    let bodyStarted = false;
    let prev = '(';
    while (i < src.length) {
        const c = src[i];
        if (c === '\'' || c === '"' || c === '`') {
            let j = i + 1;
            while (src[j] !== c) j += src[j] === '\\' ? 2 : 1;
            i = j + 1;
            prev = c;
            continue;
        }
        if (c === '/' && src[i + 1] === '/') { i = src.indexOf('\n', i); continue; }
        if (c === '/' && src[i + 1] === '*') { i = src.indexOf('*/', i) + 2; continue; }
        if (c === '/' && '(,=:[!&|?{};'.includes(prev)) {
            // A regular expression literal.
            let j = i + 1;
            let inClass = false;
            while (inClass || src[j] !== '/') {
                if (src[j] === '\\') j++;
                else if (src[j] === '[') inClass = true;
                else if (src[j] === ']') inClass = false;
                j++;
            }
            i = j + 1;
            prev = '/';
            continue;
        }
        if (c === '(' || c === '{' || c === '[') depth++;
        if (c === ')' || c === '}' || c === ']') depth--;
        if (!/\s/.test(c)) prev = c;
        i++;
        if (depth === 0) {
            if (bodyStarted) return src.slice(m.index, i);
            // The parameter list closed; the body follows.
            bodyStarted = true;
            i = src.indexOf('{', i) + 1;
            depth = 1;
            prev = '{';
        }
    }
    throw new Error(`unterminated function ${name}`);
}
const cut = (file, names) => names.map(n => extract(original(file), n)).join('\n\n');

const write = (name, text) => fs.writeFileSync(path.join(pub, name), text);
const scriptSrc = cut('script.js', ['substituteParams', 'substituteParamsExtended', 'baseChatReplace', 'createLazyFields',
    'getCharacterCardFieldsLazy', 'parseMesExamples', 'getMaxContextTokens', 'getMaxResponseTokens',
    'getMaxPromptTokens']);
const utilsSrc = cut('scripts/utils.js', ['getStringHash', 'isTrueBoolean', 'isFalseBoolean',
    'timestampToMoment', 'parseTimestamp', 'convertValueType', 'equalsIgnoreCaseAndAccents',
    'compareIgnoreCaseAndAccents', 'regexFromString']);
const variablesSrc = cut('scripts/variables.js', ['getLocalVariable', 'setLocalVariable',
    'getGlobalVariable', 'setGlobalVariable', 'addLocalVariable', 'addGlobalVariable',
    'incrementLocalVariable', 'incrementGlobalVariable', 'decrementLocalVariable',
    'decrementGlobalVariable', 'existsLocalVariable', 'existsGlobalVariable',
    'deleteLocalVariable', 'deleteGlobalVariable']);
const extensionsSrc = cut('scripts/extensions.js', ['findExtension']);

write('lib.js', `import * as chevrotain from 'chevrotain';
import moment from 'moment';
import seedrandom from 'seedrandom';
import droll from 'droll';
// lodash: the regex engine imports it for a function the recorder never calls.
export const lodash = {};
export { chevrotain, moment, seedrandom, droll };
`);
// The app's state, set per case by stState. Exports are live bindings, so each is an object
// mutated in place or a \`let\` reassigned through __set.
write('script.js', `import { MacroEnvBuilder } from './scripts/macros/engine/MacroEnvBuilder.js';
import { MacroEngine } from './scripts/macros/engine/MacroEngine.js';
import { power_user } from './scripts/power-user.js';
export const chat = [];
export let chat_metadata = {};
export let characters = [];
export let this_chid = 0;
export let name1 = '';
export let name2 = '';
export let main_api = 'openai';
export const extension_prompts = {};
export let oai_settings = {};
let model = '';
const selected_group = null;
export function getGeneratingModel() { return model; }
export function saveSettingsDebounced() {}
export function getCurrentChatId() { return chat_metadata.__chat_id ?? ''; }
export function __set(s) {
    chat.length = 0;
    chat.push(...s.chat);
    ({ chat_metadata, characters, this_chid, name1, name2, oai_settings, model } = s);
}
${scriptSrc}
`);
write('scripts/utils.js', `import { moment } from '../lib.js';
// convertValueType tests its value against this class (slash-command closures).
class SlashCommandClosure {}
const dateCache = new Map();
function getCurrentLocale() { return 'en'; }
${utilsSrc}
`);
write('scripts/variables.js', `import { chat_metadata } from '../script.js';
import { extension_settings } from './extensions.js';
import { isFalseBoolean, convertValueType, isTrueBoolean } from './utils.js';
function saveMetadataDebounced() {}
function saveSettingsDebounced() {}
${variablesSrc}
`);
write('scripts/extensions.js', `import { equalsIgnoreCaseAndAccents } from './utils.js';
export const extension_settings = { variables: { global: {} }, disabledExtensions: [] };
export function writeExtensionField() {}
export const extensionNames = [];
${extensionsSrc}
`);
// power_user: the fresh-install values the macro definitions read (power-user.js).
write('scripts/power-user.js', `export const power_user = {
    persona_description: '',
    prefer_character_prompt: true,
    prefer_character_jailbreak: true,
    collapse_newlines: false,
    experimental_macro_engine: true,
    instruct: { enabled: false },
    sysprompt: { enabled: true, content: 'Write {{char}}\\'s next reply in a fictional chat between {{char}} and {{user}}.' },
    context: { example_separator: '***', chat_start: '***' },
};
`);
// A desktop browser, as the live app runs in stlive.
write('scripts/RossAscends-mods.js', 'export function isMobile() { return false; }\n');
write('scripts/events.js', `const handlers = {};
export const event_types = { GENERATION_STARTED: 'generation_started', CHAT_CHANGED: 'chat_id_changed' };
export const eventSource = {
    on(e, f) { (handlers[e] ??= []).push(f); },
    emit(e, ...a) { for (const f of handlers[e] ?? []) f(...a); },
};
`);
// The preset manager, as far as the regex engine reads it: the preset's scripts.
write('scripts/preset-manager.js', `export const presetState = { scripts: [] };
export function getPresetManager() {
    return { apiId: 'openai', getSelectedPresetName: () => 'the preset',
        readPresetExtensionField: ({ path }) => (path === 'regex_scripts' ? presetState.scripts : undefined) };
}
`);
write('scripts/group-chats.js', 'export const groups = [];\nexport const selected_group = null;\n');
write('scripts/textgen-settings.js', 'export const textgenerationwebui_banned_in_macros = [];\n');
write('scripts/instruct-mode.js', 'export function formatInstructModeExamples() { throw new Error("instruct mode is off"); }\n');
// What MacroDiagnostics shows in the app's UI (a popup, translated text): nothing here.
write('scripts/i18n.js', 'export const t = (s, ...v) => String.raw(s, ...v);\n');
write('scripts/popup.js', 'export const POPUP_RESULT = {};\nexport const Popup = { show: { confirm: async () => null } };\n');
fs.mkdirSync(path.join(pub, 'scripts/util'), { recursive: true });
write('scripts/util/AccountStorage.js', 'export const accountStorage = { getItem: () => null, setItem() {} };\n');
write('scripts/util/SimpleMutex.js', 'export class SimpleMutex { async update(f) { return f(); } }\n');
// `/scripts/…` imports are the app's absolute URLs.
write('hooks.mjs', `export async function resolve(spec, ctx, next) {
    if (spec.startsWith('/scripts/')) return next(${JSON.stringify(pathToFileURL(pub).href)} + spec, ctx);
    return next(spec, ctx);
}
`);
register(pathToFileURL(path.join(pub, 'hooks.mjs')).href);

const imp = rel => import(pathToFileURL(path.join(pub, rel)).href);
const script = await imp('script.js');
const vars = await imp('scripts/variables.js');
const ext = await imp('scripts/extensions.js');
const events = await imp('scripts/events.js');
const { power_user } = await imp('scripts/power-user.js');
globalThis.SillyTavern = {
    getContext: () => ({
        variables: {
            local: { get: vars.getLocalVariable, set: vars.setLocalVariable, del: vars.deleteLocalVariable, add: vars.addLocalVariable, inc: vars.incrementLocalVariable, dec: vars.decrementLocalVariable, has: vars.existsLocalVariable },
            global: { get: vars.getGlobalVariable, set: vars.setGlobalVariable, del: vars.deleteGlobalVariable, add: vars.addGlobalVariable, inc: vars.incrementGlobalVariable, dec: vars.decrementGlobalVariable, has: vars.existsGlobalVariable },
        },
    }),
};
let firstDisplayed = null;
globalThis.document = {
    querySelector: sel => (sel === '#chat .mes' && firstDisplayed !== null
        ? { getAttribute: () => String(firstDisplayed) } : null),
};
const RealDate = Date;
let now = 0;
globalThis.Date = class extends RealDate {
    constructor(...a) { if (a.length === 0) super(now); else super(...a); }
    static now() { return now; }
};
const { initRegisterMacros } = await imp('scripts/macros/macro-system.js');
initRegisterMacros();
const { MacroRegistry } = await imp('scripts/macros/engine/MacroRegistry.js');

// SillyTavern's built-in extensions (public/scripts/extensions/), all on in a fresh install.
const STOCK_EXTENSIONS = ['assets', 'attachments', 'caption', 'connection-manager', 'expressions',
    'gallery', 'memory', 'quick-reply', 'regex', 'stable-diffusion', 'token-counter', 'translate',
    'tts', 'vectors'];

/** The app's state for one stpreset context, as SillyTavern holds it. */
function stState(c) {
    const history = (c.items ?? []).filter(i => i.tag === 'DIALOGUE_HISTORY');
    const chat = history.map(i => {
        const m = { name: i.name ?? (i.role === 'user' ? c.user : c.char), is_user: i.role === 'user', is_system: false, mes: i.text ?? '' };
        if (i.time) m.send_date = i.time;
        if (i.swipes !== undefined) {
            m.swipes = Array.from({ length: i.swipes }, (_, k) => (k === (i.swipe_id ?? 0) ? m.mes : `swipe ${k}`));
            m.swipe_id = i.swipe_id ?? 0;
        }
        return m;
    });
    const depth = c.char_depth_prompt;
    const card = {
        name: c.char ?? '',
        description: c.description ?? '',
        personality: c.personality ?? '',
        scenario: c.scenario ?? '',
        first_mes: c.first_mes ?? '',
        mes_example: c.mes_examples_raw ?? '',
        data: {
            system_prompt: c.char_prompt ?? '',
            post_history_instructions: c.char_instruction ?? '',
            character_version: c.char_version ?? '',
            creator_notes: c.creator_notes ?? '',
            alternate_greetings: c.alternate_greetings ?? [],
            extensions: depth ? { depth_prompt: { prompt: depth.text ?? '', depth: depth.depth ?? 4, role: depth.role ?? 'system' } } : {},
        },
    };
    const settings = c.preset_settings ?? {};
    return {
        chat,
        chat_metadata: {
            variables: { ...(c.variables ?? {}) },
            ...(c.first_included_message_id !== undefined ? { lastInContextMessageId: c.first_included_message_id } : {}),
        },
        characters: [card],
        this_chid: 0,
        name1: c.user ?? 'User',
        name2: c.char ?? '',
        model: c.model ?? '',
        oai_settings: {
            // A fresh install's values (openai.js default_settings) unless the case's preset
            // settings or window say otherwise.
            openai_max_context: c.max_context_tokens ?? settings.openai_max_context ?? 4095,
            openai_max_tokens: c.provider_options?.max_tokens ?? settings.openai_max_tokens ?? 300,
        },
    };
}

// The engine's warnings (a wrong argument type, …) are the app's console noise, not results.
console.warn = console.error = console.debug = () => {};
const cases = JSON.parse(fs.readFileSync(path.join(here, 'cases.json'), 'utf8'));
const out = [];
for (const k of cases) {
    const c = k.context;
    const s = stState(c);
    script.__set(s);
    ext.extension_settings.variables.global = { ...(c.globals ?? {}) };
    ext.extensionNames.length = 0;
    ext.extensionNames.push(...(c.extensions ?? STOCK_EXTENSIONS));
    power_user.persona_description = c.persona ?? '';
    power_user.prefer_character_prompt = c.prefer_char_prompt ?? true;
    power_user.prefer_character_jailbreak = c.prefer_char_instruction ?? true;
    power_user.sysprompt.enabled = c.system_prompt !== '';
    if (typeof c.system_prompt === 'string') power_user.sysprompt.content = c.system_prompt;
    else power_user.sysprompt.content = 'Write {{char}}\'s next reply in a fictional chat between {{char}} and {{user}}.';
    firstDisplayed = c.first_displayed_message_id ?? (s.chat.length ? Math.max(0, s.chat.length - 100) : null);
    now = RealDate.parse(c.now ?? '2026-01-15T12:00:00Z');
    events.eventSource.emit(events.event_types.CHAT_CHANGED);
    events.eventSource.emit(events.event_types.GENERATION_STARTED, c.generation_type ?? 'normal', {}, false);
    const expect = script.substituteParams(k.template, {});
    out.push({ name: k.name, template: k.template, context: c, expect, category: k.category ?? 'st-macros' });
}

// Every name (and alias) SillyTavern registers, for the catalog test.
const registered = MacroRegistry.getAllMacros().map(d => d.name);
fs.writeFileSync(path.join(here, 'vectors.json'), JSON.stringify(out, null, 1) + '\n');

// ST's regex engine (extensions/regex/engine.js, unchanged) over the host's global scripts, the
// preset's and the character's: regex-cases.json → regex-vectors.json.
const engine = await imp('scripts/extensions/regex/engine.js');
const { presetState } = await imp('scripts/preset-manager.js');
const PLACEMENT = { user: 1, model: 2, world_info: 5 };
const regexOut = [];
for (const k of JSON.parse(fs.readFileSync(path.join(here, 'regex-cases.json'), 'utf8'))) {
    const c = k.context;
    const s = stState(c);
    s.characters[0].avatar = 'card.png';
    s.characters[0].data.extensions.regex_scripts = c.char_regex_scripts ?? [];
    script.__set(s);
    ext.extension_settings.regex = c.regex_scripts ?? [];
    ext.extension_settings.character_allowed_regex = c.allow_char_regex ? ['card.png'] : [];
    ext.extension_settings.preset_allowed_regex = { openai: c.allow_preset_regex ? ['the preset'] : [] };
    presetState.scripts = k.preset_scripts ?? [];
    now = RealDate.parse(c.now ?? '2026-01-15T12:00:00Z');
    const p = k.pass;
    const expect = engine.getRegexedString(k.text, PLACEMENT[p.placement], {
        isPrompt: p.kind === 'prompt', isMarkdown: p.kind === 'display', isEdit: p.kind === 'edit',
        depth: p.depth,
    });
    regexOut.push({ ...k, expect });
}
fs.writeFileSync(path.join(here, 'regex-vectors.json'), JSON.stringify(regexOut, null, 1) + '\n');
fs.writeFileSync(path.join(here, 'registered.json'), JSON.stringify({ st_commit: stCommit, names: [...new Set(registered)].sort() }, null, 1) + '\n');
console.log(`${regexOut.length} regex cases recorded`);
console.log(`${out.length} cases recorded from SillyTavern ${stCommit}; ${registered.length} registered names`);
fs.rmSync(work, { recursive: true, force: true });
