// Drives headless Chromium for roomhub's Go browser tests (web/browser_test.go).
// Usage: node pagestream.mjs <hubURL> <rooms, comma-separated> <token>
// The page uses the SDK's PageStream (rooms and the bell on one connection).
// Line protocol: prints READY once the stream is open; for each "COUNT n" on
// stdin, waits until n events (comment.created and notification.created)
// arrived and prints {"got":[{type,roomId,k,id}],"count":unread,"opens":k}
// as one JSON line; "QUIT" ends.
import { launch, serveCounts } from './launch.mjs';

const [url, rooms, token] = process.argv.slice(2);
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(url + '/health'); // same origin, and not the demo page (which opens its own stream)
  await page.evaluate(async ({ rooms, token }) => {
    const { PageStream } = await import('/static/roomhub.js');
    window.__got = [];
    window.__opens = 0;
    window.__count = null;
    const ps = new PageStream({
      getToken: () => token, rooms: rooms.split(',').map(Number), notifications: true, minDelay: 100,
      onStatus: (s) => { if (s === 'open') window.__opens++; },
      onCount: (n) => { window.__count = n; },
    });
    ps.on('comment.created', (d) => window.__got.push({ type: 'comment.created', roomId: d.roomId, k: d.k }));
    ps.on('notification.created', (d) => window.__got.push({ type: 'notification.created', k: d.notificationId }));
  }, { rooms, token });
  await page.waitForFunction(() => window.__opens > 0 && window.__count !== null, null, { timeout: 15000 });
  await serveCounts(page);
} finally {
  await browser.close();
}
