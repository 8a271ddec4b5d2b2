// The element's preferences: event types × channels (in the app, and each
// channel the hub delivers through), quiet hours, this browser's Web Push,
// the person's devices, and the topics they follow (each with Leave). A
// form made from the user's settings, and the change it asks for.
import { humanType } from './texts.js';

/**
 * fillPrefs makes form f from the user's settings st and devices (the
 * person's phones and browsers). types are the event types to offer
 * besides those muted; t the texts; push the SDK's Web Push (this
 * browser's row) and error(e) reports its failure; topics what the person
 * follows (topicsOf), each left at once by leave(topicKey).
 */
export async function fillPrefs(f, st, devices, { t, types, push, error, topics = [], leave }) {
  const channels = Object.keys(st.channels || {}).sort();
  const all = [...new Set([...types, ...st.mutedEventTypes, ...channels.flatMap((c) => st.channels[c].mutedEventTypes || [])])].sort();
  f.replaceChildren(typesTable(st, channels, all, t));
  if (channels.includes('webpush')) f.append(await pushRow(t, push, error));
  if (devices.length) f.append(deviceList(devices, t));
  if (topics.length) f.append(topicList(topics, t, leave));
  if (channels.length) f.append(quietHours(st.quietHours, t));
  const save = document.createElement('button');
  save.type = 'submit';
  save.textContent = t.save;
  f.append(save);
}

const input = (type, name, label, props) => {
  const i = Object.assign(document.createElement('input'), { type, name }, props);
  i.setAttribute('aria-label', label);
  return i;
};

const check = (name, on, label) => input('checkbox', name, label, { checked: on });

/** typesTable is a checkbox per type and channel (named "channel|type", "app|type"), and one per channel ("on|channel"). */
function typesTable(st, channels, types, t) {
  const table = document.createElement('table');
  const header = (scope, text) => {
    const th = document.createElement('th');
    th.scope = scope;
    th.textContent = text;
    return th;
  };
  const head = table.createTHead().insertRow();
  for (const h of [t.type, t.inApp, ...channels.map((c) => t.channel(c))]) head.append(header('col', h));
  const body = table.createTBody();
  for (const type of types) {
    const r = body.insertRow();
    r.append(header('row', humanType(type)));
    r.insertCell().append(check(`app|${type}`, !st.mutedEventTypes.includes(type), `${humanType(type)}: ${t.inApp}`));
    for (const c of channels) {
      r.insertCell().append(check(`${c}|${type}`, !(st.channels[c].mutedEventTypes || []).includes(type), `${humanType(type)}: ${t.channel(c)}`));
    }
  }
  if (channels.length) {
    const r = body.insertRow();
    r.append(header('row', t.on), document.createElement('td'));
    for (const c of channels) r.insertCell().append(check(`on|${c}`, st.channels[c].enabled !== false, `${t.channel(c)}: on`));
  }
  return table;
}

/**
 * devicesOf is the person's devices (hub.devices.list()) when the settings
 * st have a channel the hub sends itself (the device routes are on only
 * then), else none.
 */
export async function devicesOf(hub, st) {
  const pushed = Object.keys(st.channels || {}).some((c) => ['webpush', 'fcm', 'apns'].includes(c));
  return pushed ? hub.devices.list().catch(() => []) : [];
}

/** deviceList is a switch per device (named "device|<id>"): consent per device. */
function deviceList(devices, t) {
  const fs = document.createElement('fieldset');
  fs.className = 'devices';
  const lg = document.createElement('legend');
  lg.textContent = t.devices;
  fs.append(lg);
  for (const d of devices) {
    const name = d.label ? `${d.label} (${t.platform(d.platform)})` : t.platform(d.platform);
    const box = check(`device|${d.id}`, d.enabled, name);
    box.dataset.was = String(d.enabled);
    const label = document.createElement('label');
    label.className = 'row';
    label.append(box, name);
    fs.append(label);
  }
  return fs;
}

/** devicesChange is the devices form f turns on or off: [{id, on}], those changed only. */
export function devicesChange(f) {
  return [...f.querySelectorAll('input[type="checkbox"][name^="device|"]')]
    .filter((c) => String(c.checked) !== c.dataset.was).map((c) => ({ id: c.name.slice('device|'.length), on: c.checked }));
}

/**
 * topicsOf is the first page of what the person follows (hub.topics()):
 * none when the hub serves no topics, or it fails.
 */
export async function topicsOf(hub) {
  try {
    return (await hub.topics({ limit: 100 })).topics;
  } catch {
    return [];
  }
}

/**
 * topicList is a row per topic followed, each with a Leave button: a click
 * awaits leave(topicKey), then the row goes and the focus moves to the next
 * Leave (or the one before, or the form's Save). A failed leave keeps it.
 */
function topicList(topics, t, leave) {
  const fs = document.createElement('fieldset');
  fs.className = 'topics';
  const lg = document.createElement('legend');
  lg.textContent = t.topics;
  fs.append(lg);
  for (const { topicKey } of topics) {
    const row = document.createElement('div');
    row.className = 'row';
    const name = document.createElement('span');
    name.textContent = topicKey;
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = t.leave;
    b.setAttribute('aria-label', t.leaveTopic(topicKey));
    b.addEventListener('click', async () => {
      b.disabled = true;
      try {
        await leave(topicKey);
      } catch {
        b.disabled = false;
        return;
      }
      const next = row.nextElementSibling || row.previousElementSibling;
      row.remove();
      const focus = next?.querySelector('button') || fs.closest('form')?.querySelector('button[type="submit"]');
      if (!fs.querySelector('.row')) fs.remove();
      focus?.focus();
    });
    row.append(name, b);
    fs.append(row);
  }
  return fs;
}

/** quietHours is the quiet hours' fieldset: on or off, from, to, and the time zone. */
function quietHours(q, t) {
  const fs = document.createElement('fieldset');
  const lg = document.createElement('legend');
  lg.textContent = t.quiet;
  const on = check('quiet', !!q, t.quiet);
  const time = (name, label, value) => input('time', name, label, { value });
  const zone = document.createElement('select');
  zone.name = 'zone';
  zone.setAttribute('aria-label', t.zone);
  const here = Intl.DateTimeFormat().resolvedOptions().timeZone;
  const zones = typeof Intl.supportedValuesOf === 'function' ? Intl.supportedValuesOf('timeZone') : [here];
  for (const z of new Set([q?.timeZone || here, ...zones])) zone.add(new Option(z, z));
  zone.value = q?.timeZone || here;
  const row = document.createElement('div');
  row.className = 'row';
  row.append(on, time('start', t.from, q?.start || '22:00'), time('end', t.to, q?.end || '07:00'), zone);
  fs.append(lg, row);
  return fs;
}

/** PUSH_WAIT_MS is how long a turn on or off may take before the row says it failed. */
const PUSH_WAIT_MS = 30000;

/**
 * pushRow is this browser's Web Push: on or off here (the channel above is
 * the user's, everywhere). While a turn on or off is under way its button
 * waits and the row says so; one that never finishes says it failed.
 */
async function pushRow(t, push, error) {
  const row = document.createElement('div');
  row.className = 'row push';
  const label = document.createElement('span');
  label.textContent = t.thisBrowser;
  const b = document.createElement('button');
  b.type = 'button';
  const note = document.createElement('span');
  const show = (state) => {
    row.hidden = state === 'unsupported';
    b.hidden = state === 'denied';
    b.dataset.state = state;
    b.textContent = state === 'on' ? t.pushOff : t.pushOn;
    note.textContent = state === 'denied' ? t.pushDenied : '';
  };
  b.addEventListener('click', async () => { // a click: the browser may ask for the permission
    b.disabled = true;
    note.textContent = t.pushWorking; // a permission prompt or a push service may take a while
    let timer;
    const late = new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(t.pushFailed)), PUSH_WAIT_MS); });
    try {
      show(await Promise.race([b.dataset.state === 'on' ? push.disable() : push.enable(), late]));
    } catch (e) {
      note.textContent = t.pushFailed;
      error(e);
    } finally {
      clearTimeout(timer);
      b.disabled = false;
    }
  });
  row.append(label, b, note);
  show(await push.state().catch(() => 'unsupported'));
  return row;
}

/** prefsChange is the settings change form f asks for, on the settings st it was made from. */
export function prefsChange(f, st) {
  const unchecked = (prefix) => [...f.querySelectorAll(`input[type="checkbox"][name^="${prefix}|"]`)]
    .filter((c) => !c.checked).map((c) => c.name.slice(prefix.length + 1));
  const change = { mutedEventTypes: unchecked('app') };
  const channels = Object.keys(st.channels || {});
  if (channels.length) {
    change.channels = {};
    for (const c of channels) {
      change.channels[c] = { enabled: f.querySelector(`input[name="on|${CSS.escape(c)}"]`).checked, mutedEventTypes: unchecked(c) };
    }
    change.quietHours = f.elements.quiet.checked
      ? { start: f.elements.start.value, end: f.elements.end.value, timeZone: f.elements.zone.value } : null;
  }
  return change;
}
