// The demo page (dev mode): one page stream for the rooms, shared by the
// user's tabs; the bell and inbox are <roomhub-inbox>, on the same shared
// connection; tokens from /dev/token, publishes through /dev/publish. No
// inline script, so the page runs under a strict Content-Security-Policy.
import { RoomHub } from '/static/roomhub.js';

const TYPES = ['retrospect.submitted', 'retrospect.created', 'comment.created', 'like.toggled', 'member.joined'];
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
// Without ?user= each tab is its own user (a random id kept for the tab), so
// two tabs show two people online.
const user = params.get('user') || sessionStorage.getItem('roomhub-demo-user') || String(1000 + Math.floor(Math.random() * 9000));
sessionStorage.setItem('roomhub-demo-user', user);
const rooms = (params.get('rooms') || '42').split(',').map((r) => r.trim()).filter(Boolean);
const ttl = params.get('ttlSecs'); // short-lived tokens: watch the page renew them

$('user').value = user;
$('rooms').value = rooms.join(',');
$('pub-room').value = rooms[0] || '';
for (const t of TYPES) $('pub-type').append(new Option(t, t));

const el = (tag, props = {}, ...children) => {
  const e = Object.assign(document.createElement(tag), props);
  e.append(...children);
  return e;
};

async function getToken() {
  const r = await fetch(`/dev/token?userId=${encodeURIComponent(user)}${ttl ? `&ttlSecs=${encodeURIComponent(ttl)}` : ''}`);
  if (!r.ok) throw new Error(`no dev token (${r.status}): is the hub in dev mode?`);
  return (await r.json()).result.token;
}

const hub = new RoomHub({ getToken });
const online = new Map();
const frames = [];

function card(type, data, system) {
  const cards = $('cards');
  cards.querySelector('.empty')?.remove();
  const { timestamp, roomId, ...rest } = data || {};
  const text = rest.text ?? JSON.stringify(rest);
  const room = roomId !== undefined ? `room ${roomId} · ` : '';
  cards.prepend(el('div', { className: system ? 'card system' : 'card' },
    el('div', { className: 'meta', textContent: `${room}${type} · ${new Date().toLocaleTimeString()}` }),
    el('div', { textContent: text })));
  while (cards.children.length > 50) cards.lastChild.remove();
}

function showOnline() {
  const list = $('online');
  list.replaceChildren();
  for (const [room, users] of online) {
    for (const u of users || []) list.append(el('li', { textContent: `${u} in ${room}` }));
  }
}

// The bell: the element, with the demo's token and every demo type in its
// preferences. Its errors show as cards.
const inbox = $('inbox');
inbox.eventTypes = TYPES;
inbox.tokenProvider = getToken;
inbox.addEventListener('roomhub-error', (e) => card('error', { text: e.detail.message }, true));

// notifications: true though the element shows them: the tab's two page
// streams (this one and the element's) ask the shared connection for the
// same things, so the element's joining changes nothing (see web/README.md,
// "One connection per browser").
const page = hub.page({
  rooms, notifications: true,
  onStatus: (s) => { $('status').textContent = s; $('status').className = `status ${s}`; },
  onPresence: (room, d) => { online.set(room, d.onlineUsers); showOnline(); },
  onGap: (g) => card('system.gap', { text: `history no longer reaches back for room ${g.roomId}` }, true),
  onError: (e) => card('error', { text: e.message }, true),
  onEvicted: (d) => card('system.evicted', { text: d.reason }, true),
});
page.on('*', (data, id, type) => {
  frames.unshift(`${type}${id ? ` id=${id}` : ''} ${JSON.stringify(data)}`);
  frames.length = Math.min(frames.length, 20);
  $('frames').textContent = frames.join('\n');
  if (TYPES.includes(type)) card(type, data, false);
});

$('publish').onsubmit = async (ev) => {
  ev.preventDefault();
  const data = { text: $('pub-text').value };
  if ($('pub-title').value) data.title = $('pub-title').value;
  const body = { roomId: Number($('pub-room').value), eventType: $('pub-type').value, publisherId: Number(user), data };
  if ($('pub-notify').checked) { // everyone online in the room, and me
    body.recipientIds = [...new Set([Number(user), ...(online.get(body.roomId) || [])])];
    if ($('pub-group').value) body.groupKey = $('pub-group').value;
    if ($('pub-severity').value !== 'normal') body.severity = $('pub-severity').value;
  }
  const r = await fetch('/dev/publish', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) card('error', { text: `publish: ${r.status} ${(await r.json()).message}` }, true);
};
