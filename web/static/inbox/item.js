// An item's row: its text (the page's renderItem, or the event's title and
// body), who and when, its group and tags, and its actions (read, archive,
// snooze, delete).
import { itemText, peopleText, openable } from './texts.js';
import { ICONS } from './style.js';

/**
 * itemRow makes the row of item n. The element gives what a row needs:
 * t (its texts), renderItem (the page's, or null), hub (the SDK's inbox
 * API), act(fn) (run an action, report its failure), click(n) (the item
 * opened) and meta(n) (its second line).
 */
export function itemRow(n, el) {
  const li = document.createElement('li');
  li.item = n;
  li.className = 'item' + (n.readAt ? '' : ' unread');
  li.setAttribute('part', 'item');
  li.dataset.id = n.notificationId;
  li.dataset.severity = n.severity || 'normal';
  const body = document.createElement('div');
  body.className = 'body';
  const meta = document.createElement('div');
  meta.className = 'meta';
  meta.dataset.at = n.activityAt || n.timestamp;
  meta.textContent = el.meta(n);
  body.append(opener(n, el), meta, ...groupOf(n, el.t), ...tagsOf(n));
  li.append(body, actions(li, n, el));
  return li;
}

/** opener is the item's main button: its title and text; a click opens it. */
function opener(n, el) {
  const open = document.createElement('button');
  open.type = 'button';
  open.className = 'open';
  if (!(el.renderItem && el.renderItem(n, open) !== false)) {
    const { title, body: text } = itemText(n);
    const h = document.createElement('div');
    h.className = 'item-title';
    h.textContent = title;
    open.append(h);
    if (text) {
      const p = document.createElement('div');
      p.className = 'item-text';
      p.textContent = text;
      open.append(p);
    }
  }
  open.addEventListener('click', () => el.click(n));
  return open;
}

/** groupOf is a group's line, collapsed, expandable to who and how many (none for a single event). */
function groupOf(n, t) {
  const g = n.group;
  if (!g || g.count <= 1) return [];
  const more = document.createElement('button');
  more.type = 'button';
  more.className = 'group';
  more.setAttribute('aria-expanded', 'false');
  more.textContent = t.showGroup(g.count);
  const detail = document.createElement('div');
  detail.className = 'meta';
  detail.hidden = true;
  detail.textContent = t.groupOf(g.count, peopleText(t, g.actors || []));
  more.addEventListener('click', () => {
    detail.hidden = !detail.hidden;
    more.setAttribute('aria-expanded', String(!detail.hidden));
    more.textContent = detail.hidden ? t.showGroup(g.count) : t.hideGroup;
  });
  return [more, detail];
}

/** tagsOf is the item's tags, one pill each. */
function tagsOf(n) {
  if (!n.tags || !n.tags.length) return [];
  const tags = document.createElement('div');
  tags.className = 'tags';
  for (const tag of n.tags) {
    const s = document.createElement('span');
    s.className = 'tag';
    s.textContent = tag;
    tags.append(s);
  }
  return [tags];
}

/** actions are the item's buttons: those its state allows. */
function actions(li, n, el) {
  const t = el.t;
  const acts = document.createElement('div');
  acts.className = 'acts';
  acts.setAttribute('role', 'group');
  acts.setAttribute('aria-label', t.actions);
  const act = (icon, label, fn) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.innerHTML = ICONS[icon];
    b.setAttribute('aria-label', label);
    b.title = label;
    b.addEventListener('click', () => el.act(fn));
    acts.append(b);
  };
  const id = n.notificationId;
  if (!n.readAt) act('read', t.markRead, () => el.hub.markRead(id));
  if (n.archivedAt) act('archive', t.unarchive, () => el.hub.unarchive(id));
  else {
    act('archive', t.archive, () => el.hub.archive(id));
    act('snooze', t.snooze, () => toggleSnooze(li, n, el));
  }
  act('delete', t.delete, () => el.hub.delete(id));
  return acts;
}

/** toggleSnooze shows or hides an item's snooze choices: presets and a date. */
function toggleSnooze(li, n, el) {
  const open = li.querySelector('.snooze');
  if (open) { open.remove(); return; }
  const t = el.t;
  const row = document.createElement('div');
  row.className = 'snooze';
  row.setAttribute('role', 'group');
  row.setAttribute('aria-label', t.snooze);
  const at = (d) => () => el.act(() => el.hub.snooze(n.notificationId, d()));
  const morning = (days) => { const d = new Date(); d.setDate(d.getDate() + days); d.setHours(9, 0, 0, 0); return d; };
  const presets = [[t.inHour, () => new Date(Date.now() + 3600_000)], [t.tomorrow, () => morning(1)],
    [t.nextWeek, () => morning(((8 - new Date().getDay()) % 7) || 7)]];
  for (const [label, when] of presets) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.addEventListener('click', at(when));
    row.append(b);
  }
  const input = document.createElement('input');
  input.type = 'datetime-local';
  input.setAttribute('aria-label', t.until);
  const go = document.createElement('button');
  go.type = 'button';
  go.textContent = t.snoozeAt;
  go.addEventListener('click', () => { if (input.value) at(() => new Date(input.value))(); });
  row.append(input, go);
  row.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    e.stopPropagation(); // closes the choices, not the panel
    row.remove();
    li.querySelector(`[aria-label="${CSS.escape(t.snooze)}"]`)?.focus();
  });
  li.querySelector('.body').append(row);
  row.querySelector('button').focus();
}

/**
 * opened opens item n of element el: roomhub-notification-click first
 * (cancelable: preventDefault() stops only the navigation, for an app's
 * own router; e.keepUnread() leaves the item unread), then the item is
 * read (hub.markRead; error(e) on failure) and the page goes to its
 * data.url when that is one a click may open.
 */
export function opened(el, hub, n, error) {
  let keep = false;
  const ev = new CustomEvent('roomhub-notification-click', { detail: n, bubbles: true, composed: true, cancelable: true });
  ev.keepUnread = () => { keep = true; };
  const go = el.dispatchEvent(ev);
  const done = n.readAt || keep ? Promise.resolve() : hub.markRead(n.notificationId).catch(error);
  const url = go ? openable(n.data && n.data.url, location.href) : '';
  if (url) done.then(() => { location.href = url; });
}
