// Drives headless Chromium on a page with <roomhub-inbox> for roomhub's Go
// browser tests. Usage: node inbox.mjs <pageURL> <screenshot dir>
// Prints READY once the element has its counts (with "#no-counts" in the
// page URL, once it is drawn: a page the hub refuses; with "#no-element",
// once the page is loaded: a page of the SDK alone). Commands on stdin, one JSON
// line answered each; selectors pierce the element's shadow root:
// "TEXT <selector> | <text>" waits until an element matching the selector
// holds text exactly; "COUNT <selector> | <n>" waits until n elements match;
// "HIDDEN <selector>" / "SHOWN <selector>" wait for it; "CLICK <selector>";
// "FILL <selector> | <text>" types into a field; "GOTO <path>" loads a page
// of the same site; "URL" answers {"value": the page's path};
// "KEY <key>" presses a key where the focus is; "FOCUS" answers {"value":
// the focused element's part or aria-label (else its text), inside the
// shadow root too}; "FOCUSED | <that>" waits until it is that;
// "EVAL <expression>" (window.__longtasks: the long tasks' durations, ms;
// window.__loaf: the long animation frames, with the scripts that ran);
// "PROFILE start" / "PROFILE stop <file>" (a .cpuprofile in dir);
// "SHOT <name> <width>"; "SIZE <width>" sets the viewport's width;
// "SCHEME light|dark" emulates
// prefers-color-scheme; "AXE" runs axe-core (WCAG 2 A and AA) on the page,
// shadow roots included, and answers {"value": [violations]}; "ERRORS"; "QUIT".
import { launch } from './launch.mjs';
import readline from 'node:readline';
import path from 'node:path';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';

const axeSource = await readFile(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

const [url, dir] = process.argv.slice(2);

// across runs f again while the page navigates (a link, a form, a script's
// location.assign): what a waiting command reads is on the next page.
async function across(f) {
  for (;;) {
    try {
      return await f();
    } catch (e) {
      if (!/Execution context was destroyed|navigat/i.test(String(e))) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
const browser = await launch(url);
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  // Long tasks (over 50 ms on the main thread), for "EVAL window.__longtasks".
  await page.addInitScript(() => {
    window.__longtasks = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__longtasks.push(Math.round(e.duration)); })
      .observe({ type: 'longtask', buffered: true });
    window.__hubErrors = []; // roomhub-error details, for a test's failure message
    document.addEventListener('roomhub-error', (e) => window.__hubErrors.push(e.detail));
    window.__loaf = [];
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__loaf.push(e.toJSON()); })
      .observe({ type: 'long-animation-frame', buffered: true });
  });
  await page.goto(url);
  const { hash } = new URL(url);
  if (!hash.includes('no-element')) await page.locator('roomhub-inbox [part="bell"][aria-label]').waitFor({ timeout: 15000 });
  if (!hash.includes('no-counts') && !hash.includes('no-element')) {
    await page.waitForFunction(() => !!document.querySelector('roomhub-inbox')?.counts, null, { timeout: 15000 });
  }
  console.log('READY');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, a, ...rest] = line.trim().split(' ');
    const sel = [a, ...rest].join(' ');
    try {
      if (cmd === 'QUIT') break;
      const cut = line.indexOf(' | '); // "<cmd> <selector> | <argument>"
      const s = cut < 0 ? sel : line.slice(line.indexOf(' ') + 1, cut).trim();
      const arg = cut < 0 ? '' : line.slice(cut + 3).trim();
      if (cmd === 'TEXT') {
        const end = Date.now() + 15000;
        let texts = [];
        while (!(texts = (await across(() => page.locator(s).allTextContents())).map((t) => t.trim())).includes(arg)) {
          if (Date.now() > end) throw new Error(`${s}: ${JSON.stringify(texts)}, want ${JSON.stringify(arg)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } else if (cmd === 'COUNT') {
        const want = Number(arg);
        const end = Date.now() + 15000;
        while ((await across(() => page.locator(s).count())) !== want) {
          if (Date.now() > end) throw new Error(`${s}: ${await page.locator(s).count()} elements, want ${want}`);
          await new Promise((r) => setTimeout(r, 50));
        }
      } else if (cmd === 'HIDDEN' || cmd === 'SHOWN') {
        await page.locator(sel).first().waitFor({ state: cmd === 'HIDDEN' ? 'hidden' : 'visible', timeout: 15000 });
      } else if (cmd === 'CLICK') {
        await page.locator(sel).first().click({ timeout: 15000 });
      } else if (cmd === 'FILL') {
        await page.locator(s).first().fill(arg, { timeout: 15000 });
      } else if (cmd === 'GOTO') {
        await page.goto(new URL(a, page.url()).href);
      } else if (cmd === 'URL') {
        console.log(JSON.stringify({ ok: true, value: new URL(page.url()).pathname }));
        continue;
      } else if (cmd === 'KEY') {
        await page.keyboard.press(a);
      } else if (cmd === 'FOCUS' || cmd === 'FOCUSED') {
        const focused = () => page.evaluate(() => {
          let e = document.activeElement;
          while (e && e.shadowRoot && e.shadowRoot.activeElement) e = e.shadowRoot.activeElement;
          return e ? (e.getAttribute('part') || e.getAttribute('aria-label') || e.textContent.trim()) : '';
        });
        let value = await focused();
        const end = Date.now() + 15000;
        while (cmd === 'FOCUSED' && value !== arg) { // waits until the focus is there
          if (Date.now() > end) throw new Error(`the focus is on ${JSON.stringify(value)}, want ${JSON.stringify(arg)}`);
          await new Promise((r) => setTimeout(r, 50));
          value = await focused();
        }
        console.log(JSON.stringify({ ok: true, value }));
        continue;
      } else if (cmd === 'EVAL') {
        const value = await page.evaluate(sel);
        console.log(JSON.stringify({ ok: true, value }));
        continue;
      } else if (cmd === 'SHOT') {
        await page.setViewportSize({ width: Number(rest[0]), height: 800 });
        await page.screenshot({ path: path.join(dir, `${a}.png`), fullPage: true });
      } else if (cmd === 'SIZE') {
        await page.setViewportSize({ width: Number(a), height: 800 });
      } else if (cmd === 'SCHEME') {
        await page.emulateMedia({ colorScheme: a });
      } else if (cmd === 'AXE') {
        // After every animation (the panel fades in): axe reads colours
        // as they are painted, and a half-faded text fails its contrast.
        await page.evaluate(() => {
          const roots = [document, ...[...document.querySelectorAll('*')].map((e) => e.shadowRoot).filter(Boolean)];
          return Promise.all(roots.flatMap((r) => r.getAnimations()).map((a) => a.finished));
        });
        if (!(await page.evaluate('typeof window.axe'))?.includes('object')) await page.evaluate(axeSource);
        const value = await page.evaluate(async () => {
          const r = await window.axe.run(document, { runOnly: ['wcag2a', 'wcag2aa', 'best-practice'] });
          return r.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.join(' ')) }));
        });
        console.log(JSON.stringify({ ok: true, value }));
        continue;
      } else if (cmd === 'PROFILE') { // PROFILE start | PROFILE stop <file>: a CPU profile (.cpuprofile) of the page
        page.cdp ||= await page.context().newCDPSession(page);
        if (a === 'start') {
          await page.cdp.send('Profiler.enable');
          await page.cdp.send('Profiler.start');
        } else {
          const { profile } = await page.cdp.send('Profiler.stop');
          const { writeFile } = await import('node:fs/promises');
          await writeFile(path.join(dir, rest[0] || 'page.cpuprofile'), JSON.stringify(profile));
        }
      } else if (cmd === 'ERRORS') {
        console.log(JSON.stringify({ ok: true, errors }));
        continue;
      }
      console.log(JSON.stringify({ ok: true }));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e) }));
    }
  }
} finally {
  await browser.close();
}
