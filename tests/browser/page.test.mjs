// `stpreset serve` in a real browser: Debian's Chromium, driven by playwright-core (which
// downloads no browser of its own). Run by scripts/browser-test after `cargo test`; reads the
// corpus from ../shared at run time and skips those tests, saying so, when it is absent.
//
// STPRESET_BIN: the binary, built with `--features serve` (default target/debug/stpreset).
// CHROMIUM: the browser (default /usr/bin/chromium). Screenshots go to target/browser/.

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync, existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const bin = process.env.STPRESET_BIN || join(repo, "target/debug/stpreset");
const corpus = resolve(repo, "../shared/corpus/presets");
const context = join(repo, "examples/context.json");
const shots = join(repo, "target/browser");
const scratch = mkdtempSync(join(tmpdir(), "stpreset-browser-"));
const haveCorpus = existsSync(corpus);
if (!haveCorpus) console.log(`# SKIP corpus tests: ${corpus} is absent`);

let browser;
const servers = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    // Without the background-networking flags Chromium keeps calling out to a closed network.
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  });
});

after(async () => {
  await browser?.close();
  for (const s of servers) s.kill();
});

/** Starts `stpreset serve ARGS --port 0` and resolves with the URL it prints. */
function serve(...args) {
  return new Promise((ok, fail) => {
    const child = spawn(bin, ["serve", ...args, "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
    servers.push(child);
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const line = out.split("\n")[0];
      if (out.includes("\n")) ok(line.trim());
    });
    child.on("exit", (code) => fail(new Error(`serve exited with ${code}`)));
  });
}

async function open(url, viewport = { width: 1280, height: 800 }, colorScheme = "light") {
  const page = await browser.newPage({ viewport, colorScheme });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`console: ${m.text()}`); });
  page.on("dialog", (d) => { errors.push(`dialog: ${d.message()}`); d.dismiss(); });
  await page.goto(url);
  await page.waitForSelector("body[data-rendered]", { timeout: 60_000 });
  page.errors = errors;
  return page;
}

/** Runs `action`, then waits for the page to show the answer to the request it caused. */
async function after_(page, action) {
  const was = await page.getAttribute("body", "data-rendered");
  await action();
  await page.waitForFunction((w) => document.body.dataset.rendered !== w, was, { timeout: 60_000 });
}

function cli(...args) {
  return JSON.parse(execFileSync(bin, args, { maxBuffer: 64 << 20 }).toString());
}

function sourceId(source) {
  if ("node" in source) return source.node;
  if ("tag" in source) return source.tag ?? "untagged";
  if ("setting" in source) return `setting:${source.setting}`;
  if ("example" in source) return `example:${source.example}`;
  // The seed layout joins sources into one message; the SillyTavern layout gives a depth.
  return Array.isArray(source.injection) ? source.injection.map(sourceId).join(" ") : `depth:${source.injection.depth}`;
}

/** The page's messages: role, source and parts, read through the stable hooks. */
function shownMessages(page) {
  return page.$$eval("#messages > [data-role]", (items) => items.map((m) => ({
    role: m.dataset.role,
    source: m.dataset.source,
    parts: [...m.querySelectorAll("[data-part]")].map((p) => p.firstChild?.nodeType === 3 ? p.firstChild.data : ""),
  })));
}

function expected(doc) {
  return doc.messages.map((m) => ({ role: m.role, source: sourceId(m.source), parts: m.parts }));
}

const CORPUS = ["st-default__Default.json", "marinara__Spaghetti-Recipe-Essentials.json",
  "nemo__NemoEngine-11.5.2-General-RP.json", "atelier__TheAtelierV4.json"];

for (const name of CORPUS) {
  test(`corpus ${name}: the page shows what the CLI renders, message for message`, { skip: !haveCorpus }, async () => {
    const preset = join(corpus, name);
    const page = await open(await serve(preset, "--context", context));
    const want = cli("render", preset, "--context", context, "--format", "json");
    assert.deepEqual(await shownMessages(page), expected(want));
    assert.equal(await page.locator("#diagnostics > *").count(), want.diagnostics.length);
    assert.deepEqual(page.errors, []);
    await page.close();
  });
}

// The SillyTavern layout's render document (depth messages, example lines, settings) on the
// page: the example context with a card's fields, examples and a depth injection in the chat.
const stContext = join(scratch, "st-context.json");
writeFileSync(stContext, JSON.stringify({
  ...JSON.parse(readFileSync(context, "utf8")),
  layout: "sillytavern",
  mes_examples_raw: "<START>\n{{user}}: Hi?\n{{char}}: Hello.",
}));

for (const name of CORPUS) {
  test(`corpus ${name} in the SillyTavern layout: the page shows every message the CLI renders`, { skip: !haveCorpus }, async () => {
    const preset = join(corpus, name);
    const page = await open(await serve(preset, "--context", stContext));
    const want = cli("render", preset, "--context", stContext, "--format", "json");
    assert.deepEqual(await shownMessages(page), expected(want));
    assert.deepEqual(page.errors, []);
    await page.close();
  });
}

// Every corpus preset in both layouts with a real card and chat (the stlive fixtures: Sera's
// card read by `stpreset card`, her eight-message chat): the conversation shows every message
// the CLI renders, and no page error or console error (an unhandled rejection is one) occurs.
const fixtures = resolve(repo, "../shared/tools/stlive/fixtures");
const ALL = haveCorpus ? readdirSync(corpus).filter((f) => f.endsWith(".json")).sort() : [];
function cardChatContext(layout) {
  const card = cli("card", join(fixtures, "card-sera.json"), "--format", "json");
  const chat = JSON.parse(readFileSync(join(fixtures, "chat-sera.json"), "utf8"));
  const items = chat.messages.map((m) => ({
    tag: "DIALOGUE_HISTORY", role: m.from === "char" ? "model" : "user", time: m.time,
    name: m.from === "char" ? chat.char : chat.user, text: m.text,
  }));
  const file = join(scratch, `card-chat-${layout}.json`);
  writeFileSync(file, JSON.stringify({ ...card.context, user: chat.user, layout, items }));
  return file;
}
for (const layout of ["seed", "sillytavern"]) {
  for (const name of ALL) {
    test(`corpus ${name}, ${layout} layout, card and chat: the conversation shows every message the CLI renders`, async () => {
      const ctx = cardChatContext(layout);
      const preset = join(corpus, name);
      const page = await open(await serve(preset, "--context", ctx));
      const want = cli("render", preset, "--context", ctx, "--format", "json");
      assert.ok(want.messages.some((m) => m.parts.some((p) => p.includes("mortar and pestle"))), "the chat is rendered");
      assert.deepEqual(await shownMessages(page), expected(want));
      assert.deepEqual(page.errors, []);
      await page.close();
    });
  }
}

test("a node switched off leaves the prompt; switched on it comes back", { skip: !haveCorpus }, async () => {
  const preset = join(corpus, "st-default__Default.json");
  const page = await open(await serve(preset, "--context", context));
  const before = await shownMessages(page);
  // The first message that comes from a node of the preset.
  const node = before.find((m) => !m.source.includes(" ") && m.source !== "DIALOGUE_HISTORY" &&
    !m.source.startsWith("SYSTEM") && !m.source.startsWith("KNOWLEDGE")).source;
  const box = page.locator(`#nodes input[data-identifier="${node}"]`).first();
  await after_(page, () => box.uncheck());
  const without = await shownMessages(page);
  assert.equal(without.filter((m) => m.source === node).length, 0);
  assert.equal(without.length, before.length - 1);
  await after_(page, () => box.check());
  assert.deepEqual(await shownMessages(page), before);
  await page.close();
});

test("the request shape shows the provider request the CLI builds", { skip: !haveCorpus }, async () => {
  const preset = join(corpus, "marinara__Spaghetti-Recipe-Essentials.json");
  const page = await open(await serve(preset, "--context", context));
  for (const [shape, cliShape] of [["google", "google"], ["anthropic", "anthropic"], ["openai", "openai"]]) {
    await after_(page, () => page.selectOption("#shape", shape));
    await page.click("#tab-request");
    const shown = JSON.parse(await page.textContent("#request"));
    const want = cli("render", preset, "--context", context, "--shape", cliShape, "--format", "json");
    assert.deepEqual(shown, want.request, shape);
  }
  await page.close();
});

test("the layout picker shows the body SillyTavern sends, as the CLI builds it", { skip: !haveCorpus }, async () => {
  const preset = join(corpus, "st-default__Default.json");
  const page = await open(await serve(preset, "--context", context));
  await after_(page, () => page.selectOption("#shape", "openai"));
  await after_(page, () => page.selectOption("#layout", "sillytavern"));
  await page.click("#tab-request");
  const shown = JSON.parse(await page.textContent("#request"));
  const want = cli("render", preset, "--context", context, "--layout", "sillytavern", "--shape", "openai", "--format", "json");
  assert.deepEqual(shown, want.request);
  await after_(page, () => page.selectOption("#layout", "seed"));
  const seed = JSON.parse(await page.textContent("#request"));
  assert.deepEqual(seed, cli("render", preset, "--context", context, "--shape", "openai", "--format", "json").request);
  assert.notDeepEqual(seed, shown);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("a diagnostic opens on its node's line with the span marked", async () => {
  const preset = join(scratch, "diag.json");
  writeFileSync(preset, JSON.stringify({ prompts: [
    { identifier: "main", name: "Main", content: "line one\nline two\nHello {{frobnicate}} there\nline four" },
  ] }));
  const page = await open(await serve(preset, "--context", context));
  const diag = page.locator("#diagnostics > li", { hasText: "UnknownMacro" }).first();
  await diag.locator("button").click();
  const hit = diag.locator(".snippet .hit");
  await hit.waitFor();
  assert.equal(await diag.locator("mark").textContent(), "{{frobnicate}}");
  assert.match(await hit.textContent(), /^3 │ Hello \{\{frobnicate\}\} there$/);
  // Keyboard: Enter closes and opens it again.
  await diag.locator("button").focus();
  await page.keyboard.press("Enter");
  assert.equal(await diag.locator(".snippet").count(), 0);
  await page.keyboard.press("Enter");
  assert.equal(await diag.locator(".snippet").count(), 1);
  await page.close();
});

test("presets and contexts open with the picker, by dropping them, and the sample comes back", async () => {
  const page = await open(await serve());
  assert.equal(await page.getAttribute("body", "data-rendered"), "none");
  const preset = join(repo, "examples/preset.json");
  await after_(page, () => page.setInputFiles("#preset-file", preset));
  // The sample chat is the example context.
  assert.deepEqual(await shownMessages(page),
    expected(cli("render", preset, "--context", context, "--format", "json")));
  const bob = join(scratch, "bob.json");
  const bobText = JSON.stringify({ user: "Bob", char: "Tomori", items: [
    { tag: "DIALOGUE_HISTORY", role: "user", text: "Bob: hello there" }] });
  writeFileSync(bob, bobText);
  const dropped = await page.evaluateHandle(({ name, text }) => {
    const dt = new DataTransfer();
    dt.items.add(new File([text], name, { type: "application/json" }));
    return dt;
  }, { name: "bob.json", text: bobText });
  await after_(page, () => page.dispatchEvent("body", "drop", { dataTransfer: dropped }));
  assert.deepEqual(await shownMessages(page),
    expected(cli("render", preset, "--context", bob, "--format", "json")));
  assert.match(await page.textContent("#status"), /bob\.json/);
  await after_(page, () => page.click("#sample-context"));
  assert.deepEqual(await shownMessages(page),
    expected(cli("render", preset, "--context", context, "--format", "json")));
  // A file that is not JSON is refused on the page, and the last render stays.
  await page.setInputFiles("#preset-file", { name: "x.json", mimeType: "application/json", buffer: Buffer.from("{nope") });
  await page.waitForSelector("#error:not([hidden])");
  assert.match(await page.textContent("#error"), /x\.json: not JSON/);
  assert.ok(await page.locator("#messages > [data-role]").count() > 0);
  await page.close();
});

test("files named on the command line that are not JSON are said so on the page", async () => {
  const broken = join(scratch, "broken.json");
  writeFileSync(broken, '{"prompts": [');
  const page = await open(await serve(broken, "--context", context));
  assert.equal(await page.getAttribute("body", "data-rendered"), "none");
  assert.match(await page.textContent("#error"), /broken\.json: not JSON/);
  await page.close();
  const good = join(repo, "examples/preset.json");
  const page2 = await open(await serve(good, "--context", broken));
  assert.match(await page2.textContent("#error"), /broken\.json: not JSON/);
  // The preset still renders, with an empty context.
  assert.ok(await page2.locator("#messages > [data-role]").count() > 0);
  await page2.close();
});

test("the keyboard reaches the switches and the tabs", async () => {
  const preset = join(scratch, "keys.json");
  writeFileSync(preset, JSON.stringify({ prompts: [
    { identifier: "main", name: "Main", content: "First" },
    { identifier: "second", name: "Second", content: "Second {{nope}}" }] }));
  const page = await open(await serve(preset, "--context", context));
  const count = async (id) => (await shownMessages(page)).filter((m) => m.source === id).length;
  assert.equal(await count("second"), 1);
  await page.focus("#nodes input[data-identifier=second]");
  await after_(page, () => page.keyboard.press("Space"));
  assert.equal(await count("second"), 0);
  await page.focus("#tab-diagnostics");
  await page.keyboard.press("ArrowRight");
  assert.equal(await page.getAttribute("#tab-audit", "aria-selected"), "true");
  assert.equal(await page.isVisible("#panel-audit"), true);
  assert.equal(await page.evaluate(() => document.activeElement.id), "tab-audit");
  await page.keyboard.press("End");
  assert.equal(await page.isVisible("#panel-lore"), true);
  assert.equal(await page.isVisible("#panel-audit"), false);
  await page.close();
});

test("the regex tab names the scripts that changed each history message", async () => {
  const preset = join(scratch, "regex.json");
  writeFileSync(preset, JSON.stringify({
    prompts: [{ identifier: "chatHistory", marker: true }],
    extensions: { regex_scripts: [
      { scriptName: "Lanterns to <b>torches</b>", findRegex: "/lanterns/g", replaceString: "torches", placement: [2], promptOnly: true },
      { scriptName: "never", findRegex: "/zebra/g", replaceString: "x", placement: [1, 2], promptOnly: true }] },
  }));
  const page = await open(await serve(preset, "--context", context));
  await page.click("#tab-regex");
  assert.match(await page.textContent("#regex-hint"), /did not run/);
  await after_(page, () => page.check("#allow-regex"));
  const changes = page.locator("#regex-messages > li");
  assert.equal(await changes.count(), 1);
  const text = await changes.first().textContent();
  assert.match(text, /changed by Lanterns to <b>torches<\/b>/);
  assert.match(text, /The torches are lit/);
  assert.equal(await page.locator("#regex-messages b").count(), 0);
  // The prompt the bot sends has the scripts' text too.
  const shown = await shownMessages(page);
  assert.ok(shown.some((m) => m.parts[0].includes("The torches are lit")));
  await page.close();
});

test("preset text that is HTML or script is shown as text, never run", async () => {
  const evil = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script><b>bold</b>`;
  const name = "RLO \u202Eevil.exe\u202C and NUL \u0000 bell \u0007 <i>x</i>";
  const preset = join(scratch, "evil.json");
  writeFileSync(preset, JSON.stringify({ prompts: [
    { identifier: "main", name, content: evil },
    { identifier: "<script>alert(1)</script>", name: "<img src=x onerror=alert(2)>", content: "{{nope}}" },
  ] }));
  const page = await open(await serve(preset, "--context", context));
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.equal(await page.locator("#messages img, #messages script, #messages b, #nodes img, #nodes i").count(), 0);
  const [first] = await shownMessages(page);
  assert.equal(first.parts[0], evil);
  const label = await page.locator("#nodes li").first().textContent();
  assert.ok(label.includes("\u27e8U+202E\u27e9") && label.includes("\u2400") && label.includes("\u2407"), label);
  assert.ok(!label.includes("\u202E"));
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("a node named __proto__ switches off like any other; a file with a BOM loads", async () => {
  const preset = join(scratch, "proto.json");
  const text = JSON.stringify({ prompts: [
    { identifier: "main", content: "Main text" },
    { identifier: "__proto__", name: "Sneaky", content: "Cannot switch me off" }] });
  writeFileSync(preset, "\uFEFF" + text);
  const page = await open(await serve(preset, "--context", context));
  assert.deepEqual(page.errors, []);
  const count = async () => (await shownMessages(page)).filter((m) => m.source === "__proto__").length;
  assert.equal(await count(), 1);
  await after_(page, () => page.locator('#nodes input[data-identifier="__proto__"]').uncheck());
  assert.equal(await count(), 0);
  assert.equal(await page.isHidden("#error"), true);
  await page.close();
});

test("a preset of 3,000 diagnostics shows 500 and says how many more there are", async () => {
  const preset = join(scratch, "many.json");
  writeFileSync(preset, JSON.stringify({ prompts: [{ identifier: "main", content: "{{x}}".repeat(3000) }] }));
  const page = await open(await serve(preset, "--context", context));
  assert.equal(await page.locator("#diagnostics > *").count(), 500);
  assert.match(await page.textContent("#diagnostics-more"), /2,500 more diagnostics not shown/);
  assert.match(await page.textContent("#diagnostics-count"), /3,000/);
  await page.close();
});

test("a 2 MiB preset of 10,000 nodes loads, lists every node and renders", async () => {
  const prompts = [];
  const order = [];
  for (let i = 0; i < 10_000; i++) {
    prompts.push({ identifier: `n${i}`, name: `Node ${i}`, content: `Text of node ${i}. ` + "x".repeat(95) });
    order.push({ identifier: `n${i}`, enabled: i % 2 === 0 });
  }
  let doc = { prompts, prompt_order: [{ character_id: 100001, order }] };
  let text = JSON.stringify(doc);
  assert.ok(text.length > 1.8 * 1024 * 1024 && text.length < 2 * 1024 * 1024, String(text.length));
  const preset = join(scratch, "big.json");
  writeFileSync(preset, text);
  const page = await open(await serve(preset, "--context", context));
  assert.equal(await page.locator("#nodes > li").count(), 10_000);
  const want = cli("render", preset, "--context", context, "--format", "json");
  const shown = await shownMessages(page);
  assert.equal(shown.length, want.messages.length);
  assert.deepEqual(shown, expected(want));
  await page.close();
});

// Wide and light, narrow and dark, for the example preset (the README's picture is the first)
// and, with the corpus, a large real one.
const SHOTS = [["example", join(repo, "examples/preset.json")],
  ...(haveCorpus ? [["corpus", join(corpus, "marinara__Spaghetti-Recipe-Essentials.json")]] : [])];
for (const [name, preset] of SHOTS) {
  test(`screenshots of the ${name} preset, wide and light, narrow and dark`, async () => {
    const url = await serve(preset, "--context", context);
    for (const [label, viewport, scheme] of [["wide", { width: 1280, height: 800 }, "light"],
      ["narrow", { width: 390, height: 844 }, "dark"]]) {
      const page = await open(url, viewport, scheme);
      // Nothing may stick out sideways at phone width.
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert.ok(overflow <= 0, `${label}: ${overflow}px wider than the window`);
      const path = join(shots, `serve-${name}-${label}.png`);
      await page.screenshot({ path });
      assert.ok(readFileSync(path).length > 10_000);
      await page.close();
    }
  });
}

test("the turn picker shows each generation type's prompt, as the CLI builds it", { skip: !haveCorpus }, async () => {
  const preset = join(corpus, "st-default__Default.json");
  const page = await open(await serve(preset, "--context", context));
  for (const layout of ["seed", "sillytavern"]) {
    await after_(page, () => page.selectOption("#layout", layout));
    for (const generation of ["continue", "impersonate", "swipe", "regenerate", "normal"]) {
      await after_(page, () => page.selectOption("#generation", generation));
      const want = cli("render", preset, "--context", context, "--layout", layout,
        "--generation", generation, "--format", "json");
      assert.deepEqual(await shownMessages(page), expected(want), `${layout} ${generation}`);
    }
  }
  // A continue ends with ST's nudge, an impersonation with its prompt (seed layout).
  await after_(page, () => page.selectOption("#layout", "seed"));
  await after_(page, () => page.selectOption("#generation", "continue"));
  const shown = await shownMessages(page);
  assert.match(shown.at(-1).parts.join(""), /^\[Continue your last message/);
  assert.deepEqual(page.errors, []);
  await page.close();
});

// ---- Sections, exclusive groups, search, download, lore entries (issue 41) ----

const STYLES = {
  prompts: [
    { identifier: "main", name: "Main", content: "Main text" },
    { identifier: "h", name: "=== Style ===", content: "" },
    { identifier: "sub", name: "< Length >", content: "" },
    { identifier: "terse", name: "Terse", content: "{{// @tooltip Short replies.}}{{// @badge LEN}}{{// @mutual-exclusive-group len}}Be terse." },
    { identifier: "lush", name: "Lush", content: "{{// @mutual-exclusive-group len}}{{// @exclusive-with-message One length only.}}Be lush." },
    { identifier: "chatHistory", name: "Chat History", marker: true },
  ],
  prompt_order: [{ character_id: 100001, order: [
    { identifier: "main", enabled: true }, { identifier: "h", enabled: true }, { identifier: "sub", enabled: true },
    { identifier: "terse", enabled: true }, { identifier: "lush", enabled: false }, { identifier: "chatHistory", enabled: true }] }],
};

test("sections fold with their counts, tooltips and groups show, an exclusive group offers to switch the other off", async () => {
  const preset = join(scratch, "styles.json");
  writeFileSync(preset, JSON.stringify(STYLES));
  const page = await open(await serve(preset, "--context", context));
  const summary = () => page.$$eval("#nodes li.section > details > summary", (s) => s.map((x) => x.textContent));
  assert.deepEqual(await summary(), ["Style 2/3", "Length 2/3"]);
  assert.equal(await page.getAttribute('#nodes li.node[data-identifier=terse] label', "title"), "Short replies.");
  assert.match(await page.textContent("#nodes li.node[data-identifier=lush]"), /one of: len/);
  // Switching Lush on is refused while Terse is on: the page says why, with the author's words.
  await page.click("#nodes input[data-identifier=lush]");
  await page.waitForSelector("#nodes .offer");
  const offer = await page.textContent("#nodes .offer");
  assert.match(offer, /on now: "Terse"/);
  assert.match(offer, /One length only\./);
  assert.equal(await page.isChecked("#nodes input[data-identifier=lush]"), false);
  // Cancel leaves everything as it was.
  await page.click("#nodes .offer [data-action=cancel]");
  assert.equal(await page.locator("#nodes .offer").count(), 0);
  await page.click("#nodes input[data-identifier=lush]");
  await page.waitForSelector("#nodes .offer");
  await after_(page, () => page.click("#nodes .offer [data-action=resolve]"));
  assert.equal(await page.isChecked("#nodes input[data-identifier=lush]"), true);
  assert.equal(await page.isChecked("#nodes input[data-identifier=terse]"), false);
  assert.equal(await page.textContent("#switch-note"), "Switched off: Terse (for Lush)");
  assert.deepEqual(await summary(), ["Style 2/3", "Length 2/3"]);
  const texts = (await shownMessages(page)).map((m) => m.parts.join(""));
  assert.ok(texts.includes("Be lush.") && !texts.includes("Be terse."), JSON.stringify(texts));
  // Switching off is never refused; "anyway" switches on past the rule.
  await after_(page, () => page.click("#nodes input[data-identifier=lush]"));
  await page.click("#nodes input[data-identifier=terse]");
  await page.waitForFunction(() => document.querySelector("#nodes input[data-identifier=terse]").checked);
  await page.click("#nodes input[data-identifier=lush]");
  await page.waitForSelector("#nodes .offer");
  await after_(page, () => page.click("#nodes .offer [data-action=anyway]"));
  assert.equal(await page.isChecked("#nodes input[data-identifier=lush]"), true);
  assert.equal(await page.isChecked("#nodes input[data-identifier=terse]"), true);
  // The download is the preset file with these switches, as the CLI reads it.
  const [file] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
  const saved = join(scratch, "styles-saved.json");
  await file.saveAs(saved);
  const nodes = cli("nodes", saved, "--format", "json").nodes.map((n) => [n.identifier, n.enabled]);
  assert.deepEqual(nodes, [["main", true], ["h", true], ["sub", true], ["terse", true], ["lush", true], ["chatHistory", true]]);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("the search shows the nodes it finds, in their sections, and an empty search shows all", async () => {
  const preset = join(scratch, "styles-search.json");
  writeFileSync(preset, JSON.stringify(STYLES));
  const page = await open(await serve(preset, "--context", context));
  const visible = () => page.$$eval("#nodes li.node", (l) => l.filter((x) => x.offsetParent !== null).map((x) => x.dataset.identifier));
  await page.fill("#node-search", "LUSH");
  assert.deepEqual(await visible(), ["lush"]);
  await page.fill("#node-search", "ter");
  assert.deepEqual(await visible(), ["terse"]);
  await page.fill("#node-search", "");
  assert.deepEqual(await visible(), ["main", "h", "sub", "terse", "lush", "chatHistory"]);
  await page.close();
});

test("the lore tab lists the activated entries one by one, as the CLI activates them", async () => {
  const ctx = join(scratch, "lore-context.json");
  const book = { name: "w", entries: {
    0: { uid: 0, key: ["rain"], comment: "Rain", content: "It rains." },
    1: { uid: 1, key: ["snow"], comment: "Snow", content: "It snows.", position: 4, depth: 2 },
    2: { uid: 2, key: ["sun"], comment: "Sun", content: "Sunny." } } };
  writeFileSync(ctx, JSON.stringify({ items: [{ tag: "DIALOGUE_HISTORY", role: "user", text: "rain then snow" }], lorebooks: [book] }));
  const preset = join(scratch, "lore-preset.json");
  writeFileSync(preset, JSON.stringify({ prompts: [{ identifier: "worldInfoBefore", marker: true }, { identifier: "chatHistory", marker: true }] }));
  const page = await open(await serve(preset, "--context", ctx));
  await page.click("#tab-lore");
  const shownEntries = await page.$$eval("#lore > li", (l) => l.map((x) => x.dataset.entry));
  assert.deepEqual(shownEntries, cli("lore", "--context", ctx).activated);
  assert.equal(shownEntries.length, 2);
  await page.click("#lore > li[data-entry='w.1'] summary");
  assert.match(await page.textContent("#lore > li[data-entry='w.1']"), /at depth 2[\s\S]*It snows\./);
  await page.close();
});

test("NemoEngine 11.5.2: 49 sections with the CLI's counts, its narration group switched to another style", { skip: !haveCorpus }, async () => {
  const preset = join(corpus, "nemo__NemoEngine-11.5.2-General-RP.json");
  const outline = cli("nodes", preset, "--format", "json");
  const page = await open(await serve(preset, "--context", context), { width: 1400, height: 1000 });
  const flat = [];
  const walk = (list) => { for (const s of list) { flat.push(`${s.identifier} ${s.enabled}/${s.total}`); walk(s.sections); } };
  walk(outline.sections);
  const shownSections = await page.$$eval("#nodes li.section", (l) => l.map((x) =>
    `${x.dataset.section} ${x.querySelector(":scope > details > summary .count").textContent}`));
  assert.equal(shownSections.length, 49);
  assert.deepEqual(shownSections.sort(), flat.sort());
  await page.screenshot({ path: join(shots, "serve-nemo-sections.png") });
  await page.fill("#node-search", "narration");
  await page.click("#nodes input[data-identifier=v11-020-default-narration]");
  await page.waitForSelector("#nodes .offer");
  await page.screenshot({ path: join(shots, "serve-nemo-exclusive-group.png") });
  await after_(page, () => page.click("#nodes .offer [data-action=resolve]"));
  assert.equal(await page.isChecked("#nodes input[data-identifier=v11-020-default-narration]"), true);
  assert.equal(await page.isChecked("#nodes input[data-identifier=v11-030-narration-omega]"), false);
  assert.deepEqual(page.errors, []);
  await page.close();
});

test("a stored preset previews with its stored switches and saves them back through the checked toggle", async () => {
  const db = join(scratch, "stored.sqlite");
  const file = join(scratch, "stored-styles.json");
  writeFileSync(file, JSON.stringify(STYLES));
  const id = execFileSync(bin, ["store", "--db", db, "--server", "9", "import", file]).toString().trim();
  execFileSync(bin, ["store", "--db", db, "--server", "9", "toggle", id, "terse=off"]);
  const stored = () => cli("store", "--db", db, "--server", "9", "nodes", id, "--format", "json")
    .map((n) => [n.identifier, n.enabled]).filter(([i]) => i === "terse" || i === "lush");
  const page = await open(await serve("--db", db, "--server", "9", "--context", context));
  assert.equal(await page.isChecked("#nodes input[data-identifier=terse]"), false, "the stored switch, not the file's");
  assert.equal(await page.isVisible("#save"), true);
  await after_(page, () => page.click("#nodes input[data-identifier=lush]"));
  await page.click("#save");
  await page.waitForFunction(() => document.querySelector("#switch-note").textContent.startsWith("Saved"));
  assert.deepEqual(stored(), [["terse", false], ["lush", true]]);
  // Past the rule in the page ("anyway"), the store still refuses, and nothing is written.
  await page.click("#nodes input[data-identifier=terse]");
  await page.waitForSelector("#nodes .offer");
  await after_(page, () => page.click("#nodes .offer [data-action=anyway]"));
  await page.click("#save");
  await page.waitForFunction(() => !document.querySelector("#error").hidden);
  assert.match(await page.textContent("#error"), /not saved: .*switching `terse` on/);
  assert.deepEqual(stored(), [["terse", false], ["lush", true]]);
  // A file opened in the page is not the stored preset: no saving it there.
  await after_(page, () => page.setInputFiles("#preset-file", file));
  assert.equal(await page.isVisible("#save"), false);
  await page.close();
});
