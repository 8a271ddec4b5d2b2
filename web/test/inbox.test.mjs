// The inbox element's helpers (the element itself is tested in Chromium:
// api/inbox_element_test.go).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { itemText, badgeText, MESSAGES } from '../static/roomhub-inbox.js';

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
