// Unit tests of the SDK against a fake EventSource and a fake fetch
// (fakes.mjs): the inbox API and the counts a stream keeps.
//   node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RoomHub } from '../static/roomhub.js';
import { FakeEventSource, flush, recordingHub, setup } from './fakes.mjs';

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
  // What the person follows, and leaving one.
  await hub.topics({ after: 'issue:1', limit: 50 });
  assert.equal(calls.at(-1).url.pathname, '/api/v1/topics');
  assert.deepEqual(Object.fromEntries(calls.at(-1).url.searchParams), { after: 'issue:1', limit: '50' });
  await hub.topics();
  assert.equal(calls.at(-1).url.search, '');
  await hub.leaveTopic('product:123');
  assert.equal(calls.at(-1).method, 'DELETE');
  assert.equal(calls.at(-1).url.pathname, '/api/v1/topics/product%3A123');
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
