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
// SDK's inbox API.
//
// This file is the element: its parts, the bell and panel, the stream's
// events. One module a job beside it (web/static/inbox/): texts.js (the
// messages, an item's text), style.js (the style sheet and icons: styling
// hooks are there), feed.js (a tab's items, loaded and kept as events
// change them), rows.js (the rows near the view), item.js (an item's row)
// and prefs.js (the preferences form).
import { RoomHub, HubError } from './roomhub.js';
import { MESSAGES, badgeText, metaText, Ago } from './inbox/texts.js';
import { sheet } from './inbox/style.js';
import { Feed, Burst } from './inbox/feed.js';
import { MARKUP, placePanel, keepFocus, paintTabs, listFoot } from './inbox/panel.js';
import { Rows } from './inbox/rows.js';
import { itemRow, opened } from './inbox/item.js';
import { fillPrefs, prefsChange, devicesChange, devicesOf, topicsOf } from './inbox/prefs.js';

export { MESSAGES, itemText, badgeText, openable } from './inbox/texts.js';
export { inTab, newer, placeOf } from './inbox/feed.js';
export { windowOf } from './inbox/rows.js';

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
    this.hub = null;
    this.stream = null;
    this.counts = null;
    this.timer = null;
    this.feed = new Feed((q) => this.hub.list(q));
    this.rows = null; // made with the shadow DOM's list
    this.ago = new Ago();
    this.burst = new Burst((need) => {
      if (this.arrivedNow) this.el.live.textContent = this.t.newArrived(this.arrivedNow);
      this.arrivedNow = 0;
      if (need === 'reload') this.#reloadKeepingPlace();
      else if (need === 'paint') this.#paintList();
    });
  }

  // The list's state, read by tests and tools: the feed's.
  get items() { return this.feed.items; }
  get next() { return this.feed.next; }
  get loading() { return this.feed.loading; }
  get failed() { return this.feed.failed; }
  get gen() { return this.feed.gen; }

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
    this.burst.stop();
    cancelAnimationFrame(this.frame);
    cancelAnimationFrame(this.scrolled);
    this.frame = 0;
    this.scrolled = 0;
    this.stream?.close();
    this.stream = null;
    this.rows?.stop();
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
    this.shadowRoot.innerHTML = MARKUP;
    const $ = (s) => this.shadowRoot.querySelector(s);
    this.el = { bell: $('.bell'), badge: $('.badge'), panel: $('.panel'), title: $('#title'), allRead: $('.all-read'),
      tabs: $('[role="tablist"]'), scroll: $('.scroll'), gear: $('.gear'), prefs: $('.prefs'), list: $('ul'), foot: $('.foot'), pill: $('.pill'), live: $('[role="status"]') };
    this.el.title.textContent = t.title;
    this.rows = new Rows(this.el.list);
    this.el.bell.addEventListener('click', () => (this.el.panel.hidden ? this.#open() : this.#close(true)));
    this.el.allRead.addEventListener('click', () => this.#act(() => this.hub.markAllRead()));
    this.el.gear.addEventListener('click', () => (this.el.prefs.hidden ? this.#showPrefs() : this.#hidePrefs()));
    this.el.prefs.addEventListener('submit', (e) => { e.preventDefault(); this.#savePrefs(); });
    this.el.panel.addEventListener('keydown', (e) => this.#keys(e));
    this.el.pill.addEventListener('click', () => { this.el.scroll.scrollTop = 0; this.#reload(true); });
    this.atTop = true; // kept by the scroll listener: an event never reads the layout
    this.el.scroll.addEventListener('scroll', () => {
      this.atTop = this.el.scroll.scrollTop === 0;
      if (this.el.scroll.scrollTop === 0 && this.feed.fresh) this.#reload(true);
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
    paintTabs(this.el.tabs, { t: this.t, counts: this.counts, tab: this.feed.tab, select: (key) => this.#selectTab(key) });
  }

  #selectTab(key) {
    if (key === this.feed.tab) return;
    this.feed.tab = key;
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
    placePanel(this.el.panel, this.getBoundingClientRect());
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
    if (e.key === 'Tab' && !this.inline) keepFocus(e, this.el.panel, this.shadowRoot.activeElement); // the focus stays in the panel while it is open
  }

  /**
   * reload lists the tab from its top (keep: show the old rows until the
   * new ones come; else none, so the keyboard cannot wander into the last
   * tab's rows meanwhile). A list asked for later wins over one still on
   * its way (gen).
   */
  async #reload(keep = false) {
    this.feed.restart(keep);
    this.rows.forget();
    this.el.pill.hidden = true;
    const done = this.#loadMore(true);
    if (!keep) this.#paintList();
    await done;
  }

  async #loadMore(first = false) {
    try {
      if (!(await this.feed.more(first))) return;
    } catch (e) {
      this.#error(e);
    }
    this.#paintList();
  }

  #paintList() {
    const { items, next, failed, loading } = this.feed;
    const gone = failed && !items.length;
    if (gone) this.el.list.replaceChildren();
    else this.#paintWindow(true);
    const foot = { failed: gone, empty: !items.length && !loading, more: !!next };
    this.el.foot.replaceChildren(...listFoot(this.t, foot, () => this.#reload(), () => this.#loadMore()));
  }

  /** paintWindow makes the rows near the view (force: the items changed, make them again). */
  #paintWindow(force) {
    const sc = this.el.scroll;
    const { items, next } = this.feed;
    let parts; // made once a paint, when a row is: the texts are a merge
    const w = this.rows.paint({
      items, top: sc.scrollTop, view: sc.clientHeight || 560, force,
      size: next ? (this.counts?.[this.feed.count] ?? -1) : items.length,
      make: (n) => itemRow(n, (parts ??= this.#rowParts)),
      active: this.shadowRoot.activeElement,
      fallback: () => this.el.tabs.querySelector('[aria-selected="true"]'),
    });
    // The rows reach the end of what is loaded: load more before the reader gets there.
    if (w && w.to === items.length && next && !this.feed.failed && !this.el.panel.hidden) this.#loadMore();
  }

  /** rowParts is what an item's row needs of the element. */
  get #rowParts() {
    return {
      t: this.t, renderItem: this.renderItem, hub: this.hub, meta: (n) => this.#meta(n),
      act: (fn) => this.#act(fn), click: (n) => opened(this, this.hub, n, (e) => this.#error(e)),
    };
  }

  /** showPrefs shows the preferences: types × channels, quiet hours, this browser's push, devices, topics. */
  async #showPrefs() {
    const t = this.t;
    const f = this.el.prefs;
    try {
      this.settings = await this.hub.settings();
    } catch (e) {
      this.#error(e);
      return;
    }
    const types = [...(this.eventTypes || []), ...this.feed.types];
    const [devices, topics] = await Promise.all([devicesOf(this.hub, this.settings), topicsOf(this.hub)]);
    const leave = async (key) => {
      try {
        await this.hub.leaveTopic(key);
        this.el.live.textContent = t.left(key);
      } catch (e) {
        this.#error(e);
        throw e;
      }
    };
    await fillPrefs(f, this.settings, devices, { t, types, push: this.hub.push, error: (e) => this.#error(e), topics, leave });
    this.el.scroll.hidden = true;
    this.el.tabs.hidden = true;
    f.hidden = false;
    this.#paintBadge();
    f.querySelector('input')?.focus();
  }

  #hidePrefs() {
    this.el.prefs.hidden = true;
    this.el.scroll.hidden = false;
    this.el.tabs.hidden = false;
    this.#paintBadge();
    this.el.gear.focus();
  }

  async #savePrefs() {
    try {
      this.settings = await this.hub.settings(prefsChange(this.el.prefs, this.settings));
      await Promise.all(devicesChange(this.el.prefs).map((d) => this.hub.devices.setEnabled(d.id, d.on)));
      this.el.live.textContent = this.t.saved;
      this.#hidePrefs();
    } catch (e) {
      this.#error(e);
    }
  }

  #meta(n) {
    const lang = this.getAttribute('locale') || navigator.language || 'en';
    return metaText(this.t, n, (ts) => this.ago.format(ts, lang));
  }

  #refreshTimes() {
    for (const li of this.rows.made.values()) {
      const meta = li.querySelector('.meta');
      if (meta) meta.textContent = this.#meta(li.item);
    }
  }

  /** arrived takes a new item (notification.created) into the open list. */
  #arrived(d) {
    this.arrivedNow = (this.arrivedNow || 0) + 1;
    if (this.el.panel.hidden || !d) {
      this.burst.ask(null);
      return;
    }
    const { unread, counts, ...n } = d;
    this.feed.types.add(n.eventType);
    this.#patch((again) => this.#place(n, again));
  }

  /** patch makes an event's change to the open list (and to the list on its way), then paints soon. */
  #patch(fn) {
    this.feed.patch(fn);
    this.burst.ask('paint');
  }

  /** place puts an item where it belongs; further down than the reader, the "N new" pill says so. */
  #place(n, again) {
    if (!this.feed.place(n, again, this.atTop)) return;
    this.el.pill.textContent = this.t.newItems(this.feed.fresh);
    this.el.pill.hidden = false;
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
    this.#patch(() => this.feed.read(ids, now));
  }

  /** deleted applies notification.deleted: deleted, expired or past retention. */
  #deleted(d) {
    if (this.el.panel.hidden || !d || !Array.isArray(d.notificationIds)) return;
    const ids = new Set(d.notificationIds);
    this.#patch(() => this.feed.drop(ids));
  }

  /** changed lists the open list's first items again (what changed is not known). */
  #changed() {
    if (!this.el.panel.hidden) this.burst.ask('reload');
  }

  async #reloadKeepingPlace() {
    const top = this.el.scroll.scrollTop;
    try {
      if (!(await this.feed.again())) return;
    } catch (e) {
      this.#error(e);
      return;
    }
    this.#paintList();
    this.el.scroll.scrollTop = top;
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
