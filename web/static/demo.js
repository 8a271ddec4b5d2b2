// The demo page (dev mode): one page stream for the rooms and the bell,
// shared by the user's tabs; the whole inbox (views, groups, snooze, archive,
// delete, exact counts) and the settings; tokens from /dev/token, publishes
// through /dev/publish. No inline script, so the page runs under a strict
// Content-Security-Policy.
import { RoomHub } from '/static/roomhub.js';

const TYPES = ['retrospect.submitted', 'retrospect.created', 'comment.created', 'like.toggled', 'member.joined'];
const NAMES = ['Ana', 'Ben', 'Chloé', 'Dev', 'Eun', 'Femi', 'Gus', 'Hana', 'Ivo', 'Jun'];
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
const person = (id) => `${NAMES[Number(id) % NAMES.length]} (${id})`;

async function getToken() {
  const r = await fetch(`/dev/token?userId=${encodeURIComponent(user)}${ttl ? `&ttlSecs=${encodeURIComponent(ttl)}` : ''}`);
  if (!r.ok) throw new Error(`no dev token (${r.status}): is the hub in dev mode?`);
  return (await r.json()).result.token;
}

const hub = new RoomHub({ getToken });
const online = new Map();
const frames = [];
let view = 'visible';

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

function announce(text) {
  $('announce').textContent = '';
  requestAnimationFrame(() => { $('announce').textContent = text; });
}

// title is what an item says: "Ana (7) and 4 others · comment.created in room 42".
function title(n) {
  const what = `${n.eventType} in room ${n.roomId}`;
  const g = n.group;
  if (g && g.count > 1) {
    const who = g.actors.length ? person(g.actors[0]) : 'someone';
    return `${who} and ${g.count - 1} other${g.count > 2 ? 's' : ''} · ${what}`;
  }
  return n.publisherId ? `${person(n.publisherId)} · ${what}` : what;
}

const act = (p) => p.then(refreshInbox).catch((e) => card('error', { text: e.message }, true));

function snoozeMenu(n, name) {
  const sel = el('select', { className: 'snooze' });
  sel.setAttribute('aria-label', `Snooze ${name}`);
  sel.append(new Option('Snooze…', ''), new Option('1 hour', '1'), new Option('3 hours', '3'), new Option('Tomorrow', '24'));
  sel.onchange = () => {
    if (!sel.value) return;
    act(hub.snooze(n.notificationId, new Date(Date.now() + Number(sel.value) * 3600e3)));
  };
  return sel;
}

function item(n) {
  const name = title(n);
  const li = el('li', { className: n.readAt ? 'read' : '' });
  li.dataset.id = n.notificationId;
  const text = el('div', { className: 'text' },
    el('span', { className: 'title', textContent: name }),
    el('span', { className: 'meta', textContent: `${new Date(n.activityAt || n.timestamp).toLocaleTimeString()}${n.seenAt ? '' : ' · new'}${n.severity !== 'normal' ? ` · ${n.severity}` : ''}` }));
  const buttons = el('div', { className: 'item-actions' });
  const button = (label, fn, aria) => {
    const b = el('button', { type: 'button', textContent: label, onclick: fn });
    b.setAttribute('aria-label', `${aria || label} ${name}`);
    return b;
  };
  if (!n.readAt) buttons.append(button('read', () => act(hub.markRead(n.notificationId)), 'Mark read'));
  if (n.archivedAt) buttons.append(button('unarchive', () => act(hub.unarchive(n.notificationId)), 'Unarchive'));
  else buttons.append(button('archive', () => act(hub.archive(n.notificationId)), 'Archive'), snoozeMenu(n, name));
  buttons.append(button('delete', () => act(hub.delete(n.notificationId)), 'Delete'));
  li.append(text, buttons);
  return li;
}

let refreshing = null;
async function refreshInbox() {
  if ($('inbox').hidden) return;
  if (refreshing) { refreshing.again = true; return; }
  refreshing = { again: false };
  try {
    const page = await hub.list({ limit: 50, state: view });
    // A re-render keeps the keyboard's place: the same control of the same item.
    const focused = document.activeElement?.closest('#notes li') ? document.activeElement : null;
    const place = focused && { id: focused.closest('li').dataset.id, label: focused.getAttribute('aria-label') };
    $('notes').replaceChildren(...(page.notifications.length ? page.notifications.map(item)
      : [el('li', { className: 'empty', textContent: view === 'archived' ? 'Nothing archived.' : 'Nothing here.' })]));
    if (place) {
      const li = [...$('notes').children].find((x) => x.dataset.id === place.id);
      const again = li && [...li.querySelectorAll('button, select')].find((b) => b.getAttribute('aria-label') === place.label);
      (again || li?.querySelector('button') || $('notes').querySelector('button'))?.focus();
    }
  } catch (e) {
    card('error', { text: e.message }, true);
  } finally {
    const again = refreshing.again;
    refreshing = null;
    if (again) refreshInbox();
  }
}

function showCounts(c) {
  $('n-visible').textContent = c.visible ? `(${c.visible})` : '';
  $('n-unread').textContent = c.unread ? `(${c.unread})` : '';
  $('n-archived').textContent = c.archived ? `(${c.archived})` : '';
  $('snoozed').textContent = c.snoozed ? `${c.snoozed} snoozed: they come back when their time comes.` : '';
}

function showBadge(n) {
  $('badge').textContent = n;
  $('badge').hidden = n === 0;
  $('bell').setAttribute('aria-label', n ? `Notifications, ${n} unread` : 'Notifications');
}

function selectTab(state, focus) {
  view = state;
  for (const b of document.querySelectorAll('[role=tab]')) {
    const on = b.dataset.state === state;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
    if (on) {
      $('notes').setAttribute('aria-labelledby', b.id);
      if (focus) b.focus();
    }
  }
  refreshInbox();
}
const tabs = [...document.querySelectorAll('[role=tab]')];
for (const b of tabs) {
  b.onclick = () => selectTab(b.dataset.state);
  b.onkeydown = (e) => { // arrow keys move between tabs (the WAI-ARIA tabs pattern)
    const i = tabs.indexOf(b);
    const to = { ArrowRight: i + 1, ArrowLeft: i - 1, Home: 0, End: tabs.length - 1 }[e.key];
    if (to === undefined) return;
    e.preventDefault();
    selectTab(tabs[(to + tabs.length) % tabs.length].dataset.state, true);
  };
}

async function showSettings() {
  const s = await hub.settings();
  const box = $('mutes');
  box.replaceChildren();
  for (const t of TYPES) {
    const cb = el('input', { type: 'checkbox', checked: s.mutedEventTypes.includes(t) });
    cb.onchange = async () => {
      const muted = [...box.querySelectorAll('input')].filter((i) => i.checked).map((i) => i.dataset.type);
      await hub.settings(muted);
    };
    cb.dataset.type = t;
    box.append(el('label', {}, cb, ` ${t}`));
  }
  const channels = Object.entries(s.channels || {});
  if (channels.length) {
    $('channels').replaceChildren(...channels.map(([ch, p]) => {
      const cb = el('input', { type: 'checkbox', checked: p.enabled });
      cb.dataset.channel = ch;
      cb.onchange = () => hub.settings({ channels: { [ch]: { enabled: cb.checked, mutedEventTypes: p.mutedEventTypes } } })
        .catch((e) => card('error', { text: e.message }, true));
      return el('label', {}, cb, ` ${ch}`);
    }));
  }
  const q = s.quietHours;
  $('quiet-start').value = q ? q.start : '22:00';
  $('quiet-end').value = q ? q.end : '07:00';
  $('quiet-zone').value = q ? q.timeZone : Intl.DateTimeFormat().resolvedOptions().timeZone;
  $('quiet-now').textContent = q ? `Quiet from ${q.start} to ${q.end} (${q.timeZone}); critical ones still come.` : 'No quiet hours.';
}

const page = hub.page({
  rooms, notifications: true,
  onStatus: (s) => { $('status').textContent = s; $('status').className = `status ${s}`; },
  onPresence: (room, d) => { online.set(room, d.onlineUsers); showOnline(); },
  onCount: showBadge,
  onCounts: (c) => { showCounts(c); refreshInbox(); },
  onCreated: (n) => announce(`New notification: ${title(n)}`),
  onGap: (g) => card('system.gap', { text: `history no longer reaches back for ${g.roomId ? `room ${g.roomId}` : 'the notifications'}` }, true),
  onError: (e) => card('error', { text: e.message }, true),
  onEvicted: (d) => card('system.evicted', { text: d.reason }, true),
});
page.on('*', (data, id, type) => {
  frames.unshift(`${type}${id ? ` id=${id}` : ''} ${JSON.stringify(data)}`);
  frames.length = Math.min(frames.length, 20);
  $('frames').textContent = frames.join('\n');
  if (TYPES.includes(type)) card(type, data, false);
});

$('bell').onclick = () => {
  const open = $('inbox').hidden;
  $('inbox').hidden = !open;
  $('bell').setAttribute('aria-expanded', String(open));
  if (open) {
    hub.markAllSeen().catch((e) => card('error', { text: e.message }, true)); // the bell was opened: all seen
    refreshInbox();
    $('inbox').scrollIntoView({ block: 'nearest' }); // on a phone it sits below the feed
    document.querySelector('[role=tab][aria-selected=true]').focus();
  }
};
$('read-all').onclick = () => act(hub.markAllRead());
$('quiet').onsubmit = (ev) => {
  ev.preventDefault();
  hub.settings({ quietHours: { start: $('quiet-start').value, end: $('quiet-end').value, timeZone: $('quiet-zone').value } })
    .then(showSettings, (e) => card('error', { text: `quiet hours: ${e.message}` }, true));
};
$('quiet-clear').onclick = () => hub.settings({ quietHours: null }).then(showSettings);
$('publish').onsubmit = async (ev) => {
  ev.preventDefault();
  const body = {
    roomId: Number($('pub-room').value), eventType: $('pub-type').value, publisherId: Number(user),
    data: { text: $('pub-text').value },
  };
  if ($('pub-notify').checked) { // everyone online in the room, and me
    body.recipientIds = [...new Set([Number(user), ...(online.get(body.roomId) || [])])];
    if ($('pub-group').value) body.groupKey = $('pub-group').value;
  }
  const r = await fetch('/dev/publish', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  if (!r.ok) card('error', { text: `publish: ${r.status} ${(await r.json()).message}` }, true);
};
showSettings().catch((e) => card('error', { text: e.message }, true));
hub.counts().then(showCounts, () => {});
