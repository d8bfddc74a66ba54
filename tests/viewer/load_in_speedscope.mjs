#!/usr/bin/env node
// Load a profile into the real speedscope viewer (headless Chromium) and check
// that it imported: the way a user would, through the "Browse" file input.
//
//   node tests/viewer/load_in_speedscope.mjs PROFILE_FILE SCREENSHOT_PNG NAME [NAME...]
//
// Exit 0: imported, every NAME is listed in the Sandwich table (alone, or as
//         "NAME {args}" for a trace event with args), and a PNG of the
//         flame graph (Time Order view) was written to SCREENSHOT_PNG.
// Exit 1: speedscope rejected the file (alert or error panel), threw or hung on
//         it, or a NAME is missing. Reason on stderr, then the page's console.
// Exit 2: usage error, or the harness itself broke (no browser, ...).
// Speedscope's console warnings (it repairs some bad input) go to stderr.
//
// Needs `npm ci --prefix tests/viewer` and Debian's /usr/bin/chromium
// (scripts/setup.sh does both). Playwright never downloads a browser here.

import { chromium } from 'playwright-core';
import { existsSync } from 'node:fs';
import { resolve, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
// The npm package ships the built app, prepacked for the file:// protocol, so
// no web server is needed.
const APP = join(here, 'node_modules', 'speedscope', 'dist', 'release', 'index.html');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const STEP_TIMEOUT_MS = 30_000;   // any single wait
const TOTAL_TIMEOUT_MS = 120_000; // the whole run, whatever hangs

const [profileArg, pngArg, ...names] = process.argv.slice(2);
if (!profileArg || !pngArg || names.length === 0) {
  console.error('usage: load_in_speedscope.mjs PROFILE_FILE SCREENSHOT_PNG NAME [NAME...]');
  process.exit(2);
}
const profile = resolve(profileArg);
for (const [what, path] of [['profile', profile], ['speedscope build (run npm ci --prefix tests/viewer)', APP], ['chromium', CHROMIUM]]) {
  if (!existsSync(path)) {
    console.error(`speedscope: missing ${what}: ${path}`);
    process.exit(2);
  }
}

// A failed check, as opposed to a broken harness.
class CheckFailed extends Error {}

const pageLog = []; // console messages and page errors, shown on failure
let browser = null;

// Last resort: never hang a test run. Kill the browser and exit.
const watchdog = setTimeout(async () => {
  console.error(`speedscope: gave up after ${TOTAL_TIMEOUT_MS / 1000} s`);
  dumpPageLog();
  await browser?.close().catch(() => {});
  process.exit(2);
}, TOTAL_TIMEOUT_MS);

function dumpPageLog() {
  if (pageLog.length) console.error('page log:\n  ' + pageLog.slice(-50).join('\n  '));
}

// Rejects with `error` unless `promise` settles within `ms`. Playwright's own
// timeouts do not cover page.evaluate(), nor a page whose main thread is stuck.
function within(ms, promise, error) {
  let timer;
  const timeout = new Promise((_, reject) => { timer = setTimeout(() => reject(error), ms); });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

// Two animation frames: lets preact re-render and WebGL draw after a change.
// Some bad inputs import "fine" and then send speedscope's renderer into an
// endless loop (e.g. a trace event with "dur":"x"), so this is also the check
// that the page is still alive.
const settle = (page) =>
  within(STEP_TIMEOUT_MS,
    page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))),
    new CheckFailed(`speedscope stopped responding after importing ${profileArg} (page hung for ${STEP_TIMEOUT_MS / 1000} s)`));

// The names in the current profile's Sandwich table. The table is virtualised
// (only the rows in view are in the DOM), so scroll through it.
async function sandwichNames(page) {
  const names = [];
  for (let top = 0; ; ) {
    const { rows, scrolledTo, pageHeight, end } = await within(STEP_TIMEOUT_MS, page.evaluate(async (top) => {
      const th = [...document.querySelectorAll('th')].find((e) => e.textContent.trim() === 'Symbol Name');
      const scroller = th.closest('table').nextElementSibling; // the body rows live here
      scroller.scrollTop = top;
      scroller.dispatchEvent(new Event('scroll'));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      const rows = [...scroller.querySelectorAll('tr')]
        .filter((tr) => tr.children.length === 3) // skips the "No symbols found." row
        .map((tr) => tr.children[2].textContent); // Total, Self, Symbol Name
      const { scrollTop, clientHeight, scrollHeight } = scroller;
      return { rows, scrolledTo: scrollTop, pageHeight: clientHeight, end: scrollTop + clientHeight + 1 >= scrollHeight };
    }, top), new CheckFailed('speedscope stopped responding in the Sandwich view'));
    names.push(...rows);
    if (end || scrolledTo < top) return names;
    // A page further on: the list also renders a quarter page either side of
    // the view, so this leaves no gap.
    top = scrolledTo + pageHeight;
  }
}

async function run() {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    timeout: STEP_TIMEOUT_MS,
    args: [
      '--no-sandbox', // we run as root in a VM/container
      // speedscope draws with WebGL and shows "Something went wrong" without it;
      // there is no GPU, so use the SwiftShader software renderer.
      '--use-angle=swiftshader',
      '--enable-unsafe-swiftshader',
    ],
  });
  const page = await browser.newPage({ viewport: { width: 1280, height: 720 } });
  page.setDefaultTimeout(STEP_TIMEOUT_MS);

  page.on('console', (m) => pageLog.push(`console.${m.type()}: ${m.text()}`));
  page.on('pageerror', (e) => pageLog.push(`pageerror: ${e.message}`));
  // speedscope reports "Unrecognized format!" and "...but it's empty!" with
  // window.alert(); record the text and dismiss it so the page goes on.
  let alertText = null;
  page.on('dialog', async (d) => {
    alertText = d.message();
    pageLog.push(`dialog(${d.type()}): ${alertText}`);
    await d.dismiss().catch(() => {});
  });

  await page.goto(pathToFileURL(APP).href);
  // The landing page's "Browse" label wraps a hidden <input type=file id=file>.
  await page.locator('input#file').setInputFiles(profile);

  // Import outcome: the view tabs appear (success), an alert (unrecognized or
  // empty profile), or the error panel (an importer threw, or no WebGL).
  const sandwichTab = page.getByText(/^\W*Sandwich$/); // tab text is an emoji + "Sandwich"
  const errorPanel = page.getByText('Something went wrong.');
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  const noResult = new CheckFailed(`speedscope showed no import result for ${profileArg} within ${STEP_TIMEOUT_MS / 1000} s (still busy, or hung)`);
  for (;;) {
    if (alertText !== null) throw new CheckFailed(`speedscope rejected ${profileArg}: ${alertText}`);
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw noResult;
    // isVisible() does not wait, but it hangs if the page is busy importing.
    const [failed, imported] = await within(remaining,
      Promise.all([errorPanel.isVisible(), sandwichTab.isVisible()]), noResult);
    if (failed) throw new CheckFailed(`speedscope failed to import ${profileArg}: "Something went wrong." (an importer threw; see page log)`);
    if (imported) break;
    await page.waitForTimeout(100);
  }
  await settle(page);

  // The default view after import is the "Time Order" flame graph.
  await page.getByText(/^\W*Time Order$/).click();
  await settle(page);
  await page.screenshot({ path: resolve(pngArg) });

  // A file with several threads/processes becomes several profiles, shown one
  // at a time; the toolbar title then ends in "(i/N)" and the "n" key moves to
  // the next one. The Sandwich table only lists the current profile's frames.
  const toolbar = sandwichTab.locator('xpath=../..');
  const position = async () => {
    const m = /\((\d+)\/(\d+)\)\s*$/m.exec(await toolbar.innerText());
    return m ? [Number(m[1]), Number(m[2])] : [1, 1];
  };
  const [, profiles] = await position();

  await sandwichTab.click();
  await page.getByText('Symbol Name', { exact: true }).waitFor();
  const listed = new Set();
  for (let i = 1; i <= profiles; i++) {
    if (i > 1) {
      await page.keyboard.press('n');
      await settle(page);
      const [now] = await position();
      if (now !== i) throw new Error(`expected profile ${i}/${profiles} after pressing "n", got ${now}`);
    }
    for (const name of await sandwichNames(page)) listed.add(name);
  }

  // An uncaught exception means speedscope choked on something in the file,
  // even if it drew a view.
  const pageErrors = pageLog.filter((l) => l.startsWith('pageerror:'));
  if (pageErrors.length) throw new CheckFailed(`speedscope threw while showing ${profileArg}: ${pageErrors[0]}`);

  // speedscope names a Trace Event Format frame by its name and its args
  // ("aten::conv2d {"call":3,...}"), so a call with args is listed under
  // its name followed by a space and a JSON object.
  const isListed = (name) => listed.has(name) || [...listed].some((l) => l.startsWith(`${name} {`));
  const missing = [];
  for (const name of names) {
    if (isListed(name)) console.log(`found: ${name}`);
    else missing.push(name);
  }
  if (missing.length) {
    const sample = [...listed].slice(0, 20).join(', ');
    throw new CheckFailed(`not in the Sandwich table: ${missing.join(', ')} (listed ${listed.size}: ${sample}${listed.size > 20 ? ', ...' : ''})`);
  }
  // Imported, but speedscope may have patched things up (e.g. unbalanced B/E
  // trace events); show that without failing, so callers can decide.
  for (const l of pageLog) if (l.startsWith('console.warning:')) console.error(`speedscope warned: ${l.slice(17)}`);
  if (profiles > 1) console.log(`profiles: ${profiles}`);
  console.log(`speedscope: imported ${profileArg} (${listed.size} frames listed)`);
}

let code = 0;
try {
  await run();
} catch (e) {
  code = e instanceof CheckFailed ? 1 : 2;
  console.error(`speedscope: ${e instanceof CheckFailed ? '' : 'harness error: '}${e.message}`);
  dumpPageLog();
} finally {
  await browser?.close().catch(() => {});
  clearTimeout(watchdog);
}
process.exit(code);
