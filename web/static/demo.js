// The demo page (dev mode): one PageStream for the rooms and the bell,
// tokens from /dev/token, publishes through /dev/publish. No inline script, so
// the page runs under a strict Content-Security-Policy.
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

async function refreshInbox() {
  try {
    const page = await hub.list({ limit: 10 });
    const notes = $('notes');
    notes.replaceChildren();
    for (const n of page.notifications) {
      const li = el('li', { className: n.readAt ? 'read' : '' },
        el('span', { textContent: `${n.eventType} in room ${n.roomId}` }));
      if (!n.readAt) {
        li.append(el('button', { type: 'button', textContent: 'read', onclick: () => hub.markRead(n.notificationId).then(refreshInbox) }));
      }
      notes.append(li);
    }
  } catch (e) {
    card('error', { text: e.message }, true);
  }
}

async function showMutes() {
  const { mutedEventTypes } = await hub.settings();
  const box = $('mutes');
  box.replaceChildren();
  for (const t of TYPES) {
    const cb = el('input', { type: 'checkbox', checked: mutedEventTypes.includes(t) });
    cb.onchange = async () => {
      const muted = [...box.querySelectorAll('input')].filter((i) => i.checked).map((i) => i.dataset.type);
      await hub.settings(muted);
    };
    cb.dataset.type = t;
    box.append(el('label', {}, cb, ` ${t}`));
  }
}

const page = hub.page({
  rooms, notifications: true,
  onStatus: (s) => { $('status').textContent = s; $('status').className = `status ${s}`; },
  onPresence: (room, d) => { online.set(room, d.onlineUsers); showOnline(); },
  onCount: (n) => { $('badge').textContent = n; $('badge').hidden = n === 0; },
  onGap: (g) => card('system.gap', { text: `history no longer reaches back for ${g.roomId ? `room ${g.roomId}` : 'the notifications'}` }, true),
  onError: (e) => card('error', { text: e.message }, true),
  onEvicted: (d) => card('system.evicted', { text: d.reason }, true),
});
page.on('*', (data, id, type) => {
  frames.unshift(`${type}${id ? ` id=${id}` : ''} ${JSON.stringify(data)}`);
  frames.length = Math.min(frames.length, 20);
  $('frames').textContent = frames.join('\n');
  if (TYPES.includes(type)) card(type, data, false);
  if (type.startsWith('notification.') && !$('inbox').hidden) refreshInbox();
});

$('bell').onclick = () => {
  $('inbox').hidden = !$('inbox').hidden;
  if (!$('inbox').hidden) refreshInbox();
};
$('read-all').onclick = () => hub.markAllRead().then(refreshInbox);
$('publish').onsubmit = async (ev) => {
  ev.preventDefault();
  const body = {
    roomId: Number($('pub-room').value), eventType: $('pub-type').value, publisherId: Number(user),
    data: { text: $('pub-text').value },
  };
  if ($('pub-notify').checked) { // everyone online in the room, and me
    body.recipientIds = [...new Set([Number(user), ...(online.get(body.roomId) || [])])];
  }
  const r = await fetch('/dev/publish', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) card('error', { text: `publish: ${r.status} ${(await r.json()).message}` }, true);
};
showMutes().catch((e) => card('error', { text: e.message }, true));
