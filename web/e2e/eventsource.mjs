// Drives headless Chromium for roomhub's Go browser tests (api/browser_test.go).
// Usage: node eventsource.mjs <hubURL> <roomId> <token>
// The page opens a plain EventSource on the room's stream, with no client code
// for reconnection. Line protocol: prints READY once the stream is open; for
// each "COUNT n" on stdin, waits until n comment.created events arrived and
// prints {"got":[{id,data}],"opens":k} as one JSON line; "QUIT" ends.
import { launch } from './launch.mjs';
import readline from 'node:readline';

const [url, room, token] = process.argv.slice(2);
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(url + '/health'); // same origin, and not the demo page (which opens its own stream)
  await page.evaluate(({ room, token }) => {
    window.__got = [];
    window.__opens = 0;
    const es = new EventSource(`/api/v1/rooms/${room}/stream?token=${encodeURIComponent(token)}`);
    es.onopen = () => { window.__opens++; };
    es.addEventListener('comment.created', (e) => window.__got.push({ id: e.lastEventId, data: e.data }));
  }, { room, token });
  await page.waitForFunction(() => window.__opens > 0, null, { timeout: 15000 });
  console.log('READY');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, arg] = line.trim().split(' ');
    if (cmd === 'QUIT') break;
    if (cmd !== 'COUNT') continue;
    try {
      await page.waitForFunction((n) => window.__got.length >= n, Number(arg), { timeout: 20000 });
      console.log(JSON.stringify(await page.evaluate(() => ({ got: window.__got, opens: window.__opens }))));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e) }));
    }
  }
} finally {
  await browser.close();
}
