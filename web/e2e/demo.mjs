// Drives headless Chromium on the demo page for roomhub's Go browser tests.
// Usage: node demo.mjs <pageURL> <screenshot dir>
// Prints READY once the page's stream is open. Commands on stdin, one JSON
// line answered each: "TEXT <selector> <text>" (or "TEXT <selector> | <text>"
// when the selector has spaces; selectors pierce shadow roots) waits until
// the first match's text contains text; "GONE …" waits until it does not;
// "WAIT <expression>" waits until the expression is truthy in the page;
// "SHOT <name> <width>" writes <dir>/<name>.png at that width;
// "CLICK <selector>" clicks the element (the selector may hold spaces); "KEY <key>" presses a key
// (Enter, Tab, ArrowRight…) where the focus is; "EVAL <expression>" answers
// {"value": …} (a promise is awaited); "GRANT notifications" grants the
// page's origin that permission; "SWPUSH <scope> <data>" delivers a push to
// the service worker registered for scope (DevTools' deliverPushMessage);
// "PROTOCOLS" answers {"value":
// {path: protocol}} for every response the page received (h2, http/1.1);
// "ERRORS" lists console errors and page errors; "QUIT" ends.
import { launch } from './launch.mjs';
import readline from 'node:readline';
import path from 'node:path';

const [url, dir] = process.argv.slice(2);
const browser = await launch(url);
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1200, height: 800 }, ignoreHTTPSErrors: url.startsWith('https:') });
  const protocols = {};
  const cdp = await page.context().newCDPSession(page);
  cdp.on('Network.responseReceived', (e) => { protocols[new URL(e.response.url).pathname] = e.response.protocol; });
  const registrations = new Map(); // service worker scope → registration id (SWPUSH)
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e) => {
    for (const r of e.registrations) if (!r.isDeleted) registrations.set(r.scopeURL, r.registrationId);
  });
  await cdp.send('Network.enable');
  await cdp.send('ServiceWorker.enable');
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('requestfailed', (r) => {
    // A stream the page closed itself (the SDK reconnecting with other
    // members, or a new token) is aborted by design, not a failure.
    if (r.failure()?.errorText === 'net::ERR_ABORTED' && new URL(r.url()).pathname.endsWith('/stream')) return;
    errors.push(`request failed: ${r.method()} ${r.url()} ${r.failure()?.errorText}`);
  });
  await page.goto(url);
  await page.waitForFunction(() => document.getElementById('status')?.textContent === 'open', null, { timeout: 15000 });
  console.log('READY');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, a, ...rest] = line.trim().split(' ');
    try {
      if (cmd === 'QUIT') break;
      if (cmd === 'TEXT' || cmd === 'GONE') {
        // "<selector> <text>", or "<selector with spaces> | <text>"; the
        // selector pierces shadow roots (the inbox element's).
        const cut = line.indexOf(' | ');
        const sel = cut < 0 ? a : line.slice(line.indexOf(' ') + 1, cut).trim();
        const want = cut < 0 ? rest.join(' ') : line.slice(cut + 3).trim();
        // TEXT: the first match is shown (not hidden, not display:none) and
        // has the text; GONE: it is not, or lacks the text.
        const has = async () => {
          const all = await page.locator(sel).allTextContents();
          return all.length > 0 && all[0].includes(want) && await page.locator(sel).first().isVisible();
        };
        const end = Date.now() + 15000;
        while ((await has()) !== (cmd === 'TEXT')) {
          if (Date.now() > end) throw new Error(`${sel}: ${JSON.stringify(await page.locator(sel).allTextContents())}, want ${cmd === 'GONE' ? 'no ' : ''}${JSON.stringify(want)}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'WAIT') {
        // Polled from here: waitForFunction with a string evaluates it in the
        // page, which the page's CSP (no unsafe-eval) refuses.
        const expr = [a, ...rest].join(' ');
        const end = Date.now() + 15000;
        while (!(await page.evaluate(expr))) {
          if (Date.now() > end) throw new Error(`timed out waiting for ${expr}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'PROTOCOLS') {
        console.log(JSON.stringify({ ok: true, value: protocols }));
      } else if (cmd === 'SHOT') {
        await page.setViewportSize({ width: Number(rest[0]), height: 800 });
        await page.screenshot({ path: path.join(dir, `${a}.png`), fullPage: true });
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'CLICK') {
        await page.click([a, ...rest].join(' '), { timeout: 15000 });
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'KEY') {
        await page.keyboard.press(a);
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'EVAL') {
        const value = await page.evaluate([a, ...rest].join(' '));
        console.log(JSON.stringify({ ok: true, value }));
      } else if (cmd === 'GRANT') { // GRANT notifications: the page's origin may show them
        await page.context().grantPermissions([a], { origin: new URL(url).origin });
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'SWPUSH') { // SWPUSH <scope> <data>: a push to the worker of that scope, as a push service would
        const scope = new URL(a, url).href;
        const end = Date.now() + 15000;
        while (!registrations.has(scope)) {
          if (Date.now() > end) throw new Error(`no service worker registration for ${scope}: ${[...registrations.keys()]}`);
          await new Promise((r) => setTimeout(r, 50));
        }
        await cdp.send('ServiceWorker.deliverPushMessage', { origin: new URL(url).origin, registrationId: registrations.get(scope), data: rest.join(' ') });
        console.log(JSON.stringify({ ok: true }));
      } else if (cmd === 'ERRORS') {
        console.log(JSON.stringify({ ok: true, errors }));
      }
    } catch (e) {
      console.log(JSON.stringify({ error: String(e) }));
    }
  }
} finally {
  await browser.close();
}
