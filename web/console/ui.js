// What every console page uses: its words, the hub's routes (/console/api/,
// the session's door to /api/v1/internal/), elements made with text alone
// (no data ever becomes HTML), a dialog to confirm.
import { texts } from './texts.js';

export const lang = document.documentElement.lang === 'ko' ? 'ko' : 'en';
const csrf = document.querySelector('meta[name="csrf-token"]')?.content ?? '';

/** t is the text of key in the page's language, {0}, {1}… filled by args. */
export function t(key, ...args) {
  const s = texts[lang][key] ?? texts.en[key] ?? key;
  return s.replace(/\{(\d)\}/g, (_, i) => String(args[i]));
}

/** api calls a route of the hub: its result, or an Error with the answer's code. */
export async function api(method, path, body) {
  const headers = {};
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  const r = await fetch(path, { method, headers, credentials: 'same-origin', body: body === undefined ? undefined : JSON.stringify(body) });
  if (r.status === 401) location.reload(); // the session is over: the sign-in form, back here after
  const env = await r.json().catch(() => null);
  if (!r.ok || !env?.isSuccess) {
    const err = new Error(env ? `${env.code}: ${env.message}` : `HTTP ${r.status}`);
    err.status = r.status;
    throw err;
  }
  return env.result;
}

/** el makes an element: attributes (on… listens), then children, strings as text. */
export function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : String(v));
  }
  e.append(...children.flat().filter((c) => c != null && c !== false).map((c) => (c instanceof Node ? c : String(c))));
  return e;
}

/** table is a table of rows: head is its column titles; cells strings or nodes ("num" columns aligned right). */
export function table(caption, head, rows, num = []) {
  return el('table', {},
    el('caption', { class: 'muted' }, caption),
    el('thead', {}, el('tr', {}, head.map((h, i) => el('th', { scope: 'col', class: num.includes(i) ? 'num' : null }, h)))),
    el('tbody', {}, rows.map((r) => el('tr', {}, r.map((c, i) => el('td', { class: num.includes(i) ? 'num' : null }, c))))));
}

/** when is an ISO time in the reader's words, or "never". */
export function when(iso) {
  if (!iso) return t('never');
  return el('time', { datetime: iso, title: iso }, new Date(iso).toLocaleString(lang));
}

/** say puts a message in the page's status line (read out by screen readers). */
export function say(text) {
  document.getElementById('status').textContent = text;
}

/** confirmed asks a question in a dialog: true when confirmed. */
export function confirmed(question) {
  const d = document.getElementById('confirm');
  document.getElementById('confirm-text').textContent = question;
  d.returnValue = '';
  d.showModal();
  return new Promise((resolve) => d.addEventListener('close', () => resolve(d.returnValue === 'yes'), { once: true }));
}

/** every runs f now and every 2 s after each run, while the page is shown. */
export function every(f) {
  const run = async () => {
    if (document.visibilityState === 'visible') {
      try {
        await f();
      } catch (e) {
        say(t('failed', e.message));
      }
    }
    setTimeout(run, 2000);
  };
  run();
}

/** changes returns a test that is true when a reading differs from the
 * last one: a page redrawn only then keeps the focus where it is. */
export function changes() {
  let last = '';
  return (value) => {
    const now = JSON.stringify(value);
    if (now === last) return false;
    last = now;
    return true;
  };
}

/** errorOf is a record's last error and the attempt it came from. */
export const errorOf = (r) => (r.lastErrorCode ? `${r.lastErrorCode}${r.lastErrorAttempt ? ` (#${r.lastErrorAttempt})` : ''}` : '');

/** redriveButton re-drives one dead delivery after a confirmation, then calls done. */
export function redriveButton(r, done) {
  return el('button', {
    type: 'button',
    'aria-label': `${t('redrive')} ${r.channel} ${r.notificationId}`,
    onclick: async () => {
      if (!(await confirmed(t('redriveOne', r.channel, r.notificationId, r.userId)))) return;
      try {
        const res = await api('POST', '/console/api/deliveries/redrive',
          { userId: r.userId, channel: r.channel, notificationIds: [r.notificationId] });
        say(t('redriven', res.requeued));
        done();
      } catch (e) {
        say(t('failed', e.message));
      }
    },
  }, t('redrive'));
}

/** stateCell is a delivery state, coloured by what it means. */
export function stateCell(state) {
  return el('span', { class: `state-${state}` }, state);
}

/** userLink and notificationLink lead to those pages. */
export const userLink = (id) => el('a', { href: `/console/users/${id}` }, String(id));
export const notificationLink = (id) => el('a', { href: `/console/notifications/${encodeURIComponent(id)}` }, id);

