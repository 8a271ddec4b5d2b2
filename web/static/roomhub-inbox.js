// <roomhub-inbox>: a bell with the exact unread count and a feed, in any
// web page, with two lines:
//
//   <script type="module" src="https://hub.example/static/roomhub-inbox.js"></script>
//   <roomhub-inbox base-url="https://hub.example"></roomhub-inbox>
//
// and the token from el.tokenProvider = async () => token (or cookie auth).
// A standard custom element (shadow DOM, no framework): it works the same in
// React, Vue, Svelte, Angular and plain HTML. It listens on the shared page
// stream (one connection per browser, see roomhub.js) and acts through the
// SDK's inbox API. Styling hooks: ::part(bell), ::part(badge), ::part(item),
// ::part(panel), and the --roomhub-* custom properties below.
import { RoomHub, HubError } from './roomhub.js';

/** Built-in messages; `messages` (a property) overrides any of them. */
export const MESSAGES = {
  en: {
    bell: 'Notifications', bellCount: (n) => `Notifications, ${n} unread`, title: 'Notifications',
    all: 'All', unread: 'Unread', archived: 'Archived', markAllRead: 'Mark all as read',
    markRead: 'Mark as read', archive: 'Archive', unarchive: 'Move to inbox', snooze: 'Snooze',
    inHour: 'In an hour', tomorrow: 'Tomorrow morning', nextWeek: 'Next week', until: 'Until', snoozeAt: 'Snooze until then',
    prefs: 'Preferences', back: 'Back', inApp: 'In app', type: 'Type', quiet: 'Quiet hours', from: 'From', to: 'To',
    zone: 'Time zone', save: 'Save', saved: 'Saved', channel: (c) => ({ webpush: 'Browser' })[c] || c[0].toUpperCase() + c.slice(1),
    thisBrowser: 'This browser', pushOn: 'Turn on notifications here', pushOff: 'Turn off notifications here',
    pushDenied: 'Notifications are blocked in this browser\'s settings',
    delete: 'Delete', empty: 'Nothing here yet', error: 'Could not load notifications', retry: 'Try again',
    newItems: (n) => `${n} new`, loadMore: 'Load more', close: 'Close', actions: 'Actions',
    others: (name, n) => `${name} and ${n} other${n === 1 ? '' : 's'}`, user: (id) => `User ${id}`,
    showGroup: (n) => `Show all ${n}`, hideGroup: 'Show less', groupOf: (n, who) => `${n} events, latest from ${who}`,
    newArrived: (n) => `${n} new notification${n === 1 ? '' : 's'}`,
  },
  ko: {
    bell: '알림', bellCount: (n) => `알림, 읽지 않음 ${n}개`, title: '알림',
    all: '전체', unread: '읽지 않음', archived: '보관함', markAllRead: '모두 읽음으로 표시',
    markRead: '읽음으로 표시', archive: '보관', unarchive: '받은 알림으로 이동', snooze: '다시 알림',
    inHour: '1시간 뒤', tomorrow: '내일 아침', nextWeek: '다음 주', until: '날짜', snoozeAt: '이때 다시 알림',
    prefs: '알림 설정', back: '뒤로', inApp: '앱 안', type: '종류', quiet: '방해 금지 시간', from: '시작', to: '끝',
    zone: '시간대', save: '저장', saved: '저장했습니다', channel: (c) => ({ email: '이메일', push: '푸시', sms: '문자', webpush: '브라우저' })[c] || c,
    thisBrowser: '이 브라우저', pushOn: '이 브라우저에서 알림 받기', pushOff: '이 브라우저에서 알림 끄기',
    pushDenied: '브라우저 설정에서 알림이 차단되어 있습니다',
    delete: '삭제', empty: '아직 알림이 없습니다', error: '알림을 불러오지 못했습니다', retry: '다시 시도',
    newItems: (n) => `새 알림 ${n}개`, loadMore: '더 보기', close: '닫기', actions: '작업',
    others: (name, n) => `${name} 외 ${n}명`, user: (id) => `사용자 ${id}`,
    showGroup: (n) => `${n}개 모두 보기`, hideGroup: '접기', groupOf: (n, who) => `이벤트 ${n}개, 최근: ${who}`,
    newArrived: (n) => `새 알림 ${n}개`,
  },
};

const TABS = [
  { key: 'all', state: 'visible', count: 'visible' },
  { key: 'unread', state: 'unread', count: 'unread' },
  { key: 'archived', state: 'archived', count: 'archived' },
];

const PAGE = 20; // the first page of a list
const MORE = 50; // each page after it, as the list scrolls

const STYLE = `
:host { --roomhub-accent: #2563eb; --roomhub-bg: #fff; --roomhub-fg: #111827; --roomhub-muted: #4b5563;
  --roomhub-border: #e5e7eb; --roomhub-unread-bg: #eff6ff; --roomhub-badge-bg: #dc2626; --roomhub-badge-fg: #fff;
  --roomhub-radius: 10px; --roomhub-width: 380px; --roomhub-font: system-ui, sans-serif;
  display: inline-block; position: relative; font: 14px/1.4 var(--roomhub-font); color: var(--roomhub-fg); }
@media (prefers-color-scheme: dark) {
  :host { --roomhub-bg: #111827; --roomhub-fg: #f9fafb; --roomhub-muted: #9ca3af; --roomhub-border: #374151;
    --roomhub-unread-bg: #1e293b; --roomhub-accent: #60a5fa; }
}
:host([mode="inline"]) { display: block; }
button { font: inherit; color: inherit; background: none; border: 0; cursor: pointer; border-radius: 6px; }
button:focus-visible, [tabindex]:focus-visible { outline: 2px solid var(--roomhub-accent); outline-offset: 2px; }
.bell { position: relative; padding: 6px; line-height: 0; }
.bell svg { width: 24px; height: 24px; fill: currentColor; }
.badge { position: absolute; inset-block-start: 0; inset-inline-end: 0; min-width: 18px; height: 18px; padding: 0 5px;
  box-sizing: border-box; border-radius: 9px; background: var(--roomhub-badge-bg); color: var(--roomhub-badge-fg);
  font-size: 11px; font-weight: 600; line-height: 18px; text-align: center; }
.badge[hidden] { display: none; }
.panel { position: absolute; inset-block-start: calc(100% + 6px); inset-inline-end: 0; z-index: 1000;
  width: min(var(--roomhub-width), calc(100vw - 16px)); max-height: min(560px, calc(100vh - 80px));
  display: flex; flex-direction: column; background: var(--roomhub-bg); border: 1px solid var(--roomhub-border);
  border-radius: var(--roomhub-radius); box-shadow: 0 10px 30px rgb(0 0 0 / .18); overflow: hidden;
  animation: appear .12s ease-out; }
.panel[hidden] { display: none; }
.panel.from-left { inset-inline-end: auto; left: 0; right: auto; }
.panel.from-right { inset-inline-start: auto; right: 0; left: auto; }
.panel.sheet { position: fixed; left: 8px; right: 8px; width: auto; max-height: calc(100vh - 80px); }
:host([mode="inline"]) .panel { position: static; width: auto; max-height: none; box-shadow: none; animation: none; }
@keyframes appear { from { opacity: 0; transform: translateY(-4px); } }
@media (prefers-reduced-motion: reduce) { .panel { animation: none; } * { transition: none !important; } }
.head { display: flex; align-items: center; gap: 8px; padding: 10px 12px; border-block-end: 1px solid var(--roomhub-border); }
.head h2 { flex: 1; margin: 0; font-size: 15px; }
.head button { padding: 4px 8px; color: var(--roomhub-accent); font-size: 13px; }
[role="tablist"] { display: flex; gap: 4px; padding: 6px 8px; border-block-end: 1px solid var(--roomhub-border); }
[role="tab"] { padding: 4px 10px; color: var(--roomhub-muted); }
[role="tab"][aria-selected="true"] { color: var(--roomhub-fg); background: var(--roomhub-unread-bg); font-weight: 600; }
[role="tab"] .n { margin-inline-start: 4px; font-variant-numeric: tabular-nums; }
.scroll { position: relative; overflow-y: auto; flex: 1; }
ul { list-style: none; margin: 0; padding: 0; }
li.item { display: flex; gap: 10px; padding: 10px 12px; border-block-end: 1px solid var(--roomhub-border);
  border-inline-start: 3px solid transparent; }
li.item.unread { background: var(--roomhub-unread-bg); }
li.item[data-severity="high"] { border-inline-start-color: #f59e0b; }
li.item[data-severity="critical"] { border-inline-start-color: #dc2626; }
li.item[data-severity="low"] { opacity: .85; }
.body { flex: 1; min-width: 0; }
.open { display: block; width: 100%; text-align: start; padding: 0; }
.item-title { font-weight: 600; overflow-wrap: anywhere; }
.item-text { color: var(--roomhub-fg); overflow-wrap: anywhere; }
.meta { color: var(--roomhub-muted); font-size: 12px; margin-block-start: 2px; }
.tags { display: flex; flex-wrap: wrap; gap: 4px; margin-block-start: 4px; }
.tag { padding: 0 6px; border: 1px solid var(--roomhub-border); border-radius: 999px; font-size: 11px; color: var(--roomhub-muted); }
.acts { display: flex; align-items: flex-start; gap: 2px; }
.acts button { padding: 3px; line-height: 0; color: var(--roomhub-muted); }
.acts svg { width: 16px; height: 16px; fill: currentColor; }
.group { padding: 0; margin-block-start: 2px; color: var(--roomhub-accent); font-size: 12px; }
.snooze { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin-block-start: 6px; }
.snooze button, .prefs button { padding: 2px 8px; border: 1px solid var(--roomhub-border); }
.snooze input, .prefs input, .prefs select { font: inherit; color: inherit; background: var(--roomhub-bg);
  border: 1px solid var(--roomhub-border); border-radius: 6px; padding: 2px 4px; }
.prefs { padding: 10px 12px; overflow-y: auto; }
.prefs table { border-collapse: collapse; width: 100%; margin-block-end: 12px; }
.prefs th, .prefs td { padding: 4px; text-align: start; border-block-end: 1px solid var(--roomhub-border); }
.prefs fieldset { border: 1px solid var(--roomhub-border); border-radius: 6px; margin: 0 0 12px; display: grid; gap: 6px; }
.prefs .row { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.state { padding: 32px 16px; text-align: center; color: var(--roomhub-muted); }
.state button { margin-block-start: 8px; color: var(--roomhub-accent); padding: 4px 8px; }
li.spacer { padding: 0; border: 0; }
.more { display: block; margin: 8px auto; padding: 4px 10px; color: var(--roomhub-accent); }
.pill { position: sticky; inset-block-start: 6px; display: block; margin: 6px auto 0; padding: 4px 12px; border-radius: 999px;
  background: var(--roomhub-accent); color: #fff; font-size: 12px; z-index: 1; }
.pill[hidden] { display: none; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

let shared = null;

/** sheet is the element's style sheet, made once for every instance. */
function sheet() {
  if (!shared) {
    shared = new CSSStyleSheet();
    shared.replaceSync(STYLE);
  }
  return shared;
}

const ICONS = {
  bell: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1Z"/></svg>',
  read: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M9 16.2 4.8 12l-1.4 1.4L9 19 21 7l-1.4-1.4Z"/></svg>',
  archive: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M20.5 5.2 19.1 3.5A1.5 1.5 0 0 0 18 3H6a1.5 1.5 0 0 0-1.1.5L3.5 5.2A2 2 0 0 0 3 6.5V19a2 2 0 0 0 2 2h14a2 2 0 0 0 2-2V6.5a2 2 0 0 0-.5-1.3ZM12 17.5 6.5 12H10v-2h4v2h3.5ZM5.1 5l.8-1h12l.9 1Z"/></svg>',
  snooze: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 4a9 9 0 1 0 9 9 9 9 0 0 0-9-9Zm0 16a7 7 0 1 1 7-7 7 7 0 0 1-7 7Zm.5-11H11v5l4.2 2.5.8-1.2-3.5-2.1Z"/></svg>',
  delete: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6 19a2 2 0 0 0 2 2h8a2 2 0 0 0 2-2V7H6Zm13-15h-3.5l-1-1h-5l-1 1H5v2h14Z"/></svg>',
};

/** text is the default title and body of an item, from its event's data. */
export function itemText(n) {
  const d = (n && n.data) || {};
  const pick = (...ks) => ks.map((k) => d[k]).find((v) => typeof v === 'string' && v.trim() !== '');
  const title = pick('title', 'subject', 'heading') || humanType(n.eventType);
  const body = pick('text', 'body', 'content', 'message', 'description') || '';
  return { title, body };
}

function humanType(t) {
  const s = String(t || '').replace(/[._-]+/g, ' ').trim();
  return s ? s[0].toUpperCase() + s.slice(1) : '';
}

/** badgeText is the badge's display: the exact count up to 99, then 99+. */
/**
 * openable is where an item's data.url may take the page at base: an
 * absolute http(s) URL, or a path that stays on base's origin ("/orders/1";
 * never "//evil.example/x" or "/\\evil.example/x", which a browser reads
 * as another host); '' for anything else (javascript:, data:, …).
 */
export function openable(url, base) {
  if (typeof url !== 'string' || url === '') return '';
  let u;
  try { u = new URL(url, base); } catch { return ''; }
  if (url.startsWith('/') || url.startsWith('\\')) return u.origin === new URL(base).origin ? u.href : '';
  return /^https?:$/.test(u.protocol) && /^https?:\/\//i.test(url) ? u.href : '';
}

export function badgeText(n) { return n > 99 ? '99+' : String(n); }

/** inTab says whether an item belongs in a tab's list: all (visible), unread or archived. */
export function inTab(tab, n, now = Date.now()) {
  if (tab === 'archived') return !!n.archivedAt;
  const later = (ts) => !!ts && Date.parse(ts) > now;
  const visible = !n.archivedAt && !later(n.snoozedUntil) && !(n.expiresAt && !later(n.expiresAt));
  return visible && (tab !== 'unread' || !n.readAt);
}

/** newer says whether a comes before b in a list: newer activity first, ties by id. */
export function newer(a, b) {
  const x = Date.parse(a.activityAt || a.timestamp);
  const y = Date.parse(b.activityAt || b.timestamp);
  return x !== y ? x > y : a.notificationId > b.notificationId;
}

/**
 * placeOf is the index at which item n goes in the sorted items, or -1 when
 * it goes after all of them and more are yet to be loaded (the page that
 * has it will bring it).
 */
export function placeOf(items, n, complete) {
  let i = 0;
  while (i < items.length && newer(items[i], n)) i++;
  return i === items.length && !complete ? -1 : i;
}

/**
 * windowOf chooses which rows of a long list exist in the page: those within
 * `over` pixels of the view (top and height in pixels), at most max of them.
 * height(item) is a row's measured or estimated height. It answers the rows
 * [from, to) and the heights that stand in for the rows before and after.
 */
export function windowOf(items, height, top, view, over = 600, max = 60) {
  let i = 0;
  let y = 0;
  while (i < items.length && y + height(items[i]) <= top - over) y += height(items[i++]);
  const from = i;
  const before = y;
  while (i < items.length && y < top + view + over && i - from < max) y += height(items[i++]);
  const to = i;
  let after = 0;
  for (; i < items.length; i++) after += height(items[i]);
  return { from, to, before, after };
}

// Outside a browser (node's tests) there is no HTMLElement: the helpers
// above still import.
const Base = globalThis.HTMLElement ?? class {};

export class RoomhubInbox extends Base {
  static get observedAttributes() { return ['base-url', 'badge', 'locale', 'mode', 'auth', 'service-worker']; }

  constructor() {
    super();
    this.attachShadow({ mode: 'open' });
    this.provider = null;
    /** renderItem(item, el) may fill el (the item's body) itself; return false to keep the default. */
    this.renderItem = null;
    /** messages override the built-in texts of the locale. */
    this.messages = {};
    /** eventTypes the preferences list, besides those of the items listed and those muted. */
    this.eventTypes = [];
    this.typesSeen = new Set(); // every item's type this element listed: the preferences offer them
    this.hub = null;
    this.stream = null;
    this.counts = null;
    this.tab = 'all';
    this.items = [];
    this.next = null;
    this.loading = false;
    this.failed = false;
    this.fresh = 0; // items that arrived while the list was scrolled down
    this.timer = null;
    // The list's rows exist only near the view (5,000 items listed are a
    // few dozen rows): each row's measured height, the rows made, and the
    // window of items they show.
    this.heights = new Map();
    this.heightSum = 0;
    this.rowH = 72;
    // Rows are measured as the browser lays them out, never by forcing a layout.
    this.sizes = typeof ResizeObserver === 'function' ? new ResizeObserver((es) => {
      for (const e of es) if (e.target.isConnected) this.#measured(e.target.dataset.id, e.borderBoxSize?.[0]?.blockSize ?? e.target.offsetHeight);
    }) : null;
    this.rows = new Map();
    this.win = { from: 0, to: 0 };
    this.gen = 0; // the list asked for last: answers to older asks are dropped
    this.replay = []; // the events' changes while a list is on its way, made again on it
  }

  /**
   * tokenProvider returns a fresh access token (called for the stream and
   * every request). The element connects once it has one.
   * @type {(() => Promise<string>|string)|null}
   */
  get tokenProvider() { return this.provider; }

  set tokenProvider(fn) {
    this.provider = fn;
    if (fn && this.isConnected && !this.stream) this.#connect();
  }

  /** byCookie: auth="cookie", the hub's access_token cookie authenticates (no tokenProvider). */
  #byCookie() { return this.getAttribute('auth') === 'cookie'; }

  get t() {
    const lang = (this.getAttribute('locale') || navigator.language || 'en').toLowerCase().split('-')[0];
    return { ...(MESSAGES[lang] || MESSAGES.en), ...this.messages };
  }

  get inline() { return this.getAttribute('mode') === 'inline'; }

  connectedCallback() {
    // A property set before the element was defined (a framework did it)
    // shadows the accessors: take it over.
    for (const k of ['tokenProvider', 'renderItem', 'messages', 'eventTypes']) {
      if (Object.prototype.hasOwnProperty.call(this, k)) {
        const v = this[k];
        delete this[k];
        this[k] = v;
      }
    }
    if (!this.shadowRoot.firstChild) this.#render();
    if ((this.provider || this.#byCookie()) && !this.stream) this.#connect();
    this.timer = setInterval(() => this.#refreshTimes(), 30_000);
    if (this.inline) this.#open();
  }

  disconnectedCallback() {
    clearInterval(this.timer);
    clearTimeout(this.soonTimer);
    this.soonTimer = null;
    cancelAnimationFrame(this.frame);
    cancelAnimationFrame(this.scrolled);
    this.frame = 0;
    this.scrolled = 0;
    this.stream?.close();
    this.stream = null;
    this.sizes?.disconnect(); // the rows are observed again as they are made
    this.rows.clear();
    document.removeEventListener('pointerdown', this.outside, true);
    window.removeEventListener('resize', this.resized);
  }

  attributeChangedCallback(name, old, now) {
    if (old === now || !this.shadowRoot.firstChild) return;
    if ((name === 'base-url' || name === 'auth') && this.isConnected && (this.provider || this.#byCookie())) {
      this.stream?.close();
      this.stream = null;
      this.#connect();
    } else {
      this.#paintBadge();
      this.#paintTabs();
      this.#paintList();
    }
  }

  #render() {
    const t = this.t;
    // A constructed style sheet: a page's CSP that refuses inline styles
    // (style-src 'self') does not refuse it.
    this.shadowRoot.adoptedStyleSheets = [sheet()];
    this.shadowRoot.innerHTML = `<button class="bell" part="bell" type="button" aria-haspopup="dialog" aria-expanded="false" aria-controls="panel">${ICONS.bell}<span class="badge" part="badge" hidden></span></button>
<div class="panel" id="panel" part="panel" role="dialog" aria-labelledby="title" hidden>
  <div class="head"><h2 id="title"></h2><button type="button" class="all-read"></button><button type="button" class="gear"></button></div>
  <div role="tablist"></div>
  <div class="scroll"><button type="button" class="pill" hidden></button><ul role="list"></ul><div class="foot"></div></div>
  <form class="prefs" hidden></form>
</div>
<div class="sr" role="status" aria-live="polite"></div>`;
    const $ = (s) => this.shadowRoot.querySelector(s);
    this.el = { bell: $('.bell'), badge: $('.badge'), panel: $('.panel'), title: $('#title'), allRead: $('.all-read'),
      tabs: $('[role="tablist"]'), scroll: $('.scroll'), gear: $('.gear'), prefs: $('.prefs'), list: $('ul'), foot: $('.foot'), pill: $('.pill'), live: $('[role="status"]') };
    this.el.title.textContent = t.title;
    this.el.bell.addEventListener('click', () => (this.el.panel.hidden ? this.#open() : this.#close(true)));
    this.el.allRead.addEventListener('click', () => this.#act(() => this.hub.markAllRead()));
    this.el.gear.addEventListener('click', () => (this.el.prefs.hidden ? this.#showPrefs() : this.#hidePrefs()));
    this.el.prefs.addEventListener('submit', (e) => { e.preventDefault(); this.#savePrefs(); });
    this.el.panel.addEventListener('keydown', (e) => this.#keys(e));
    this.el.pill.addEventListener('click', () => { this.el.scroll.scrollTop = 0; this.#reload(true); });
    this.atTop = true; // kept by the scroll listener: an event never reads the layout
    this.el.scroll.addEventListener('scroll', () => {
      this.atTop = this.el.scroll.scrollTop === 0;
      if (this.el.scroll.scrollTop === 0 && this.fresh) this.#reload(true);
      if (this.el.scroll.scrollTop + this.el.scroll.clientHeight >= this.el.scroll.scrollHeight - 40) this.#loadMore();
      if (!this.scrolled) { // the rows near the view, once a frame
        this.scrolled = requestAnimationFrame(() => { this.scrolled = 0; this.#paintWindow(false); });
      }
    });
    this.outside = (e) => { if (!this.inline && !e.composedPath().includes(this)) this.#close(false); };
    this.resized = () => this.#position();
    this.#paintTabs();
    this.#paintBadge();
  }

  #connect() {
    const base = this.getAttribute('base-url') || '';
    this.hub = new RoomHub({ baseUrl: base, getToken: async () => (this.provider ? this.provider() : '') });
    this.stream = this.hub.page({
      notifications: true,
      userId: this.getAttribute('user-id') || undefined, // cookie auth: the tabs of this user share
      onCounts: (c) => this.#setCounts(c),
      onCount: () => this.#paintSoon(),
      onCreated: (d) => this.#arrived(d),
      onUpdated: (d) => this.#updated(d),
      onRead: (d) => this.#read(d),
      onDeleted: (d) => this.#deleted(d),
      onGap: (g) => { if (g.notifications) this.#changed(); }, // events were missed: list again
      onError: (e) => this.#error(e),
    });
    this.hub.counts().then((c) => this.#setCounts(c), (e) => this.#error(e));
    // Web Push: the worker on this page's origin (service-worker="…", else
    // the hub's own when the page is the hub's). Asking its state listens
    // for the worker's clicks (the item is then read) and keeps this
    // browser's subscription fresh at the hub.
    if (this.getAttribute('service-worker')) this.hub.push.serviceWorkerUrl = this.getAttribute('service-worker');
    this.hub.push.state().catch(() => {});
  }

  #setCounts(c) {
    if (!c || (this.counts && c.version <= this.counts.version)) return;
    this.counts = c;
    this.countsChanged = true;
    this.#paintSoon();
  }

  /**
   * paintSoon paints the badge and tabs once a frame: a burst of events
   * (many in one task when they arrive together) changes the counts many
   * times, the page once, and no event forces a layout.
   */
  #paintSoon() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.#paintBadge();
      this.#paintTabs();
      if (this.countsChanged) {
        this.countsChanged = false;
        this.dispatchEvent(new CustomEvent('roomhub-counts', { detail: this.counts, bubbles: true, composed: true }));
      }
    });
  }

  #badgeCount() {
    const c = this.counts;
    if (!c) return this.stream?.count ?? 0;
    return this.getAttribute('badge') === 'unseen' ? c.unseen : c.unread;
  }

  #paintBadge() {
    const n = this.#badgeCount() || 0;
    this.el.badge.hidden = n === 0;
    this.el.badge.textContent = badgeText(n);
    this.el.bell.setAttribute('aria-label', n ? this.t.bellCount(n) : this.t.bell);
    this.el.allRead.textContent = this.t.markAllRead;
    this.el.gear.textContent = this.el.prefs.hidden ? this.t.prefs : this.t.back;
    const hide = !this.counts || this.counts.unread === 0;
    // The focus never goes down with a control that hides: from "mark all
    // read", once done, it moves to the selected tab.
    if (hide && !this.el.allRead.hidden && this.shadowRoot.activeElement === this.el.allRead) {
      this.el.tabs.querySelector('[aria-selected="true"]')?.focus();
    }
    this.el.allRead.hidden = hide;
  }

  #paintTabs() {
    const t = this.t;
    if (!this.el.tabs.children.length) { // made once: a tab keeps the focus while counts change
      this.el.tabs.replaceChildren(...TABS.map((tab) => {
        const b = document.createElement('button');
        b.type = 'button';
        b.setAttribute('role', 'tab');
        b.dataset.tab = tab.key;
        b.addEventListener('click', () => this.#selectTab(tab.key));
        return b;
      }));
    }
    for (const b of this.el.tabs.children) {
      const tab = TABS.find((x) => x.key === b.dataset.tab);
      b.setAttribute('aria-selected', String(tab.key === this.tab));
      b.tabIndex = tab.key === this.tab ? 0 : -1;
      const n = this.counts?.[tab.count];
      b.textContent = t[tab.key];
      if (typeof n === 'number') {
        const c = document.createElement('span');
        c.className = 'n';
        c.textContent = String(n);
        b.append(c);
      }
    }
  }

  #selectTab(key) {
    if (key === this.tab) return;
    this.tab = key;
    this.#paintTabs();
    this.el.tabs.querySelector('[aria-selected="true"]')?.focus();
    this.#reload();
  }

  /**
   * position places the popover: toward the side with room (under a bell
   * near the page's left edge it grows rightward, else leftward), or, on a
   * phone, across the width of the screen under the bell. Again whenever
   * the window changes size while it is open.
   */
  #position() {
    const p = this.el.panel;
    const r = this.getBoundingClientRect();
    const w = window.innerWidth;
    const sheet = w < 480;
    p.classList.toggle('sheet', sheet);
    p.style.top = sheet ? `${Math.round(r.bottom + 6)}px` : '';
    p.classList.toggle('from-left', !sheet && w - r.left >= Math.min(380, w - 16) && r.left < w / 2);
    p.classList.toggle('from-right', !sheet && !p.classList.contains('from-left'));
  }

  #open() {
    if (!this.inline) {
      this.#position();
      document.addEventListener('pointerdown', this.outside, true);
      window.addEventListener('resize', this.resized);
    }
    this.el.panel.hidden = false;
    this.el.bell.setAttribute('aria-expanded', 'true');
    this.#reload();
    // Opening the bell is seeing what it holds.
    if (this.counts?.unseen) this.hub.markAllSeen().catch((e) => this.#error(e));
    if (!this.inline) this.el.tabs.querySelector('[aria-selected="true"]')?.focus();
  }

  #close(refocus) {
    if (this.inline || this.el.panel.hidden) return;
    this.el.panel.hidden = true;
    this.el.bell.setAttribute('aria-expanded', 'false');
    document.removeEventListener('pointerdown', this.outside, true);
    window.removeEventListener('resize', this.resized);
    if (refocus) this.el.bell.focus();
  }

  #keys(e) {
    if (e.key === 'Escape') {
      e.stopPropagation();
      this.#close(true);
      return;
    }
    const tabs = [...this.el.tabs.children];
    const at = tabs.indexOf(this.shadowRoot.activeElement);
    if (at >= 0 && (e.key === 'ArrowRight' || e.key === 'ArrowLeft')) {
      const step = (e.key === 'ArrowRight') !== (getComputedStyle(this).direction === 'rtl') ? 1 : -1;
      this.#selectTab(tabs[(at + step + tabs.length) % tabs.length].dataset.tab);
      e.preventDefault();
      return;
    }
    if (e.key === 'Tab' && !this.inline) { // the focus stays in the panel while it is open
      const f = [...this.el.panel.querySelectorAll('button:not([hidden]), [tabindex="0"]')].filter((x) => !x.closest('[hidden]'));
      if (!f.length) return;
      const first = f[0];
      const last = f[f.length - 1];
      const cur = this.shadowRoot.activeElement;
      if (e.shiftKey && cur === first) { last.focus(); e.preventDefault(); }
      else if (!e.shiftKey && cur === last) { first.focus(); e.preventDefault(); }
    }
  }

  /**
   * reload lists the tab from its top (keep: show the old rows until the
   * new ones come; else none, so the keyboard cannot wander into the last
   * tab's rows meanwhile). A list asked for later wins over one still on
   * its way (gen).
   */
  async #reload(keep = false) {
    this.gen++;
    if (!keep) this.items = [];
    this.heights.clear();
    this.heightSum = 0;
    this.next = null;
    this.fresh = 0;
    this.el.pill.hidden = true;
    const done = this.#loadMore(true);
    if (!keep) this.#paintList();
    await done;
  }

  async #loadMore(first = false) {
    if (!first && (this.loading || !this.next)) return;
    const gen = this.gen;
    this.loading = true;
    this.replay = [];
    const tab = TABS.find((x) => x.key === this.tab);
    try {
      const page = await this.hub.list({ limit: first ? PAGE : MORE, state: tab.state, before: first ? undefined : this.next });
      if (gen !== this.gen) return;
      if (first) this.items = page.notifications;
      else { // an item placed from an event meanwhile is not listed twice
        const have = new Set(this.items.map((n) => n.notificationId));
        this.items = this.items.concat(page.notifications.filter((n) => !have.has(n.notificationId)));
      }
      this.#replay();
      for (const n of page.notifications) this.typesSeen.add(n.eventType);
      this.next = page.hasMore ? page.nextBefore : null;
      this.failed = false;
    } catch (e) {
      if (gen !== this.gen) return;
      this.failed = true;
      this.#error(e);
    } finally {
      if (gen === this.gen) this.loading = false;
    }
    this.#paintList();
  }

  #paintList() {
    const t = this.t;
    if (this.failed && !this.items.length) {
      const s = document.createElement('div');
      s.className = 'state';
      s.textContent = t.error;
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = t.retry;
      b.addEventListener('click', () => this.#reload());
      s.append(document.createElement('br'), b);
      this.el.list.replaceChildren();
      this.el.foot.replaceChildren(s);
      return;
    }
    this.#paintWindow(true);
    const foot = [];
    if (!this.items.length && !this.loading) {
      const s = document.createElement('div');
      s.className = 'state';
      s.textContent = t.empty;
      foot.push(s);
    } else if (this.next) {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = 'more';
      b.textContent = t.loadMore;
      b.addEventListener('click', () => this.#loadMore());
      foot.push(b);
    }
    this.el.foot.replaceChildren(...foot);
  }

  /**
   * paintWindow makes the rows near the view and no others (force: the
   * items changed, make them again). A row kept stays in the page, so the
   * focus stays in it; a keyboard user whose row went keeps their place:
   * the same control of the same item, or the item's main button, or the
   * one that took its place.
   */
  #paintWindow(force) {
    const sc = this.el.scroll;
    const items = this.items;
    const est = this.rowH;
    const w = windowOf(items, (n) => this.heights.get(n.notificationId) ?? est, sc.scrollTop, sc.clientHeight || 560);
    if (!force && w.from === this.win.from && w.to === this.win.to) return;
    this.win = w;
    const active = this.shadowRoot.activeElement;
    const gone = active?.closest('li.item');
    const at = gone ? Number(gone.getAttribute('aria-posinset')) - 1 : -1;
    const label = active?.getAttribute('aria-label');
    const size = this.next ? (this.counts?.[TABS.find((x) => x.key === this.tab).count] ?? -1) : items.length;
    const rows = new Map();
    const want = [this.#spacer('before', w.before)];
    for (let i = w.from; i < w.to; i++) {
      const n = items[i];
      let li = this.rows.get(n.notificationId);
      if (!li || li.item !== n) li = this.#item(n);
      li.setAttribute('aria-posinset', String(i + 1));
      li.setAttribute('aria-setsize', String(size));
      rows.set(n.notificationId, li);
      want.push(li);
    }
    want.push(this.#spacer('after', w.after));
    this.rows = rows;
    // Rows that go are taken out first, so those kept never move (a moved
    // node loses the focus); the new ones go in around them.
    const keep = new Set(want);
    for (const node of [...this.el.list.children]) {
      if (keep.has(node)) continue;
      node.remove();
      this.sizes?.unobserve(node);
    }
    let cur = this.el.list.firstChild;
    for (const node of want) {
      if (cur === node) cur = cur.nextSibling;
      else {
        this.el.list.insertBefore(node, cur);
        if (node.dataset.id) this.sizes?.observe(node);
      }
    }
    if (gone && !gone.isConnected) {
      const same = rows.get(gone.dataset.id);
      const near = this.el.list.querySelectorAll('li.item')[Math.max(0, Math.min(at - w.from, rows.size - 1))];
      const target = (same && label && same.querySelector(`[aria-label="${CSS.escape(label)}"]`)) || same?.querySelector('.open') ||
        near?.querySelector('.open');
      (target || this.el.tabs.querySelector('[aria-selected="true"]'))?.focus();
    }
    // The rows reach the end of what is loaded: load more before the reader gets there.
    if (w.to === items.length && this.next && !this.failed && !this.el.panel.hidden) this.#loadMore();
  }

  /** measured keeps a row's height; rows not yet made are estimated at the mean of those measured. */
  #measured(id, h) {
    if (!h) return;
    this.heightSum += h - (this.heights.get(id) ?? 0);
    this.heights.set(id, h);
    this.rowH = this.heightSum / this.heights.size;
  }

  /** spacer is the stand-in for the rows before or after the window. */
  #spacer(which, px) {
    this.spacers ??= {};
    let li = this.spacers[which];
    if (!li) {
      li = document.createElement('li');
      li.className = 'spacer';
      li.setAttribute('aria-hidden', 'true');
      this.spacers[which] = li;
    }
    li.style.height = `${px}px`; // through the CSSOM: a CSP without 'unsafe-inline' allows it
    return li;
  }

  #item(n) {
    const t = this.t;
    const li = document.createElement('li');
    li.item = n;
    li.className = 'item' + (n.readAt ? '' : ' unread');
    li.setAttribute('part', 'item');
    li.dataset.id = n.notificationId;
    li.dataset.severity = n.severity || 'normal';
    const body = document.createElement('div');
    body.className = 'body';
    const open = document.createElement('button');
    open.type = 'button';
    open.className = 'open';
    if (!(this.renderItem && this.renderItem(n, open) !== false)) {
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
    open.addEventListener('click', () => this.#clicked(n));
    const meta = document.createElement('div');
    meta.className = 'meta';
    meta.dataset.at = n.activityAt || n.timestamp;
    meta.textContent = this.#meta(n);
    body.append(open, meta);
    const g = n.group;
    if (g && g.count > 1) { // a group: collapsed to one line, expandable to who and how many
      const more = document.createElement('button');
      more.type = 'button';
      more.className = 'group';
      more.setAttribute('aria-expanded', 'false');
      more.textContent = t.showGroup(g.count);
      const detail = document.createElement('div');
      detail.className = 'meta';
      detail.hidden = true;
      detail.textContent = t.groupOf(g.count, (g.actors || []).map((a) => t.user(a)).join(', '));
      more.addEventListener('click', () => {
        detail.hidden = !detail.hidden;
        more.setAttribute('aria-expanded', String(!detail.hidden));
        more.textContent = detail.hidden ? t.showGroup(g.count) : t.hideGroup;
      });
      body.append(more, detail);
    }
    if (n.tags && n.tags.length) {
      const tags = document.createElement('div');
      tags.className = 'tags';
      for (const tag of n.tags) {
        const s = document.createElement('span');
        s.className = 'tag';
        s.textContent = tag;
        tags.append(s);
      }
      body.append(tags);
    }
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
      b.addEventListener('click', () => this.#act(fn));
      acts.append(b);
    };
    const id = n.notificationId;
    if (!n.readAt) act('read', t.markRead, () => this.hub.markRead(id));
    if (n.archivedAt) act('archive', t.unarchive, () => this.hub.unarchive(id));
    else {
      act('archive', t.archive, () => this.hub.archive(id));
      act('snooze', t.snooze, () => this.#toggleSnooze(li, n));
    }
    act('delete', t.delete, () => this.hub.delete(id));
    li.append(body, acts);
    return li;
  }

  /** toggleSnooze shows or hides an item's snooze choices: presets and a date. */
  #toggleSnooze(li, n) {
    const open = li.querySelector('.snooze');
    if (open) { open.remove(); return; }
    const t = this.t;
    const row = document.createElement('div');
    row.className = 'snooze';
    row.setAttribute('role', 'group');
    row.setAttribute('aria-label', t.snooze);
    const at = (d) => () => this.#act(() => this.hub.snooze(n.notificationId, d()));
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

  /** showPrefs shows the preferences: types × channels, and quiet hours. */
  async #showPrefs() {
    const t = this.t;
    let st;
    try {
      st = await this.hub.settings();
    } catch (e) {
      this.#error(e);
      return;
    }
    this.settings = st;
    const channels = Object.keys(st.channels || {}).sort();
    const types = [...new Set([...(this.eventTypes || []), ...this.typesSeen, ...st.mutedEventTypes,
      ...channels.flatMap((c) => st.channels[c].mutedEventTypes || [])])].sort();
    const f = this.el.prefs;
    f.replaceChildren();
    const table = document.createElement('table');
    const header = (scope, text) => {
      const th = document.createElement('th');
      th.scope = scope;
      th.textContent = text;
      return th;
    };
    const head = table.createTHead().insertRow();
    for (const h of [t.type, t.inApp, ...channels.map((c) => t.channel(c))]) head.append(header('col', h));
    const input = (type, name, label, props) => {
      const i = Object.assign(document.createElement('input'), { type, name }, props);
      i.setAttribute('aria-label', label);
      return i;
    };
    const check = (name, on, label) => input('checkbox', name, label, { checked: on });
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
      r.append(header('row', ''), document.createElement('td'));
      for (const c of channels) r.insertCell().append(check(`on|${c}`, st.channels[c].enabled !== false, `${t.channel(c)}: on`));
    }
    f.append(table);
    if (channels.includes('webpush')) f.append(await this.#pushRow());
    if (channels.length) {
      const q = st.quietHours;
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
      f.append(fs);
    }
    const save = document.createElement('button');
    save.type = 'submit';
    save.textContent = t.save;
    f.append(save);
    this.el.scroll.hidden = true;
    this.el.tabs.hidden = true;
    f.hidden = false;
    this.#paintBadge();
    f.querySelector('input')?.focus();
  }

  /** pushRow is this browser's Web Push: on or off here (the channel above is the user's, everywhere). */
  async #pushRow() {
    const t = this.t;
    const row = document.createElement('div');
    row.className = 'row push';
    const label = document.createElement('span');
    label.textContent = t.thisBrowser;
    const b = document.createElement('button');
    b.type = 'button';
    const show = (state) => {
      row.hidden = state === 'unsupported';
      b.hidden = state === 'denied';
      b.dataset.state = state;
      b.textContent = state === 'on' ? t.pushOff : t.pushOn;
      note.textContent = state === 'denied' ? t.pushDenied : '';
    };
    const note = document.createElement('span');
    b.addEventListener('click', async () => { // a click: the browser may ask for the permission
      try {
        show(b.dataset.state === 'on' ? await this.hub.push.disable() : await this.hub.push.enable());
      } catch (e) {
        this.#error(e);
      }
    });
    row.append(label, b, note);
    show(await this.hub.push.state().catch(() => 'unsupported'));
    return row;
  }

  #hidePrefs() {
    this.el.prefs.hidden = true;
    this.el.scroll.hidden = false;
    this.el.tabs.hidden = false;
    this.#paintBadge();
    this.el.gear.focus();
  }

  async #savePrefs() {
    const f = this.el.prefs;
    const st = this.settings;
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
    try {
      this.settings = await this.hub.settings(change);
      this.el.live.textContent = this.t.saved;
      this.#hidePrefs();
    } catch (e) {
      this.#error(e);
    }
  }

  #meta(n) {
    const t = this.t;
    const g = n.group;
    const who = (id) => (id ? t.user(id) : '');
    let actor = who(n.publisherId);
    if (g && g.count > 1 && g.actors && g.actors.length) actor = t.others(who(g.actors[0]), g.count - 1);
    return [actor, this.#ago(n.activityAt || n.timestamp)].filter(Boolean).join(' · ');
  }

  #ago(ts) {
    const ms = Date.parse(ts);
    if (Number.isNaN(ms)) return '';
    const lang = this.getAttribute('locale') || navigator.language || 'en';
    if (this.rtfLang !== lang) { // made once per locale: Intl formatters are slow to make
      this.rtf = new Intl.RelativeTimeFormat(lang, { numeric: 'auto' });
      this.rtfLang = lang;
    }
    const rtf = this.rtf;
    const s = Math.round((ms - Date.now()) / 1000);
    const abs = Math.abs(s);
    if (abs < 60) return rtf.format(s, 'second');
    if (abs < 3600) return rtf.format(Math.round(s / 60), 'minute');
    if (abs < 86400) return rtf.format(Math.round(s / 3600), 'hour');
    return rtf.format(Math.round(s / 86400), 'day');
  }

  #refreshTimes() {
    for (const li of this.rows.values()) {
      const meta = li.querySelector('.meta');
      if (meta) meta.textContent = this.#meta(li.item);
    }
  }

  /** arrived takes a new item (notification.created) into the open list. */
  #arrived(d) {
    this.arrivedNow = (this.arrivedNow || 0) + 1;
    if (this.el.panel.hidden || !d) {
      this.#soon(null);
      return;
    }
    const { unread, counts, ...n } = d;
    this.typesSeen.add(n.eventType);
    this.#patch((again) => this.#place(n, again));
  }

  /**
   * patch makes an event's change to the open list, and again on the list
   * that arrives if one is on its way: the hub may have answered it before
   * the change.
   */
  #patch(fn) {
    fn(false);
    if (this.loading) this.replay.push(fn);
    this.#soon('paint');
  }

  #replay() {
    for (const fn of this.replay) fn(true);
    this.replay = [];
  }

  /**
   * place puts an item, new or changed, where it belongs in the open list:
   * out of it if its tab no longer has it; at the top only while the reader
   * is there (further down, the "N new" pill says so and the list does not
   * move); nowhere when it belongs after what is loaded. again: the change
   * is made once more, on a list that came meanwhile (the pill counted it).
   */
  #place(n, again) {
    const at = this.items.findIndex((x) => x.notificationId === n.notificationId);
    const was = at >= 0 ? this.items[at] : null;
    if (at >= 0) this.items.splice(at, 1);
    if (!inTab(this.tab, n)) return;
    const to = placeOf(this.items, n, !this.next);
    const moved = !was || (was.activityAt || was.timestamp) !== (n.activityAt || n.timestamp);
    if (to === 0 && moved && !this.atTop) {
      if (again) return;
      this.fresh++;
      this.el.pill.textContent = this.t.newItems(this.fresh);
      this.el.pill.hidden = false;
    } else if (to >= 0) {
      this.items.splice(to, 0, n);
    }
  }

  /** updated applies notification.updated: items changed, or a filter's many (list again). */
  #updated(d) {
    if (this.el.panel.hidden || !d) return;
    if (!Array.isArray(d.notifications)) {
      this.#changed();
      return;
    }
    this.#patch((again) => { for (const n of d.notifications) this.#place(n, again); });
  }

  /** read applies notification.read: the items read (and so seen). */
  #read(d) {
    if (this.el.panel.hidden || !d || !Array.isArray(d.notificationIds)) return;
    const ids = new Set(d.notificationIds);
    const now = d.readAt || new Date().toISOString();
    this.#patch(() => {
      this.items = this.items.flatMap((n) => {
        if (!ids.has(n.notificationId) || n.readAt) return [n];
        const r = { ...n, readAt: now, seenAt: n.seenAt || now };
        return inTab(this.tab, r) ? [r] : [];
      });
    });
  }

  /** deleted applies notification.deleted: deleted, expired or past retention. */
  #deleted(d) {
    if (this.el.panel.hidden || !d || !Array.isArray(d.notificationIds)) return;
    const ids = new Set(d.notificationIds);
    this.#patch(() => { this.items = this.items.filter((n) => !ids.has(n.notificationId)); });
  }

  #announce() {
    if (this.arrivedNow) this.el.live.textContent = this.t.newArrived(this.arrivedNow);
    this.arrivedNow = 0;
  }

  /** changed lists the open list's first items again (what changed is not known). */
  #changed() {
    if (!this.el.panel.hidden) this.#soon('reload');
  }

  /**
   * soon announces what arrived and does what the list needs ('paint': its
   * rows drawn again; 'reload': its first items listed again, then drawn;
   * null: nothing) once a burst of events has passed, 100 ms after its
   * first: 500 notifications in a second draw the list a few times, not
   * 500. The most asked for in the burst is done.
   */
  #soon(need) {
    if (need === 'reload' || (need === 'paint' && !this.soonNeed)) this.soonNeed = need;
    if (this.soonTimer) return;
    this.soonTimer = setTimeout(() => {
      this.soonTimer = null;
      const run = this.soonNeed;
      this.soonNeed = null;
      this.#announce();
      if (run === 'reload') this.#reloadKeepingPlace();
      else if (run === 'paint') this.#paintList();
    }, 100);
  }

  async #reloadKeepingPlace() {
    const gen = ++this.gen;
    const top = this.el.scroll.scrollTop;
    const shown = Math.max(this.items.length, PAGE);
    const tab = TABS.find((x) => x.key === this.tab);
    this.loading = true;
    this.replay = [];
    try {
      const page = await this.hub.list({ limit: Math.min(shown, 100), state: tab.state });
      if (gen !== this.gen) return;
      this.items = page.notifications;
      this.#replay();
      this.next = page.hasMore ? page.nextBefore : null;
      this.loading = false; // before painting: rows that reach the end load the next page
      this.#paintList();
      this.el.scroll.scrollTop = top;
    } catch (e) {
      if (gen === this.gen) this.#error(e);
    } finally {
      if (gen === this.gen) this.loading = false;
    }
  }

  #clicked(n) {
    const ev = new CustomEvent('roomhub-notification-click', { detail: n, bubbles: true, composed: true, cancelable: true });
    if (!this.dispatchEvent(ev)) return;
    const done = n.readAt ? Promise.resolve() : this.hub.markRead(n.notificationId).catch((e) => this.#error(e));
    const url = openable(n.data && n.data.url, location.href);
    if (url) done.then(() => { location.href = url; });
  }

  async #act(fn) {
    try {
      await fn();
    } catch (e) {
      this.#error(e);
    }
  }

  #error(e) {
    const detail = e instanceof HubError ? { status: e.status, code: e.code, message: e.message } : { message: String(e && e.message || e) };
    this.dispatchEvent(new CustomEvent('roomhub-error', { detail, bubbles: true, composed: true }));
  }
}

if (globalThis.customElements && !customElements.get('roomhub-inbox')) customElements.define('roomhub-inbox', RoomhubInbox);
