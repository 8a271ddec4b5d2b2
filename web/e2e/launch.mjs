// What every driver of web/e2e shares: the headless Chromium it starts
// (Debian's chromium, nothing downloaded, no background traffic; for an
// https:// URL, the tests' own certificate, certificate errors are ignored)
// and the stream drivers' line protocol.
import { chromium } from 'playwright-core';
import readline from 'node:readline';

export function launch(url = '') {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  if (url.startsWith('https:')) args.push('--ignore-certificate-errors');
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args });
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
