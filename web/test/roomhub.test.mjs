// Unit tests of the SDK against a fake EventSource and a fake fetch
// (fakes.mjs): room, user and page streams, presence.
//   node --test web/test/
import { test, mock } from 'node:test';
import assert from 'node:assert/strict';
import { RoomHub, PageStream, Status } from '../static/roomhub.js';
import { FakeEventSource, flush, setup, ticketless } from './fakes.mjs';

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
