// Unit tests of the SDK against a fake EventSource and a fake fetch:
//   node --test web/test/
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { RoomHub, PageStream, Status } from '../static/roomhub.js';

// The SDK hands events to the page in slices of SLICE_MS of its clock
// (sdk/slicer.js), the rest in later tasks. These tests check what it does
// with events, not when, and assert right after emitting them: their clock
// stands still, so every event is handled as it is emitted however loaded
// the machine (beside a busy loop and a build, one handler once took over
// 8 ms and put the rest past a test's assertions).
Object.defineProperty(globalThis, 'performance', { value: { now: () => 0 }, configurable: true });

class FakeEventSource {
  static all = [];
  constructor(url) {
    this.url = new URL(url, 'http://hub.test');
    this.listeners = new Map();
    this.closed = false;
    FakeEventSource.all.push(this);
  }
  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }
  close() { this.closed = true; }
  // test side
  open() { this.onopen?.({}); }
  fail() { this.onerror?.({}); }
  emit(type, data, id = '') {
    for (const fn of this.listeners.get(type) || []) fn({ type, data: JSON.stringify(data), lastEventId: id, target: this });
  }
  static last() { return FakeEventSource.all[FakeEventSource.all.length - 1]; }
}

const flush = () => new Promise((r) => setImmediate(r));

// TICKETS is the route a stream asks its ticket from (the tests' hubs
// answer none, so streams carry the token).
const TICKETS = '/api/v1/stream-tickets';

// ticketless answers the ticket route 404, as a hub from before tickets
// (the only answer that puts the token in a stream's URL), and the rest
// through fetch.
const ticketless = (fetch) => async (url, init) => (new URL(url, 'http://x').pathname === TICKETS
  ? { ok: false, status: 404, json: async () => ({ isSuccess: false, code: 'COMMON404', message: 'no such route' }) }
  : fetch(url, init));

function setup({ status = 200 } = {}) {
  FakeEventSource.all = [];
  let n = 0;
  const probe = { status };
  const hub = new RoomHub({
    baseUrl: 'http://hub.test',
    getToken: async () => `tok${++n}`,
    EventSource: FakeEventSource,
    fetch: ticketless(async () => ({
      ok: probe.status === 200, status: probe.status,
      json: async () => (probe.status === 200
        ? { isSuccess: true, code: 'COMMON200', result: { count: 0 } }
        : { isSuccess: false, code: probe.status === 403 ? 'COMMON403' : 'AUTH4001', message: 'no' }),
    })),
  });
  return { hub, probe };
}

test('a room stream sends a fresh token and the last id on every reconnect', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { hub } = setup();
    const statuses = [];
    const room = hub.room(42, { onStatus: (s) => statuses.push(s), minDelay: 100 });
    const got = [];
    room.on('comment.created', (d, id) => got.push([d.n, id]));
    await flush();
    let es = FakeEventSource.last();
    assert.equal(es.url.pathname, '/api/v1/rooms/42/stream');
    assert.equal(es.url.searchParams.get('token'), 'tok1');
    assert.equal(es.url.searchParams.get('lastEventId'), null);
    es.open();
    es.emit('comment.created', { n: 1 }, '1-0');
    es.emit('comment.created', { n: 2 }, '2-0');
    es.fail(); // the hub ended the stream (token expiry, a deploy)
    assert.ok(es.closed, 'the SDK closes the EventSource instead of letting it retry with the old token');
    mock.timers.tick(200);
    await flush();
    es = FakeEventSource.last();
    assert.equal(FakeEventSource.all.length, 2);
    assert.equal(es.url.searchParams.get('token'), 'tok2');
    assert.equal(es.url.searchParams.get('lastEventId'), '2-0');
    es.open();
    assert.deepEqual(got, [[1, '1-0'], [2, '2-0']]);
    assert.deepEqual(statuses, [Status.OPEN, Status.RECONNECTING, Status.OPEN]);
    room.close();
    assert.equal(room.status, Status.CLOSED);
  } finally {
    mock.timers.reset();
  }
});

test('a refusal is reported, not retried in a loop', async () => {
  for (const [status, connects] of [[403, 1], [401, 2]]) {
    mock.timers.enable({ apis: ['setTimeout'] });
    try {
      const { hub } = setup({ status });
      const errors = [];
      const room = hub.room(7, { onError: (e) => errors.push(e.code), minDelay: 10 });
      for (let i = 0; i < 5; i++) {
        await flush();
        FakeEventSource.last()?.fail();
        await flush();
        mock.timers.tick(1000);
      }
      await flush();
      assert.equal(FakeEventSource.all.length, connects, `${status}: connects`);
      assert.equal(room.status, Status.CLOSED, `${status}: closed`);
      assert.equal(errors.length, 1, `${status}: one error reported`);
    } finally {
      mock.timers.reset();
    }
  }
});

test('lagged resumes at once from the last id; evicted stops for good', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { hub } = setup();
    let evicted = null;
    const room = hub.room(1, { onEvicted: (d) => { evicted = d; } });
    await flush();
    let es = FakeEventSource.last();
    es.open();
    es.emit('like.toggled', {}, '5-0');
    es.emit('system.lagged', { reason: 'slow' });
    mock.timers.tick(0);
    await flush();
    es = FakeEventSource.last();
    assert.equal(FakeEventSource.all.length, 2);
    assert.equal(es.url.searchParams.get('lastEventId'), '5-0');
    es.open();
    es.emit('system.evicted', { reason: 'connection limit' });
    mock.timers.tick(60000);
    await flush();
    assert.equal(FakeEventSource.all.length, 2, 'no reconnect after eviction');
    assert.deepEqual(evicted, { reason: 'connection limit' });
    assert.equal(room.status, Status.CLOSED);
  } finally {
    mock.timers.reset();
  }
});

test('wildcard listeners, gap callbacks, presence and the unread count', async () => {
  const { hub } = setup();
  const gaps = [];
  const all = [];
  const room = hub.room(3, { onGap: (g) => gaps.push(g) });
  room.on('*', (d, id, t) => all.push(t));
  const counts = [];
  const bell = hub.notifications({ onCount: (n) => counts.push(n) });
  await flush();
  const [res, bes] = FakeEventSource.all;
  assert.equal(bes.url.pathname, '/api/v1/notifications/stream');
  res.emit('system.gap', { requested: '1-0', oldest: '9-0' });
  res.emit('presence.update', { onlineUsers: [1, 2], count: 2 }, '10-0');
  res.emit('retrospect.created', { x: 1 }, '11-0');
  assert.deepEqual(gaps, [{ requested: '1-0', oldest: '9-0' }]);
  assert.deepEqual(all, ['system.gap', 'presence.update', 'retrospect.created']);
  assert.deepEqual(room.online, [1, 2]);
  assert.equal(room.lastEventId, '11-0');
  bes.emit('notification.unread', { count: 2 });
  bes.emit('notification.created', { notificationId: '3:11-0', unread: 3 }, '1-0');
  bes.emit('notification.read', { notificationIds: ['3:11-0'], unread: 2 }, '2-0');
  assert.deepEqual(counts, [2, 3, 2]);
  assert.equal(bell.lastEventId, '2-0');
  room.close();
  bell.close();
});

test('fetchGap pages through the events API', async () => {
  const pages = [
    { events: [{ id: '2-0' }, { id: '3-0' }], lastId: '3-0', hasMore: true },
    { events: [{ id: '4-0' }], lastId: '4-0', hasMore: false },
  ];
  const asked = [];
  const hub = new RoomHub({
    getToken: () => 't', EventSource: FakeEventSource,
    fetch: async (url) => {
      asked.push(new URL(url, 'http://x').searchParams.get('since'));
      return { ok: true, status: 200, json: async () => ({ isSuccess: true, result: pages.shift() }) };
    },
  });
  const evs = await hub.fetchGap(3, '1-0');
  assert.deepEqual(evs.map((e) => e.id), ['2-0', '3-0', '4-0']);
  assert.deepEqual(asked, ['1-0', '3-0']);
});

test('a page stream: one connection, per-room presence, the bell, setRooms resumes from its id', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    const { hub } = setup();
    const counts = [];
    const presence = [];
    const gaps = [];
    const page = hub.page({
      rooms: [42, 43, 42], notifications: true, onCount: (n) => counts.push(n),
      onPresence: (r, d) => presence.push([r, d.count]), onGap: (g) => gaps.push(g),
    });
    const got = [];
    page.on('comment.created', (d, id) => got.push([d.roomId, d.k, id]));
    await flush();
    let es = FakeEventSource.last();
    assert.equal(FakeEventSource.all.length, 1);
    assert.equal(es.url.pathname, '/api/v1/stream');
    assert.equal(es.url.searchParams.get('rooms'), '42,43');
    assert.equal(es.url.searchParams.get('notifications'), 'true');
    es.open();
    es.emit('notification.unread', { count: 1 });
    es.emit('presence.update', { roomId: 43, onlineUsers: [7], count: 1 }, 'p1,42:1-0,43:2-0,n:0-0');
    es.emit('comment.created', { roomId: 42, k: 'a' }, 'p1,42:3-0,43:2-0,n:0-0');
    es.emit('notification.created', { unread: 2 }, 'p1,42:3-0,43:2-0,n:4-0');
    es.emit('system.gap', { requested: '1-0', oldest: '9-0', roomId: 43 });
    assert.deepEqual(counts, [1, 2]);
    assert.deepEqual(presence, [[43, 1]]);
    assert.deepEqual(page.online.get(43), [7]);
    assert.deepEqual(got, [[42, 'a', 'p1,42:3-0,43:2-0,n:0-0']]);
    assert.equal(page.lastEventId, 'p1,42:3-0,43:2-0,n:4-0');
    assert.deepEqual(gaps, [{ requested: '1-0', oldest: '9-0', roomId: 43 }]);
    page.setRooms([42, 44]);
    mock.timers.tick(0);
    await flush();
    es = FakeEventSource.last();
    assert.equal(FakeEventSource.all.length, 2);
    assert.equal(es.url.searchParams.get('rooms'), '42,44');
    assert.equal(es.url.searchParams.get('lastEventId'), 'p1,42:3-0,43:2-0,n:4-0');
    assert.equal(page.online.has(43), false, 'a room left the page');
    page.close();
  } finally {
    mock.timers.reset();
  }
});

test('a page stream refused for one room reports it once', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    FakeEventSource.all = [];
    const asked = [];
    const errors = [];
    const page = new PageStream({
      baseUrl: 'http://hub.test', getToken: () => 't', EventSource: FakeEventSource,
      fetch: ticketless(async (url) => {
        const path = new URL(url).pathname;
        asked.push(path);
        const denied = path === '/api/v1/rooms/43/presence';
        return {
          ok: !denied, status: denied ? 403 : 200,
          json: async () => (denied ? { isSuccess: false, code: 'COMMON403', message: 'room 43' } : { isSuccess: true, result: {} }),
        };
      }),
      rooms: [42, 43], onError: (e) => errors.push(e.code), minDelay: 10,
    });
    for (let i = 0; i < 3; i++) {
      await flush();
      FakeEventSource.last()?.fail();
      await flush();
      mock.timers.tick(1000);
    }
    await flush();
    assert.equal(FakeEventSource.all.length, 1);
    assert.deepEqual(asked, ['/api/v1/rooms/42/presence', '/api/v1/rooms/43/presence']);
    assert.deepEqual(errors, ['COMMON403']);
    assert.equal(page.status, Status.CLOSED);
  } finally {
    mock.timers.reset();
  }
});

test('keepPresent heartbeats only while no open stream covers the room, and stops', async () => {
  mock.timers.enable({ apis: ['setTimeout'] });
  try {
    FakeEventSource.all = [];
    const beats = [];
    let status = 200;
    const hub = new RoomHub({
      baseUrl: 'http://hub.test', getToken: () => 'tok', EventSource: FakeEventSource,
      fetch: ticketless(async (url, init) => {
        beats.push(`${init.method} ${new URL(url).pathname}`);
        return {
          ok: status === 200, status,
          json: async () => (status === 200
            ? { isSuccess: true, result: { acknowledged: true, nextInSecs: 20 } }
            : { isSuccess: false, code: 'COMMON403', message: 'no' }),
        };
      }),
    });
    const stop = hub.keepPresent(42);
    await flush();
    assert.deepEqual(beats, ['POST /api/v1/rooms/42/presence/heartbeat']);

    const room = hub.room(42);
    await flush();
    FakeEventSource.last().open();
    mock.timers.tick(20000);
    await flush();
    assert.equal(beats.length, 1, 'an open stream of the room keeps the user present: no heartbeat');

    room.close();
    const page = hub.page({ rooms: [41, 42] });
    await flush();
    mock.timers.tick(20000); // the page stream is not open yet: a heartbeat
    await flush();
    assert.equal(beats.length, 2);
    FakeEventSource.last().open();
    mock.timers.tick(20000);
    await flush();
    assert.equal(beats.length, 2, 'an open page stream holding the room covers it');

    page.close();
    hub.room(43); // another room does not cover 42
    await flush();
    FakeEventSource.last().open();
    mock.timers.tick(20000);
    await flush();
    assert.equal(beats.length, 3);

    stop();
    mock.timers.tick(60000);
    await flush();
    assert.equal(beats.length, 3, 'stopped');

    status = 403; // a refusal stops it too
    hub.keepPresent(44);
    await flush();
    mock.timers.tick(60000);
    await flush();
    assert.deepEqual(beats.slice(3), ['POST /api/v1/rooms/44/presence/heartbeat']);
  } finally {
    mock.timers.reset();
  }
});

// recordingHub is a RoomHub whose fetch records each call and answers result.
function recordingHub(result = {}) {
  const calls = [];
  const hub = new RoomHub({
    baseUrl: 'http://hub.test',
    getToken: () => 'tok',
    EventSource: FakeEventSource,
    fetch: async (url, init) => {
      calls.push({ url: new URL(url), method: init.method, body: init.body === undefined ? undefined : JSON.parse(init.body) });
      return { ok: true, status: 200, json: async () => ({ isSuccess: true, code: 'COMMON200', result }) };
    },
  });
  return { hub, calls };
}

test('the inbox API: filters, actions, bulk, settings', async () => {
  const { hub, calls } = recordingHub({ mutedEventTypes: ['like.toggled'] });
  await hub.list({ limit: 5, state: 'archived', tags: ['a', 'b'], severity: 'high', eventType: 'comment.created', roomId: 42, before: '42:1-0' });
  let q = calls[0].url.searchParams;
  assert.deepEqual(Object.fromEntries(q), { limit: '5', before: '42:1-0', state: 'archived', tags: 'a,b', severity: 'high',
    eventType: 'comment.created', roomId: '42' });
  await hub.counts();
  assert.equal(calls[1].url.pathname, '/api/v1/notifications/counts');
  const until = new Date('2030-01-01T00:00:00Z');
  await hub.snooze('42:1-0', until);
  assert.equal(calls[2].method, 'PATCH');
  assert.equal(calls[2].url.pathname, '/api/v1/notifications/42%3A1-0/snooze');
  assert.deepEqual(calls[2].body, { until: '2030-01-01T00:00:00.000Z' });
  for (const [fn, path] of [['seen', 'seen'], ['archive', 'archive'], ['unarchive', 'unarchive'], ['unsnooze', 'unsnooze']]) {
    await hub[fn]('7:2-0');
    assert.equal(calls.at(-1).url.pathname, `/api/v1/notifications/7%3A2-0/${path}`);
  }
  await hub.delete('7:2-0');
  assert.equal(calls.at(-1).method, 'DELETE');
  await hub.bulk('archive', { ids: ['1:1-0', '1:2-0'] });
  assert.deepEqual(calls.at(-1).body, { action: 'archive', notificationIds: ['1:1-0', '1:2-0'] });
  await hub.bulk('read', { filter: { tags: ['x'] }, upTo: '1:2-0' });
  assert.deepEqual(calls.at(-1).body, { action: 'read', filter: { tags: ['x'] }, upTo: '1:2-0' });
  await hub.markAllSeen();
  assert.deepEqual(calls.at(-1).body, { action: 'seen', filter: { state: 'unseen' } });
  // An object replaces the fields it gives and keeps the muted types.
  await hub.settings({ quietHours: { start: '22:00', end: '07:00', timeZone: 'Asia/Seoul' } });
  assert.equal(calls.at(-2).method, 'GET');
  assert.deepEqual(calls.at(-1).body, { quietHours: { start: '22:00', end: '07:00', timeZone: 'Asia/Seoul' }, mutedEventTypes: ['like.toggled'] });
  await hub.settings(['comment.created']);
  assert.deepEqual(calls.at(-1).body, { mutedEventTypes: ['comment.created'] });
});

test('bulk and markAllRead repeat the same call while the hub says more', async () => {
  const calls = [];
  const answers = [{ changed: 1000, more: true }, { changed: 1000, more: true }, { changed: 7, more: false, at: 't' }];
  const hub = new RoomHub({
    baseUrl: 'http://hub.test', getToken: () => 'tok', EventSource: FakeEventSource,
    fetch: async (url, init) => {
      calls.push(init.body);
      const r = answers[(calls.length - 1) % answers.length];
      const result = new URL(url).pathname.endsWith('read-all') ? { marked: r.changed, more: r.more, readAt: 't' } : r;
      return { ok: true, status: 200, json: async () => ({ isSuccess: true, code: 'COMMON200', result }) };
    },
  });
  const r = await hub.bulk('archive', { filter: { state: 'all' } });
  assert.equal(calls.length, 3);
  assert.ok(calls.every((b) => b === calls[0]), 'every repeat is the same call');
  assert.deepEqual([r.changed, r.more, r.at], [2007, false, 't']);
  const m = await hub.markAllRead();
  assert.equal(calls.length, 6);
  assert.deepEqual([m.marked, m.more], [2007, false]);
});

test('a stream keeps the counts of the highest version and calls the typed callbacks', async () => {
  const { hub } = setup();
  const seen = { counts: [], count: [], created: [], updated: [], deleted: [] };
  const bell = hub.notifications({
    onCounts: (c) => seen.counts.push(c.version), onCount: (n) => seen.count.push(n),
    onCreated: (d) => seen.created.push(d.notificationId), onUpdated: (d) => seen.updated.push(d.notifications.length),
    onDeleted: (d) => seen.deleted.push(d.reason),
  });
  await flush();
  const es = FakeEventSource.last();
  es.open();
  es.emit('notification.unread', { count: 2 });
  es.emit('notification.counts', { version: 5, unread: 2, visible: 3 });
  es.emit('notification.created', { notificationId: '1:9-0', unread: 3, counts: { version: 6, unread: 3 } }, '9-0');
  // an older version (another tab's slower path) does not move the badge back
  es.emit('notification.updated', { notifications: [{}], counts: { version: 4, unread: 1 } }, '10-0');
  es.emit('notification.deleted', { notificationIds: ['1:9-0'], reason: 'deleted', counts: { version: 7, unread: 2 } }, '11-0');
  assert.deepEqual(seen.counts, [5, 6, 7]);
  assert.deepEqual(seen.count, [2, 3, 2]);
  assert.deepEqual(seen.created, ['1:9-0']);
  assert.deepEqual(seen.updated, [1]);
  assert.deepEqual(seen.deleted, ['deleted']);
  assert.equal(bell.counts.version, 7);
  assert.equal(bell.count, 2);
  bell.close();
});

test('without Web Locks, page() is a stream of its own', () => {
  const { hub } = setup();
  const p = hub.page({ rooms: [1] });
  assert.ok(p instanceof PageStream);
  p.close();
});

// withTabs runs fn with what sharing between tabs needs of a browser: a
// BroadcastChannel class, Web Locks (locks) and a visible document.
async function withTabs(Channel, locks, fn) {
  globalThis.BroadcastChannel = Channel;
  const hadNavigator = 'navigator' in globalThis;
  Object.defineProperty(globalThis, 'navigator', { value: { locks }, configurable: true });
  globalThis.addEventListener ??= () => {};
  globalThis.document = { visibilityState: 'visible' };
  try {
    await fn();
  } finally {
    delete globalThis.BroadcastChannel;
    delete globalThis.document;
    if (!hadNavigator) delete globalThis.navigator;
  }
}

test('the tabs share a channel named by the user: a shareKey only narrows it', async () => {
  const names = [];
  const Channel = class { constructor(n) { names.push(n); } postMessage() {} close() {} };
  const locks = { request: () => new Promise(() => {}) }; // never granted: this tab follows
  const jwt = (sub) => `x.${Buffer.from(JSON.stringify({ sub })).toString('base64url')}.y`;
  const open = async (getToken, opts) => {
    const hub = new RoomHub({ baseUrl: 'http://hub.test', getToken, EventSource: FakeEventSource, fetch: ticketless(async () => ({})) });
    const p = hub.page({ rooms: [1], ...opts });
    await flush();
    p.close();
  };
  await withTabs(Channel, locks, async () => {
    await open(() => jwt('7'), { shareKey: 'app' });
    await open(() => jwt('8'), { shareKey: 'app' });
    await open(() => '', { shareKey: 'app' }); // cookie auth, no user named: not shared
    await open(() => '', { userId: 9 });
    assert.deepEqual(names, ['roomhub/2:http://hub.test:7:app', 'roomhub/2:http://hub.test:8:app', 'roomhub/2:http://hub.test:9:']);
  });
});

test('with no token the cookie authenticates: no Authorization header, no token parameter', async () => {
  FakeEventSource.all = [];
  const headers = [];
  const hub = new RoomHub({
    baseUrl: 'http://hub.test',
    getToken: () => '',
    EventSource: FakeEventSource,
    fetch: async (url, init) => {
      headers.push(init.headers);
      return { ok: true, status: 200, json: async () => ({ isSuccess: true, code: 'COMMON200', result: { count: 0 } }) };
    },
  });
  await hub.unread();
  assert.equal(headers[0].Authorization, undefined);
  const room = hub.room(3);
  await flush();
  assert.equal(FakeEventSource.last().url.searchParams.has('token'), false);
  room.close();
});

test('the leader reads who is online in a room it has no position for, unless an update came first', async () => {
  const Channel = class { postMessage() {} close() {} };
  const locks = { request: (_name, _opts, fn) => { fn(); return new Promise(() => {}); } }; // granted: this tab leads
  const jwt = `x.${Buffer.from(JSON.stringify({ sub: '32' })).toString('base64url')}.y`;
  let answer = () => {};
  const asked = [];
  const fetch = async (url) => {
    if (new URL(url).pathname === TICKETS) return { ok: false, status: 404, json: async () => ({}) };
    asked.push(new URL(url).pathname);
    await new Promise((r) => { answer = r; });
    return { ok: true, status: 200, json: async () => ({ isSuccess: true, result: { onlineUsers: [{ userId: 31 }, { userId: 32 }], count: 2 } }) };
  };
  await withTabs(Channel, locks, async () => {
    for (const updateFirst of [false, true]) {
      FakeEventSource.all = [];
      asked.length = 0;
      const seen = [];
      const hub = new RoomHub({ baseUrl: 'http://hub.test', getToken: () => jwt, EventSource: FakeEventSource, fetch });
      const page = hub.page({ rooms: [78], onPresence: (room, d) => seen.push([room, d.onlineUsers]) });
      try {
        for (let i = 0; i < 5 && !FakeEventSource.all.length; i++) await flush();
        const es = FakeEventSource.last();
        es.open(); // no event yet: room 78 has no position
        await flush();
        assert.deepEqual(asked, ['/api/v1/rooms/78/presence']);
        if (updateFirst) es.emit('presence.update', { roomId: 78, onlineUsers: [32], count: 1 }, 'p1,78:5-0');
        answer();
        for (let i = 0; i < 5; i++) await flush();
        // The snapshot stands in for a missed update; a real one that came
        // first wins (the snapshot may be older than it).
        assert.deepEqual(seen, updateFirst ? [[78, [32]]] : [[78, [31, 32]]], `update first: ${updateFirst}`);
      } finally {
        page.close();
      }
    }
  });
});

test('a stream carries a single-use ticket, not the token, when the hub gives one; the token when it has no tickets', async () => {
  for (const [answer, want] of [
    [{ status: 200, body: { isSuccess: true, code: 'COMMON200', result: { ticket: 'tk1', expiresInSecs: 30 } } }, { ticket: 'tk1', token: null }],
    [{ status: 404, body: { isSuccess: false, code: 'COMMON404', message: 'no such route' } }, { ticket: null, token: 'tok' }],
  ]) {
    FakeEventSource.all = [];
    const calls = [];
    const hub = new RoomHub({
      baseUrl: 'http://hub.test', getToken: () => 'tok', EventSource: FakeEventSource,
      fetch: async (url, init) => {
        calls.push([init.method, new URL(url).pathname, init.headers.Authorization]);
        return { ok: answer.status === 200, status: answer.status, json: async () => answer.body };
      },
    });
    const room = hub.room(42);
    await flush();
    await flush();
    const es = FakeEventSource.last();
    assert.deepEqual(calls[0], ['POST', TICKETS, 'Bearer tok']);
    assert.equal(es.url.searchParams.get('ticket'), want.ticket);
    assert.equal(es.url.searchParams.get('token'), want.token);
    room.close();
  }
});

test('a ticket the hub refuses or fails to give never puts the token in a URL: only a hub without tickets (404) gets it', async () => {
  for (const status of [401, 429, 500, 503, 0]) {
    FakeEventSource.all = [];
    const errors = [];
    const hub = new RoomHub({
      baseUrl: 'http://hub.test', getToken: () => 'tok', EventSource: FakeEventSource,
      fetch: async () => {
        if (status === 0) throw new TypeError('Failed to fetch');
        return { ok: false, status, json: async () => ({ isSuccess: false, code: `X${status}`, message: 'no' }) };
      },
    });
    const room = hub.room(42, { onError: (e) => errors.push(e) });
    await flush();
    await flush();
    await flush();
    assert.equal(FakeEventSource.all.length, 0, `a ${status}: a stream opened`);
    room.close();
  }
});

test('a tab is open only once the shared stream carries its rooms and bell, but rooms the hub refused it', async () => {
  let channel;
  const Channel = class { constructor() { channel = this; } postMessage() {} close() {} };
  const locks = { request: () => new Promise(() => {}) }; // never granted: this tab follows
  const jwt = `x.${Buffer.from(JSON.stringify({ sub: '41' })).toString('base64url')}.y`;
  const hub = new RoomHub({ baseUrl: 'http://hub.test', getToken: () => jwt, EventSource: FakeEventSource, fetch: ticketless(async () => ({})) });
  await withTabs(Channel, locks, async () => {
    const seen = [];
    const errors = [];
    const page = hub.page({ rooms: [5, 6], notifications: true, onStatus: (s) => seen.push(s), onError: (e) => errors.push(e.roomId) });
    try {
      for (let i = 0; i < 5 && !channel?.onmessage; i++) await flush();
      const hear = (m) => channel.onmessage({ data: m });
      hear({ k: 'status', s: 'open', rooms: [], notifications: true }); // another tab's stream: the bell alone
      hear({ k: 'status', s: 'open', rooms: [5, 6], notifications: false });
      assert.deepEqual(seen, [], 'open before the stream carries this tab\'s rooms and bell');
      hear({ k: 'status', s: 'open', rooms: [5, 6], notifications: true });
      assert.deepEqual(seen, ['open']);
      hear({ k: 'status', s: 'open', rooms: [5], notifications: true }); // room 6 left out…
      assert.deepEqual(seen, ['open', 'connecting']);
      hear({ k: 'refused', roomId: 6, status: 403, code: 'COMMON403', message: 'no' }); // …because the hub refused it
      assert.deepEqual(seen, ['open', 'connecting', 'open']);
      assert.deepEqual(errors, [6]);
      page.setRooms([5, 7]); // asks again: room 7 is not carried yet
      assert.deepEqual(seen, ['open', 'connecting', 'open', 'connecting']);
    } finally {
      page.close();
    }
  });
});
