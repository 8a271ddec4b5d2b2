// Unit tests of the SDK against a fake EventSource and a fake fetch
// (fakes.mjs): one stream shared by the tabs, stream tickets.
//   node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RoomHub, PageStream } from '../static/roomhub.js';
import { FakeEventSource, TICKETS, flush, setup, ticketless, withTabs } from './fakes.mjs';

test('without Web Locks, page() is a stream of its own', () => {
  const { hub } = setup();
  const p = hub.page({ rooms: [1] });
  assert.ok(p instanceof PageStream);
  p.close();
});

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
