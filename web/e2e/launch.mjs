// What every driver of web/e2e shares: the headless Chromium it uses
// (Debian's chromium, nothing downloaded, no background traffic; for an
// https:// URL, the tests' own certificate, certificate errors are ignored)
// and the stream drivers' line protocol.
import { chromium } from 'playwright-core';
import readline from 'node:readline';

// chromiumPath is the browser's binary.
export function chromiumPath() {
  return process.env.CHROMIUM || '/usr/bin/chromium';
}

// chromiumArgs are its flags; insecure: certificate errors are ignored.
export function chromiumArgs(insecure) {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  if (insecure) args.push('--ignore-certificate-errors');
  return args;
}

// launch is the driver's browser: the test process's shared one
// (server.mjs) when ROOMHUB_BROWSER_WS names it, else one of its own.
// Either way, browser.close() leaves nothing of the driver's behind.
export function launch(url = '') {
  if (process.env.ROOMHUB_BROWSER_WS) return chromium.connect(process.env.ROOMHUB_BROWSER_WS);
  return chromium.launch({ executablePath: chromiumPath(), args: chromiumArgs(url.startsWith('https:')) });
}

// serveCounts is the line protocol of the stream drivers: it prints READY,
// then for each "COUNT n" on stdin waits until the page's window.__got holds
// n events and prints {"got":[…],"count":…,"opens":k} as one JSON line
// (count when the page keeps one); "QUIT" ends.
export async function serveCounts(page) {
  console.log('READY');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(' ');
    if (cmd === 'QUIT') break;
    if (cmd !== 'COUNT') continue;
    try {
      await page.waitForFunction((n) => window.__got.length >= n, Number(arg), { timeout: 20000 });
      console.log(JSON.stringify(await page.evaluate(() => ({ got: window.__got, count: window.__count, opens: window.__opens }))));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e) }));
    }
  }
}
