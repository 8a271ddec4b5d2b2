// Drives several tabs of one user in one headless Chromium (one browser
// context: they share Web Locks and BroadcastChannel) for the Go test of
// shared page streams (web/browser_test.go).
// Usage: node tabs.mjs <hubURL> <token> <rooms of tab 0> <rooms of tab 1> …
// Each tab opens hub.page({rooms, notifications: true}) and records
// comment.created and notification.created, its errors and evictions. Line
// protocol: READY once every tab's stream is open; then
//   STATE             → {"tabs":[{"got":[…],"leader":bool,"status":…,"count":n,"counts":{…},
//                        "errors":[{status,code,roomId}],"evicted":n,"leaderSince":ms}|null],
//                        "closedAt":ms (when the last CLOSE or FREEZE began)}
//   WAIT i n          → waits until tab i holds n events, then STATE
//   CLOSE i           → closes tab i (null in STATE from then), then STATE
//   OPEN rooms        → opens one more tab, waits until it is open, then STATE
//   ROOMS i rooms     → tab i's setRooms(rooms), then STATE
//   FREEZE i / THAW i → stops tab i's JavaScript (the debugger pauses it: a
//                       hung or frozen tab), or lets it run again, then STATE
//   QUIT
import { launch } from './launch.mjs';
import readline from 'node:readline';

const [url, token, ...tabRooms] = process.argv.slice(2);
const browser = await launch(url);
const context = await browser.newContext();
const tabs = [];
const frozen = new Map(); // tab → its CDP session, paused
let closedAt = 0; // when the last CLOSE or FREEZE began (ms since the epoch)

async function openTab(rooms) {
  const page = await context.newPage();
  await page.goto(url + '/health');
  await page.evaluate(async ({ rooms, token }) => {
    const { RoomHub } = await import('/static/roomhub.js');
    window.__got = [];
    window.__errors = [];
    window.__evicted = 0;
    const hub = new RoomHub({ getToken: () => token });
    const ps = hub.page({
      rooms: rooms.split(',').filter(Boolean).map(Number), notifications: true, minDelay: 100,
      onCount: (n) => { window.__count = n; },
      onError: (e) => window.__errors.push({ status: e.status, code: e.code, roomId: e.roomId ?? null }),
      onEvicted: () => { window.__evicted++; },
    });
    window.__ps = ps;
    // When this tab took the lead (ms since the epoch): the takeover time.
    const watch = setInterval(() => {
      if (ps.isLeader && !window.__leaderSince) window.__leaderSince = Date.now();
      if (!ps.isLeader) window.__leaderSince = 0;
    }, 10);
    addEventListener('pagehide', () => clearInterval(watch));
    ps.on('comment.created', (d, id) => window.__got.push({ type: 'comment.created', roomId: d.roomId, k: d.k, id }));
    ps.on('notification.created', (d, id) => window.__got.push({ type: 'notification.created', k: d.notificationId, id }));
  }, { rooms, token });
  await page.waitForFunction(() => window.__ps.status === 'open', null, { timeout: 20000 });
  tabs.push(page);
}

async function state() {
  const out = [];
  for (const [i, p] of tabs.entries()) {
    if (!p || frozen.has(i)) { out.push(null); continue; }
    out.push(await p.evaluate(() => ({
      got: window.__got, leader: !!window.__ps.isLeader, status: window.__ps.status,
      count: window.__ps.count, counts: window.__ps.counts, errors: window.__errors, evicted: window.__evicted,
      leaderSince: window.__leaderSince ?? 0,
    })));
  }
  return { tabs: out, closedAt };
}

try {
  for (const r of tabRooms) await openTab(r);
  console.log('READY');
  const rl = readline.createInterface({ input: process.stdin });
  for await (const line of rl) {
    const [cmd, a, b] = line.trim().split(' ');
    if (cmd === 'QUIT') break;
    try {
      if (cmd === 'WAIT') {
        await tabs[Number(a)].waitForFunction((n) => window.__got.length >= n, Number(b), { timeout: 20000 });
      } else if (cmd === 'CLOSE') {
        closedAt = Date.now();
        await tabs[Number(a)].close();
        tabs[Number(a)] = null;
      } else if (cmd === 'OPEN') {
        await openTab(a || '');
      } else if (cmd === 'ROOMS') {
        await tabs[Number(a)].evaluate((r) => window.__ps.setRooms(r.split(',').map(Number)), b);
      } else if (cmd === 'FREEZE') {
        // Its JavaScript stops (paused in the debugger): no freeze event,
        // as for a tab the browser froze or that hangs.
        closedAt = Date.now();
        const cdp = await context.newCDPSession(tabs[Number(a)]);
        await cdp.send('Debugger.enable');
        await cdp.send('Debugger.pause');
        frozen.set(Number(a), cdp);
      } else if (cmd === 'THAW') {
        const cdp = frozen.get(Number(a));
        frozen.delete(Number(a));
        await cdp.send('Debugger.resume');
        await cdp.detach();
      }
      console.log(JSON.stringify(await state()));
    } catch (e) {
      console.log(JSON.stringify({ error: String(e) }));
    }
  }
} finally {
  await browser.close();
}
