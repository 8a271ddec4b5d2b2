// Drives headless Chromium for roomhub's Go browser tests (web/browser_test.go).
// Usage: node eventsource.mjs <hubURL> <roomId> <token>
// The page opens a plain EventSource on the room's stream, with no client code
// for reconnection. Line protocol: prints READY once the stream is open; for
// each "COUNT n" on stdin, waits until n comment.created events arrived and
// prints {"got":[{id,data}],"opens":k} as one JSON line; "QUIT" ends.
import { launch, serveCounts } from './launch.mjs';

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
  await serveCounts(page);
} finally {
  await browser.close();
}
