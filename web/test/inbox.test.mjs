// The inbox element's helpers (the element itself is tested in Chromium:
// web/inbox_element_test.go).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { itemText, badgeText, MESSAGES, inTab, placeOf, windowOf, openable } from '../static/roomhub-inbox.js';

test('an item shows data.title and data.text, else its event type', () => {
  assert.deepEqual(itemText({ eventType: 'comment.created', data: { title: 'Hi', text: 'there' } }), { title: 'Hi', body: 'there' });
  assert.deepEqual(itemText({ eventType: 'comment.created', data: { content: 'body' } }), { title: 'Comment created', body: 'body' });
  assert.deepEqual(itemText({ eventType: 'like.toggled', data: { title: '  ', n: 1 } }), { title: 'Like toggled', body: '' });
});

test('the badge is exact up to 99, then 99+', () => {
  assert.equal(badgeText(0), '0');
  assert.equal(badgeText(99), '99');
  assert.equal(badgeText(100), '99+');
});

test('English and Korean name every text', () => {
  assert.deepEqual(Object.keys(MESSAGES.ko).sort(), Object.keys(MESSAGES.en).sort());
  assert.equal(MESSAGES.ko.bellCount(3), '알림, 읽지 않음 3개');
});

test('a tab has the items its list would have', () => {
  const now = Date.parse('2026-01-01T00:00:00Z');
  const n = { readAt: null, archivedAt: null, snoozedUntil: null, expiresAt: null };
  assert.equal(inTab('all', n, now), true);
  assert.equal(inTab('unread', n, now), true);
  assert.equal(inTab('archived', n, now), false);
  assert.equal(inTab('unread', { ...n, readAt: '2025-12-31T00:00:00Z' }, now), false);
  assert.equal(inTab('all', { ...n, readAt: '2025-12-31T00:00:00Z' }, now), true);
  assert.equal(inTab('all', { ...n, archivedAt: '2025-12-31T00:00:00Z' }, now), false);
  assert.equal(inTab('archived', { ...n, archivedAt: '2025-12-31T00:00:00Z' }, now), true);
  assert.equal(inTab('all', { ...n, snoozedUntil: '2026-01-02T00:00:00Z' }, now), false);
  assert.equal(inTab('all', { ...n, snoozedUntil: '2025-12-31T00:00:00Z' }, now), true); // woken
  assert.equal(inTab('all', { ...n, expiresAt: '2025-12-31T00:00:00Z' }, now), false);
});

test('an item goes where the list has it: newest activity first, or after what is loaded', () => {
  const at = (id, ts) => ({ notificationId: id, activityAt: ts });
  const items = [at('1:3', '2026-01-03T00:00:00Z'), at('1:2', '2026-01-02T00:00:00Z')];
  assert.equal(placeOf(items, at('1:9', '2026-01-04T00:00:00Z'), false), 0);
  assert.equal(placeOf(items, at('1:5', '2026-01-02T12:00:00Z'), false), 1);
  assert.equal(placeOf(items, at('1:1', '2026-01-01T00:00:00Z'), false), -1); // a later page has it
  assert.equal(placeOf(items, at('1:1', '2026-01-01T00:00:00Z'), true), 2); // nothing more to load
  assert.equal(placeOf([], at('1:1', '2026-01-01T00:00:00Z'), true), 0);
});

test('only the rows near the view exist, however long the list', () => {
  const items = Array.from({ length: 5000 }, (_, i) => ({ notificationId: String(i) }));
  const h = () => 70;
  let w = windowOf(items, h, 0, 560, 600, 60);
  assert.deepEqual(w, { from: 0, to: 17, before: 0, after: (5000 - 17) * 70 });
  w = windowOf(items, h, 70 * 2500, 560, 600, 60);
  assert.equal(w.from, 2491); // the rows wholly more than 600 px above the view are not made
  assert.equal(w.before, w.from * 70);
  assert.ok(w.to - w.from <= 60 && w.to > 2508);
  assert.equal(w.before + (w.to - w.from) * 70 + w.after, 5000 * 70);
  w = windowOf(items, () => 1, 0, 560, 600, 60); // tiny rows: still at most max
  assert.equal(w.to, 60);
  assert.deepEqual(windowOf([], h, 0, 560), { from: 0, to: 0, before: 0, after: 0 });
});

test('an item opens an http(s) URL or a path of the page\'s own origin, never a path a browser reads as another host', () => {
  const page = 'https://app.example/inbox';
  assert.equal(openable('/orders/1', page), 'https://app.example/orders/1');
  assert.equal(openable('https://shop.example/o/1', page), 'https://shop.example/o/1');
  assert.equal(openable('HTTP://shop.example/', page), 'http://shop.example/');
  for (const bad of ['//evil.example/x', '/\\evil.example/x', '\\\\evil.example', 'javascript:alert(1)', 'data:text/html,x', 'orders/1', '', null, 7]) {
    assert.equal(openable(bad, page), '', String(bad));
  }
});

test('a group names its people, not its events, in both languages', async () => {
  const { metaText, peopleText } = await import('../static/inbox/texts.js');
  const at = () => '';
  const group = (count, actors) => ({ publisherId: actors[0], group: { count, actors } });
  for (const [lang, want] of Object.entries({
    en: ['User 5 (3)', 'User 8 and User 6', 'User 1, User 2 and 1 other', 'User 1, User 2 and 3 others', 'User 5'],
    ko: ['사용자 5 (3)', '사용자 8, 사용자 6', '사용자 1, 사용자 2 외 1명', '사용자 1, 사용자 2 외 3명', '사용자 5'],
  })) {
    const t = MESSAGES[lang];
    assert.deepEqual([
      metaText(t, group(3, ['5']), at), metaText(t, group(2, ['8', '6']), at), metaText(t, group(4, ['1', '2', '3']), at),
      metaText(t, group(9, ['1', '2', '3', '4', '5']), at), metaText(t, { publisherId: '5' }, at),
    ], want, lang);
  }
  assert.equal(MESSAGES.en.groupOf(2, peopleText(MESSAGES.en, ['8', '6'])), '2 events from User 8 and User 6');
  assert.equal(MESSAGES.ko.groupOf(3, peopleText(MESSAGES.ko, ['5'])), '사용자 5의 이벤트 3개');
});
