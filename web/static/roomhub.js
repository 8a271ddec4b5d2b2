// roomhub client SDK: a dependency-free ES module served by the hub at
// /static/roomhub.js. See web/README.md for examples.
//
//   const hub = new RoomHub({ baseUrl: '', getToken: () => fetchToken() });
//   const room = hub.room(42, { onGap: (g) => hub.fetchGap(42, g.requested, g.oldest).then(show) });
//   room.on('comment.created', (data, id) => show(data));
//   const bell = hub.notifications({ onCount: (n) => badge(n) });
//   // or one connection for the page's rooms and its bell:
//   const page = hub.page({ rooms: [42, 43], notifications: true, onCount: badge });
//
// Tabs share: hub.page() in several tabs of one user holds one connection in
// all (a leader tab, elected with Web Locks, relays over BroadcastChannel).
//
// A stream keeps the last event id it saw and sends it on every reconnect, so
// the hub resumes exactly (catch-up, no gap, no duplicate). It asks getToken()
// for a token whenever it connects, reconnects with backoff and jitter, never
// loops on a refusal (401 after a fresh token, 403), and stops for good when
// the hub evicts it.

const SYSTEM = ['system.gap', 'system.lagged', 'system.evicted'];
const NOTIFY = ['notification.unread', 'notification.counts', 'notification.created', 'notification.updated',
  'notification.read', 'notification.deleted'];
const DEFAULT_TYPES = ['retrospect.submitted', 'retrospect.created', 'comment.created', 'like.toggled',
  'member.joined', 'presence.update'];

/** Status of a stream, for a UI. */
export const Status = Object.freeze({
  CONNECTING: 'connecting', OPEN: 'open', RECONNECTING: 'reconnecting', CLOSED: 'closed',
});

/** An answer of the hub that was not a success: status, code and message of its envelope. */
export class HubError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

/** RoomHub talks to one hub: it makes streams and calls the JSON API. */
export class RoomHub {
  /**
   * @param {object} o
   * @param {string} [o.baseUrl] the hub's origin ('' for the page's own)
   * @param {() => Promise<string>|string} o.getToken a fresh access token
   * @param {typeof EventSource} [o.EventSource] for tests
   * @param {typeof fetch} [o.fetch] for tests
   */
  constructor({ baseUrl = '', getToken, EventSource: ES, fetch: f } = {}) {
    if (typeof getToken !== 'function') throw new TypeError('getToken is required');
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.getToken = getToken;
    this.EventSource = ES || globalThis.EventSource;
    this.fetch = f || globalThis.fetch.bind(globalThis);
    this.streams = new Set(); // the streams this hub made and not closed: keepPresent asks them
  }

  /**
   * push is this browser's Web Push with the hub: enable() (from a click:
   * it asks the permission), disable(), state(). See WebPush.
   * @type {WebPush}
   */
  get push() { return (this.webPush ??= new WebPush(this)); }

  /** room opens the stream of one room. */
  room(roomId, opts = {}) { return new RoomStream(this, roomId, opts); }

  /** notifications opens the user's own stream: count, created, read. */
  notifications(opts = {}) { return new NotificationStream(this, opts); }

  /**
   * page opens one stream for several rooms and (notifications: true) the
   * user's notifications. Tabs of one user share it (see SharedPageStream)
   * unless shared: false or the browser lacks Web Locks or BroadcastChannel.
   */
  page(opts = {}) {
    if (opts.shared !== false && SharedPageStream.supported()) return new SharedPageStream(this, opts);
    return new PageStream(this, opts);
  }

  /** api calls a JSON route and returns its result, or throws a HubError. */
  async api(method, path, body) {
    const token = await this.getToken();
    // No token: the hub's access_token cookie (sent with credentials) authenticates.
    const headers = token ? { Authorization: `Bearer ${token}` } : {};
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const resp = await this.fetch(this.baseUrl + path, {
      method, headers, credentials: 'include', body: body === undefined ? undefined : JSON.stringify(body),
    });
    let env = null;
    try { env = await resp.json(); } catch { /* not JSON: a proxy's page */ }
    if (!resp.ok || !env || !env.isSuccess) {
      throw new HubError(resp.status, env && env.code, env && env.message);
    }
    return env.result;
  }

  /** unread returns the user's unread count. */
  async unread() { return (await this.api('GET', '/api/v1/notifications/unread')).count; }

  /**
   * list returns one page of the inbox, newest first: {notifications, hasMore,
   * nextBefore}. Filters: state (visible, unread, unseen, read, archived,
   * snoozed, all), tags and severity (lists: any of them), eventType, roomId.
   */
  list({ limit = 20, before, state, tags, severity, eventType, roomId } = {}) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set('before', before);
    if (state) q.set('state', state);
    if (tags && tags.length) q.set('tags', [].concat(tags).join(','));
    if (severity && severity.length) q.set('severity', [].concat(severity).join(','));
    if (eventType) q.set('eventType', eventType);
    if (roomId !== undefined && roomId !== null) q.set('roomId', String(roomId));
    return this.api('GET', `/api/v1/notifications?${q}`);
  }

  /** counts returns the exact counts: {version, visible, unread, unseen, archived, snoozed, byTag, bySeverity}. */
  counts() { return this.api('GET', '/api/v1/notifications/counts'); }

  /** markRead marks one notification read: {notificationId, readAt}. */
  markRead(id) { return this.api('PATCH', `/api/v1/notifications/${encodeURIComponent(id)}/read`); }

  /**
   * markAllRead marks every notification (up to upTo, inclusive) read:
   * {marked, readAt, more: false}. The hub changes at most 1,000 items a
   * call and says more; this repeats the call until it is done.
   */
  async markAllRead(upTo) {
    const body = upTo ? { upTo } : undefined;
    let marked = 0;
    for (;;) {
      const r = await this.api('POST', '/api/v1/notifications/read-all', body);
      marked += r.marked;
      if (!r.more) return { ...r, marked };
    }
  }

  /** seen marks one notification seen (not read): {notification}. */
  seen(id) { return this.#act(id, 'seen'); }

  /** archive hides one notification from the visible list: {notification}. */
  archive(id) { return this.#act(id, 'archive'); }

  /** unarchive brings an archived notification back: {notification}. */
  unarchive(id) { return this.#act(id, 'unarchive'); }

  /** snooze hides one notification until `until` (a Date or RFC 3339; 1 minute to 90 days ahead): {notification}. */
  snooze(id, until) {
    const u = until instanceof Date ? until.toISOString() : String(until);
    return this.#act(id, 'snooze', { until: u });
  }

  /** unsnooze brings a snoozed notification back now, at the top and unseen: {notification}. */
  unsnooze(id) { return this.#act(id, 'unsnooze'); }

  /** delete removes one notification for good: {notificationId, deleted: true}. */
  delete(id) { return this.api('DELETE', `/api/v1/notifications/${encodeURIComponent(id)}`); }

  /**
   * bulk does action (seen, read, archive, unarchive, delete) to the listed
   * ids (at most 100) or to every item that passes filter (up to upTo,
   * inclusive): {changed, more: false, at, counts}, however many calls it took.
   */
  async bulk(action, { ids, filter, upTo } = {}) {
    const body = { action };
    if (ids) body.notificationIds = ids;
    else {
      body.filter = filter || {};
      if (upTo) body.upTo = upTo;
    }
    // The hub changes at most 1,000 items a call and says more: repeating
    // the same call goes on where it left off.
    let changed = 0;
    for (;;) {
      const r = await this.api('POST', '/api/v1/notifications/bulk', body);
      changed += r.changed;
      if (!r.more) return { ...r, changed };
    }
  }

  /** markAllSeen marks every visible unseen notification seen (the bell was opened): {changed, at, counts}. */
  markAllSeen(upTo) { return this.bulk('seen', { filter: { state: 'unseen' }, upTo }); }

  #act(id, action, body) {
    return this.api('PATCH', `/api/v1/notifications/${encodeURIComponent(id)}/${action}`, body);
  }

  /**
   * settings returns {mutedEventTypes, channels, quietHours}. With an array
   * it replaces the muted types; with an object it replaces each field given
   * (channels: the channels named; quietHours: null clears them).
   */
  async settings(change) {
    if (change === undefined) return this.api('GET', '/api/v1/notifications/settings');
    const body = Array.isArray(change) ? { mutedEventTypes: change } : { ...change };
    if (!body.mutedEventTypes) body.mutedEventTypes = (await this.settings()).mutedEventTypes;
    return this.api('PUT', '/api/v1/notifications/settings', body);
  }

  /** presence returns {onlineUsers:[{userId,lastSeen}], count}. */
  presence(roomId) { return this.api('GET', `/api/v1/rooms/${roomId}/presence`); }

  /** heartbeat keeps the user present without a stream: {acknowledged, nextInSecs}. */
  heartbeat(roomId) { return this.api('POST', `/api/v1/rooms/${roomId}/presence/heartbeat`); }

  /**
   * keepPresent keeps the user present in roomId for as long as the page
   * wants: a heartbeat every nextInSecs, skipped while an open stream of this
   * RoomHub covers the room (the stream keeps the user present itself).
   * Returns a function that stops it.
   */
  keepPresent(roomId) {
    let timer = null;
    let stopped = false;
    const covered = () => [...this.streams].some((s) => s.status === Status.OPEN && s.covers(roomId));
    const beat = async () => {
      let next = 20;
      if (!covered()) {
        try {
          next = (await this.heartbeat(roomId)).nextInSecs || next;
        } catch (e) {
          if (e instanceof HubError && (e.status === 401 || e.status === 403)) return; // refused: stop
          next = 5; // the hub is away: try again soon
        }
      }
      if (!stopped) timer = setTimeout(beat, next * 1000);
    };
    beat();
    return () => { stopped = true; clearTimeout(timer); };
  }

  /** events returns one page of a room's history after since: {events, lastId, hasMore}. */
  events(roomId, since = '0', count = 100) {
    return this.api('GET', `/api/v1/rooms/${roomId}/events?since=${encodeURIComponent(since)}&count=${count}`);
  }

  /**
   * fetchGap pages through the events API for what a system.gap announced:
   * every retained event after `requested` (up to and including `until`, when
   * given), oldest first.
   */
  async fetchGap(roomId, requested, until) {
    const out = [];
    let since = requested || '0';
    for (;;) {
      const page = await this.events(roomId, since, 500);
      for (const e of page.events) {
        out.push(e);
        if (until && e.id === until) return out;
      }
      if (!page.hasMore || !page.lastId) return out;
      since = page.lastId;
    }
  }
}

// A slice is how long event handling may hold the page in one task.
const SLICE_MS = 8;

/**
 * Slicer runs callbacks in order, at most SLICE_MS of them in one task, the
 * rest in the next (a MessageChannel's task, which the browser does not
 * throttle in a background tab as it does timers). The browser hands over
 * all the events of one network read in one task: 500 notifications at
 * once would otherwise hold the page for a long task.
 */
class Slicer {
  constructor() {
    this.queue = [];
    this.spent = 0; // ms run in this task
    this.kicked = false;
    this.chan = null;
  }

  take(fn) {
    if (!this.queue.length && this.spent < SLICE_MS) this.#run(fn);
    else {
      this.queue.push(fn);
      this.#kick();
    }
  }

  #run(fn) {
    const t0 = performance.now();
    try {
      fn();
    } finally {
      this.spent += performance.now() - t0;
      this.#kick(); // the next task starts a new slice
    }
  }

  #kick() {
    if (this.kicked || typeof MessageChannel !== 'function') return;
    if (!this.chan) {
      this.chan = new MessageChannel();
      this.chan.port1.onmessage = () => this.#next();
      this.chan.port1.unref?.(); // node: the tests end without closing it
    }
    this.kicked = true;
    this.chan.port2.postMessage(0);
  }

  #next() {
    this.kicked = false;
    this.spent = 0;
    while (this.queue.length && this.spent < SLICE_MS) this.#run(this.queue.shift());
  }

  close() {
    this.queue = [];
    this.chan?.port1.close();
    this.chan = null;
  }
}

/**
 * WebPush subscribes this browser to the hub's pushes: a closed tab rings
 * (the hub pushes only when the user has no stream open, by default). The
 * service worker (roomhub-sw.js) must be served from the page's own origin:
 * the hub's /static/roomhub-sw.js when the page is the hub's, else a copy
 * on the app's origin, named by serviceWorkerUrl. A click on a
 * notification opens its url (or focuses a tab) and that page's SDK marks
 * the item read.
 */
export class WebPush {
  constructor(hub) {
    this.hub = hub;
    /** where the service worker is (same origin as the page); set before enable() */
    this.serviceWorkerUrl = `${hub.baseUrl}/static/roomhub-sw.js`;
    this.listening = false;
  }

  /** supported says whether this browser has service workers, push and notifications. */
  static supported() {
    return typeof navigator !== 'undefined' && 'serviceWorker' in navigator &&
      typeof PushManager !== 'undefined' && typeof Notification !== 'undefined';
  }

  #listen() {
    if (this.listening || !WebPush.supported()) return;
    this.listening = true;
    // The worker tells the page it opened (or focused) after a click, and
    // hands over a subscription the browser renewed: this page has a token.
    navigator.serviceWorker.addEventListener('message', (e) => {
      const m = e.data || {};
      if (m.type === 'roomhub-notification-click' && m.notificationId) this.hub.markRead(m.notificationId).catch(() => {});
      if (m.type === 'roomhub-push-renewed' && m.subscription) this.#send(m.subscription).catch(() => {});
    });
  }

  async #registration() {
    const reg = await navigator.serviceWorker.getRegistration(new URL(this.serviceWorkerUrl, location.href).href);
    return reg || null;
  }

  #send(json) { return this.hub.api('POST', '/api/v1/push/subscriptions', json); }

  // #tellWorker says who is signed in to reg's worker, which shows only
  // that user's pushes ('' : nobody, show none of anyone's).
  async #tellWorker(reg, signedIn) {
    let userId = '';
    if (signedIn) {
      try { userId = tokenSubject(await this.hub.getToken()); } catch { userId = ''; }
    }
    (reg.active || reg.waiting || reg.installing)?.postMessage({ type: 'roomhub-user', userId });
  }

  // #subscription is reg's subscription with the hub's key publicKey: the
  // one there, or a new one when there is none or the hub's key changed.
  async #subscription(reg, publicKey) {
    let sub = await reg.pushManager.getSubscription();
    if (sub && b64url(sub.options.applicationServerKey) !== publicKey) { // the hub's key changed
      await sub.unsubscribe();
      sub = null;
    }
    return sub || reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromB64url(publicKey) });
  }

  /**
   * state is 'unsupported', 'denied' (the user blocked notifications), 'off'
   * or 'on'. When on, it sends the subscription to the hub again (which
   * keeps it another 90 days, and makes it this user's), subscribing again
   * first when the hub's key changed, and tells the worker who is signed in.
   */
  async state() {
    if (!WebPush.supported()) return 'unsupported';
    this.#listen();
    if (Notification.permission === 'denied') return 'denied';
    const reg = await this.#registration();
    const had = await reg?.pushManager.getSubscription();
    if (!had || Notification.permission !== 'granted') return 'off';
    const { publicKey } = await this.hub.api('GET', '/api/v1/push/vapid-public-key');
    const sub = await this.#subscription(reg, publicKey);
    await this.#tellWorker(reg, true);
    await this.#send(sub.toJSON());
    return 'on';
  }

  /**
   * enable asks the permission (call it from a click), registers the
   * service worker, subscribes with the hub's key and hands the
   * subscription to the hub: 'on', or 'denied'.
   */
  async enable() {
    if (!WebPush.supported()) return 'unsupported';
    this.#listen();
    if ((await Notification.requestPermission()) !== 'granted') return 'denied';
    const { publicKey } = await this.hub.api('GET', '/api/v1/push/vapid-public-key');
    const reg = await activated(await navigator.serviceWorker.register(this.serviceWorkerUrl));
    const sub = await this.#subscription(reg, publicKey);
    await this.#tellWorker(reg, true);
    await this.#send(sub.toJSON());
    return 'on';
  }

  /**
   * disable forgets this browser's subscription, at the hub and here, and
   * tells the worker nobody is signed in: 'off'. Call it when the person
   * signs out, so that the next person on this browser gets none of their
   * pushes.
   */
  async disable() {
    if (!WebPush.supported()) return 'unsupported';
    const reg = await this.#registration();
    if (reg) await this.#tellWorker(reg, false);
    const sub = await reg?.pushManager.getSubscription();
    if (sub) {
      try {
        await this.hub.api('DELETE', '/api/v1/push/subscriptions', { endpoint: sub.endpoint });
      } finally {
        await sub.unsubscribe(); // off here whatever the hub said: it forgets the endpoint at the next push
      }
    }
    return 'off';
  }
}

// activated resolves with reg once its worker is active (serviceWorker.ready
// would wait for a worker whose scope holds this page: /static/'s does not
// hold the page at /).
function activated(reg) {
  const w = reg.installing || reg.waiting;
  if (reg.active || !w) return Promise.resolve(reg);
  return new Promise((resolve) => {
    w.addEventListener('statechange', () => { if (w.state === 'activated' || w.state === 'redundant') resolve(reg); });
  });
}

function b64url(buf) {
  if (!buf) return '';
  return btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function fromB64url(s) {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

/** Stream is what RoomStream and NotificationStream share. */
class Stream {
  constructor(hub, path, probePath, types, opts) {
    this.hub = hub;
    this.path = path;
    this.probePath = probePath;
    this.lastEventId = opts.lastEventId || '';
    this.status = Status.CONNECTING;
    this.minDelay = opts.minDelay ?? 500;
    this.maxDelay = opts.maxDelay ?? 30000;
    this.onStatus = opts.onStatus || (() => {});
    this.onError = opts.onError || (() => {});
    this.onGap = opts.onGap || (() => {});
    this.onEvicted = opts.onEvicted || (() => {});
    this.listeners = new Map(); // type → Set(fn); '*' for every type
    this.types = new Set([...types, ...(opts.types || [])]);
    this.attempt = 0;
    this.timer = null;
    this.es = null;
    this.closed = false;
    this.refused = 0; // refusals in a row, each after a fresh token
    this.slicer = new Slicer(); // events are handled in order, a slice a task
    hub.streams?.add(this);
    queueMicrotask(() => this.#connect());
  }

  /** on calls fn(data, id, type) for events of type ('*': every type); it returns an unsubscribe. */
  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    if (type !== '*' && !this.types.has(type)) {
      this.types.add(type);
      if (this.es) this.#listen(this.es, type);
    }
    return () => this.listeners.get(type)?.delete(fn);
  }

  /** close ends the stream for good and clears every timer and listener. */
  close() {
    this.closed = true;
    this.hub.streams?.delete(this);
    clearTimeout(this.timer);
    this.timer = null;
    if (this.es) this.es.close();
    this.es = null;
    this.listeners.clear();
    this.slicer.close();
    this.#setStatus(Status.CLOSED);
  }

  /** reconnect starts over now, from the last event id (e.g. after changing what the URL carries). */
  reconnect() { if (!this.closed) this.#reconnect(0); }

  #setStatus(s) {
    if (this.status !== s) { this.status = s; this.onStatus(s); }
  }

  async #connect() {
    if (this.closed) return;
    let token;
    try {
      token = await this.hub.getToken();
    } catch (err) {
      this.onError(err);
      this.#reconnect();
      return;
    }
    if (this.closed) return;
    const q = new URLSearchParams(await streamCredential(this.hub, token)); // none: the cookie
    if (this.closed) return;
    if (this.lastEventId) q.set('lastEventId', this.lastEventId);
    const sep = this.path.includes('?') ? '&' : '?';
    const es = new this.hub.EventSource(`${this.hub.baseUrl}${this.path}${sep}${q}`, { withCredentials: true });
    this.es = es;
    let opened = false;
    es.onopen = () => {
      opened = true;
      this.attempt = 0;
      this.refused = 0;
      this.#setStatus(Status.OPEN);
    };
    // The browser would reconnect by itself, with the old token: the SDK
    // does it instead, with a fresh token and its own backoff.
    es.onerror = () => {
      if (this.es !== es) return;
      es.close();
      this.es = null;
      if (this.closed) return;
      if (opened) { this.#reconnect(); return; } // the stream ended: token expiry, a deploy, the network
      this.#diagnose();
    };
    for (const t of this.types) this.#listen(es, t);
    for (const t of SYSTEM) {
      es.addEventListener(t, (e) => {
        if (this.es === e.target || e.target === undefined) this.slicer.take(() => { if (!this.closed) this.#system(t, e); });
      });
    }
  }

  // diagnose asks the hub why a stream could not open: a refusal (401, 403)
  // is not retried in a loop; anything else is.
  async #diagnose() {
    let status = 0;
    let err = null;
    for (const p of [].concat(this.probePath)) {
      try {
        await this.hub.api('GET', p);
      } catch (e) {
        err = e;
        status = e instanceof HubError ? e.status : 0;
        if (e instanceof HubError) e.path = p; // which room (or the token) was refused
        break;
      }
    }
    if (this.closed) return;
    if (status === 403 || (status === 401 && this.refused >= 1)) {
      this.onError(err);
      this.close();
      return;
    }
    if (status === 401) this.refused++; // once more, with a fresh token
    this.#reconnect();
  }

  #reconnect(delay) {
    if (this.closed) return;
    this.#setStatus(Status.RECONNECTING);
    clearTimeout(this.timer);
    if (delay === undefined) {
      const base = Math.min(this.maxDelay, this.minDelay * 2 ** this.attempt++);
      delay = base / 2 + Math.random() * base / 2; // jitter: not every tab at once
    }
    if (this.es) { this.es.close(); this.es = null; }
    this.timer = setTimeout(() => { this.timer = null; this.#connect(); }, delay);
  }

  #listen(es, type) {
    es.addEventListener(type, (e) => {
      if (this.es !== es) return;
      const id = e.lastEventId;
      if (id) this.lastEventId = id; // a reconnect resumes after it, handled or not yet
      this.slicer.take(() => {
        if (this.closed) return;
        let data;
        try { data = JSON.parse(e.data); } catch { data = e.data; }
        this.handle(type, data, id);
        this.#emit(type, data, id);
      });
    });
  }

  #system(type, e) {
    let data = {};
    try { data = JSON.parse(e.data); } catch { /* keep {} */ }
    this.#emit(type, data, '');
    if (type === 'system.gap') this.onGap(data);
    if (type === 'system.lagged') this.#reconnect(0); // resume from the last id at once
    if (type === 'system.evicted') { this.onEvicted(data); this.close(); }
  }

  #emit(type, data, id) {
    for (const fn of this.listeners.get(type) || []) fn(data, id, type);
    for (const fn of this.listeners.get('*') || []) fn(data, id, type);
  }

  /** handle lets a subclass keep state from events before listeners run. */
  handle() {}

  /** covers says whether this stream keeps its user present in roomId. */
  covers() { return false; }
}

/** RoomStream is one room's stream; it also keeps who is online from presence.update. */
export class RoomStream extends Stream {
  constructor(hub, roomId, opts = {}) {
    super(hub, `/api/v1/rooms/${roomId}/stream`, `/api/v1/rooms/${roomId}/presence`, DEFAULT_TYPES, opts);
    this.roomId = roomId;
    /** @type {number[]|null} the online users of the last presence.update (null above the hub's list limit) */
    this.online = null;
    this.onPresence = opts.onPresence || (() => {});
  }

  covers(roomId) { return String(roomId) === String(this.roomId); }

  handle(type, data) {
    if (type === 'presence.update') {
      this.online = data.onlineUsers;
      this.onPresence(data);
    }
  }
}

/**
 * Inbox keeps what the notification events say: the counts of the highest
 * version seen (every tab converges on the same badge), the unread count,
 * and the typed callbacks.
 */
class Inbox {
  constructor(opts) {
    /** @type {number|null} */
    this.count = null;
    /** @type {object|null} */
    this.counts = null;
    this.cb = opts;
  }

  handle(type, data) {
    if (!NOTIFY.includes(type) || !data) return;
    let unread;
    if (type === 'notification.unread') unread = data.count;
    const counts = type === 'notification.counts' ? data : data.counts;
    if (counts && typeof counts.version === 'number' && (!this.counts || counts.version >= this.counts.version)) {
      const changed = !this.counts || counts.version > this.counts.version;
      this.counts = counts;
      unread = counts.unread;
      if (changed) this.cb.onCounts?.(counts);
    } else if (unread === undefined && !this.counts && typeof data.unread === 'number') {
      unread = data.unread;
    }
    if (typeof unread === 'number' && unread !== this.count) {
      this.count = unread;
      this.cb.onCount?.(unread);
    }
    const typed = { 'notification.created': 'onCreated', 'notification.updated': 'onUpdated',
      'notification.read': 'onRead', 'notification.deleted': 'onDeleted' }[type];
    if (typed) this.cb[typed]?.(data);
  }
}

/** NotificationStream is the user's own stream: counts, created, updated, read, deleted. */
export class NotificationStream extends Stream {
  constructor(hub, opts = {}) {
    super(hub, '/api/v1/notifications/stream', '/api/v1/notifications/unread', NOTIFY, opts);
    this.inbox = new Inbox(opts);
  }

  /** @type {number|null} the unread count, once known */
  get count() { return this.inbox.count; }

  /** @type {object|null} the counts of the highest version seen */
  get counts() { return this.inbox.counts; }

  handle(type, data) { this.inbox.handle(type, data); }
}

/**
 * PageStream is one connection for a page: several rooms and, with
 * notifications: true, the user's own notifications. Room events carry
 * data.roomId; presence and the unread count are kept per room and for the
 * bell. Its ids are the whole page's position: a reconnect (on any hub
 * instance) resumes every room and the bell exactly.
 *
 *   new PageStream({ rooms: [42, 43], notifications: true, getToken })
 *   hub.page({ rooms: [42], notifications: true })
 */
export class PageStream extends Stream {
  /**
   * @param {RoomHub|object} hub a RoomHub, or the options themselves with getToken (and baseUrl)
   * @param {object} [opts] rooms, notifications, onCount, onPresence(roomId, data), onGap, …
   */
  constructor(hub, opts) {
    if (!(hub instanceof RoomHub)) { opts = hub; hub = new RoomHub(opts); }
    opts = opts || {};
    const rooms = [...new Set(opts.rooms || [])];
    const notifications = !!opts.notifications;
    super(hub, pagePath(rooms, notifications), pageProbes(rooms, notifications),
      notifications ? [...DEFAULT_TYPES, ...NOTIFY] : DEFAULT_TYPES, opts);
    this.rooms = rooms;
    this.notifications = notifications;
    /** @type {Map<number, number[]|null>} each room's online users, from its last presence.update */
    this.online = new Map();
    this.inbox = new Inbox(opts);
    this.onPresence = opts.onPresence || (() => {});
  }

  /** @type {number|null} the unread count, once known (notifications: true) */
  get count() { return this.inbox.count; }

  /** @type {object|null} the counts of the highest version seen (notifications: true) */
  get counts() { return this.inbox.counts; }

  /**
   * setRooms changes the page's rooms: the stream reconnects at once with its
   * last id, so the rooms it keeps lose nothing; new rooms start live.
   */
  setRooms(rooms) { this.setMembers(rooms, this.notifications); }

  /** setMembers is setRooms that may also turn the notifications on or off. */
  setMembers(rooms, notifications) {
    this.rooms = [...new Set(rooms)];
    this.notifications = !!notifications;
    for (const r of this.online.keys()) if (!this.rooms.includes(r)) this.online.delete(r);
    if (this.notifications) for (const t of NOTIFY) if (!this.types.has(t)) this.types.add(t);
    this.path = pagePath(this.rooms, this.notifications);
    this.probePath = pageProbes(this.rooms, this.notifications);
    this.reconnect();
  }

  covers(roomId) { return this.rooms.some((r) => String(r) === String(roomId)); }

  handle(type, data) {
    if (type === 'presence.update' && data && data.roomId !== undefined) {
      this.online.set(data.roomId, data.onlineUsers);
      this.onPresence(data.roomId, data);
      return;
    }
    this.inbox.handle(type, data);
  }
}

function pagePath(rooms, notifications) {
  const q = new URLSearchParams();
  if (rooms.length) q.set('rooms', rooms.join(','));
  if (notifications) q.set('notifications', 'true');
  return `/api/v1/stream?${q}`.replace(/%2C/g, ',');
}

// pageProbes are the routes that tell why a page stream was refused: each
// room's access, and the user's token.
function pageProbes(rooms, notifications) {
  const p = rooms.map((r) => `/api/v1/rooms/${r}/presence`);
  if (notifications || !p.length) p.push('/api/v1/notifications/unread');
  return p;
}

// --- Tabs share one page stream ---------------------------------------------

// A page id is every member's position: "p1,42:1708-0,n:1709-3" (a room id,
// or n for the user's notifications, then a stream id).
function parsePageId(id) {
  const out = new Map();
  if (!id || !id.startsWith('p1')) return out;
  for (const part of id.split(',').slice(1)) {
    const i = part.indexOf(':');
    if (i > 0) out.set(part.slice(0, i), part.slice(i + 1));
  }
  return out;
}

// newer reports whether stream id a comes after b ('' is before all).
function newer(a, b) {
  if (!b) return !!a;
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}

function memberOf(type, data) {
  if (type.startsWith('notification.')) return 'n';
  if (data && data.roomId !== undefined) return String(data.roomId);
  return null;
}

function visible() { return typeof document === 'undefined' || document.visibilityState !== 'hidden'; }

// streamCredential is what a stream's URL carries for token: a single-use
// ticket (POST /api/v1/stream-tickets; a URL may end up in a proxy's access
// log, where a used ticket is worth nothing), or the token itself when the
// hub has no tickets or the ticket could not be had (a refused token then
// shows as the stream's refusal). No token: nothing, the cookie.
async function streamCredential(hub, token) {
  if (!token) return {};
  try {
    const resp = await hub.fetch(`${hub.baseUrl}/api/v1/stream-tickets`, {
      method: 'POST', headers: { Authorization: `Bearer ${token}` }, credentials: 'include',
    });
    const env = resp.ok ? await resp.json() : null;
    if (env && env.isSuccess && env.result && typeof env.result.ticket === 'string' && env.result.ticket) {
      return { ticket: env.result.ticket };
    }
  } catch { /* the network: the token, as before tickets */ }
  return { token };
}

// tokenSubject reads a JWT's sub without checking it: only to name the
// channel that one user's tabs share.
function tokenSubject(token) {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return String(JSON.parse(atob(b64)).sub ?? '');
  } catch { return ''; }
}

/**
 * SharedPageStream is a PageStream that the tabs of one origin and user
 * share: one tab, elected with the Web Locks API, holds the one connection
 * for the union of every tab's rooms and the bell, and relays each event over
 * a BroadcastChannel to the tabs that want it. When the leader closes,
 * crashes or is frozen, another tab takes over and resumes from the newest
 * position any relayed event carried; each tab drops what it already had
 * (per room and for the bell), so no tab misses or repeats an event.
 */
export class SharedPageStream {
  /** supported reports whether this browser can share (Web Locks and BroadcastChannel). */
  static supported() {
    return typeof BroadcastChannel === 'function' && typeof navigator !== 'undefined' && !!navigator.locks;
  }

  /**
   * @param {RoomHub} hub
   * @param {object} opts PageStream's options, userId (the user, when
   *   getToken returns no JWT: cookie auth) and shareKey (narrows what the
   *   tabs share; the user always names it, so tabs of two users never share)
   */
  constructor(hub, opts = {}) {
    this.hub = hub;
    this.opts = opts;
    this.rooms = [...new Set(opts.rooms || [])];
    this.notifications = !!opts.notifications;
    this.status = Status.CONNECTING;
    this.online = new Map();
    this.inbox = new Inbox(opts);
    this.listeners = new Map();
    this.tab = Math.random().toString(36).slice(2);
    this.positions = new Map(); // member → the newest stream id this tab handled
    this.known = new Map(); // member → the newest stream id any relayed event carried
    this.tabs = new Map(); // tab → {rooms, notifications, types, visible, seen}
    this.last = {}; // what catchUp sends a tab that arrives later
    this.outbox = []; // relayed events not yet posted (see #queue)
    this.presenceSeen = new Map(); // room → presence updates relayed (snapshotPresence)
    this.slicer = new Slicer(); // relayed events are handled in order, a slice a task
    this.closed = false;
    this.leading = false;
    this.stream = null;
    // The leader's: rooms the hub refused (left out of the union until a tab
    // asks again), and whether its stream ended for good (evicted, the
    // token refused) and waits for a tab to ask again.
    this.refused = new Set();
    this.stopped = false;
    queueMicrotask(() => this.#start());
  }

  /** @type {number|null} */
  get count() { return this.inbox.count; }

  /** @type {object|null} */
  get counts() { return this.inbox.counts; }

  /** @type {string} the newest page position this tab knows */
  get lastEventId() { return this.#resumeId(); }

  /** isLeader reports whether this tab holds the connection. */
  get isLeader() { return this.leading; }

  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    if (type !== '*') this.#listenTo([type]); // the leader's stream listens to it too
    this.#announce();
    return () => this.listeners.get(type)?.delete(fn);
  }

  setRooms(rooms) { this.setMembers(rooms, this.notifications); }

  setMembers(rooms, notifications) {
    this.rooms = [...new Set(rooms)];
    this.notifications = !!notifications;
    for (const r of this.online.keys()) if (!this.rooms.some((x) => String(x) === String(r))) this.online.delete(r);
    this.#announce();
    if (this.leading) {
      this.#askedAgain();
      this.#follow();
    }
  }

  reconnect() { if (this.stream) this.stream.reconnect(); }

  covers(roomId) { return this.rooms.some((r) => String(r) === String(roomId)); }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.#post({ k: 'bye', tab: this.tab });
    this.#stopLeading();
    clearInterval(this.beat);
    this.bc?.close();
    this.kick?.port1.close();
    this.slicer.close();
    this.hub.streams?.delete(this);
    this.listeners.clear();
    this.#setStatus(Status.CLOSED);
  }

  async #start() {
    let user = '';
    try { user = tokenSubject(await this.hub.getToken()); } catch { user = ''; }
    user = user || String(this.opts.userId ?? ''); // cookie auth: the page names its user
    if (this.closed) return;
    if (!user) { // nothing names the user: do not share
      this.#lead(null, 0);
      return;
    }
    // The user always names the channel: a shareKey only narrows it, so no
    // key can relay one user's stream to another's tabs.
    // The name carries the relay's version ("2": events go in batches), so
    // tabs of an older SDK, still open across a deploy, share among
    // themselves and never miss what they cannot read.
    const name = `roomhub/2:${this.hub.baseUrl || location.origin}:${user}:${this.opts.shareKey || ''}`;
    this.bc = new BroadcastChannel(name);
    this.bc.onmessage = (e) => this.#receive(e.data);
    this.hub.streams?.add(this);
    this.#announce();
    this.name = name;
    this.leaderSeen = Date.now();
    let ticks = 0;
    // Every 250 ms the leader says it is alive; a visible follower that has
    // not heard from it for a second (a tab frozen without a freeze event, a
    // hung tab, or a background tab whose timers the browser throttles)
    // takes the lock from it: the tab in view leads. Hidden followers wait
    // in line (a closed or crashed leader lets go of the lock by itself).
    // Every second each tab says what it wants, and the leader forgets tabs
    // gone silent.
    this.beat = setInterval(() => {
      if (this.leading) this.#post({ k: 'alive', tab: this.tab });
      else if (Date.now() - this.leaderSeen > 1000 && visible() && this.#firstInLine()) this.#elect(true);
      if (++ticks % 4 === 0) {
        this.#announce();
        if (this.leading) this.#expireTabs();
      }
    }, 250);
    addEventListener('pagehide', () => this.close());
    // A tab about to be frozen lets another lead; back, it follows.
    document.addEventListener?.('freeze', () => this.#stopLeading());
    document.addEventListener?.('resume', () => { this.leaderSeen = Date.now(); this.#elect(); });
    this.#elect();
  }

  // firstInLine: of the visible followers still talking, this one has the
  // smallest id, so that one alone takes the lock from a silent leader.
  #firstInLine() {
    const now = Date.now();
    for (const [tab, t] of this.tabs) {
      if (tab !== this.leaderTab && t.visible && now - t.seen < 2500 && tab < this.tab) return false;
    }
    return true;
  }

  // elect queues for the lock (steal: takes it from its holder at once) and
  // leads while it holds it. A lock taken away ends the leading; the tab
  // queues again.
  #elect(steal = false) {
    if (this.closed || this.leading || (!steal && this.waiting)) return;
    if (steal) this.leaderSeen = Date.now(); // one try per silent second
    else this.waiting = true;
    const grant = (this.grants = (this.grants || 0) + 1);
    navigator.locks.request(this.name, steal ? { steal: true } : {}, () => {
      if (!steal) this.waiting = false;
      if (this.closed || this.leading) return undefined;
      return new Promise((release) => this.#lead(release, grant));
    }).catch(() => { // taken away: another tab leads now
      if (!steal) this.waiting = false;
      // The tab that took it is alive: a tab back from a freeze must not
      // take it back before it has heard from the new leader.
      this.leaderSeen = Date.now();
      if (this.grant === grant) {
        this.release = null;
        this.#stopLeading();
      }
      this.#elect();
    });
  }

  #lead(release, grant) {
    this.leading = true;
    this.release = release;
    this.grant = grant;
    this.#post({ k: 'leader', tab: this.tab });
    this.#follow();
  }

  #stopLeading() {
    this.leading = false;
    this.grant = 0;
    const stream = this.stream;
    this.stream = null;
    stream?.close();
    if (this.release) { this.release(); this.release = null; }
  }

  // askedAgain: a tab asked for something (new rooms, a new tab): rooms the
  // hub refused are tried again, and a stream that ended for good starts.
  #askedAgain() {
    this.refused.clear();
    this.stopped = false;
  }

  // union is what every live tab wants, but the rooms the hub refused:
  // rooms and the bell.
  #union() {
    const rooms = new Set(this.rooms.map(String));
    let notifications = this.notifications;
    for (const t of this.tabs.values()) {
      for (const r of t.rooms) rooms.add(String(r));
      notifications = notifications || t.notifications;
    }
    for (const r of this.refused) rooms.delete(r);
    return { rooms: [...rooms].map((r) => (/^\d+$/.test(r) ? Number(r) : r)).sort((a, b) => a - b), notifications };
  }

  // ended: the leader's stream closed by itself. A room the hub refused
  // (403 on its probe) leaves the union, the tabs that asked for it are
  // told, and the others go on streaming; anything else (evicted, the token
  // refused) stops the shared stream until a tab asks again.
  #ended(stream) {
    if (this.stream !== stream) return;
    this.stream = null;
    const err = stream.lastError;
    const m = err instanceof HubError && err.status === 403 && /^\/api\/v1\/rooms\/([^/]+)\/presence$/.exec(err.path || '');
    if (m && !this.refused.has(m[1])) {
      this.refused.add(m[1]);
      const msg = { k: 'refused', roomId: /^\d+$/.test(m[1]) ? Number(m[1]) : m[1], status: err.status, code: err.code, message: err.message };
      this.#post(msg);
      this.#receive(msg);
      this.#follow();
      return;
    }
    this.stopped = true;
    this.#setStatus(Status.CLOSED);
    this.#post({ k: 'status', s: Status.CLOSED });
  }

  // follow makes the leader's stream carry the union, resuming from the
  // newest known position.
  #follow() {
    if (!this.leading || this.closed || this.stopped) return;
    const u = this.#union();
    // A member no tab wants any more is forgotten: should one want it again,
    // it starts live, as a new room of a page stream does (not replayed
    // from where the last tab that had it left off).
    const wanted = new Set(u.rooms.map(String));
    if (u.notifications) wanted.add('n');
    for (const m of [...this.known.keys()]) if (!wanted.has(m)) this.known.delete(m);
    if (this.stream) {
      const same = this.stream.notifications === u.notifications &&
        this.stream.rooms.length === u.rooms.length && this.stream.rooms.every((r, i) => String(r) === String(u.rooms[i]));
      if (!same) {
        this.stream.lastEventId = this.#resumeId();
        this.stream.setMembers(u.rooms, u.notifications);
      }
      return;
    }
    const types = new Set([...this.listeners.keys()].filter((t) => t !== '*'));
    for (const t of this.tabs.values()) for (const x of t.types || []) types.add(x);
    const stream = new PageStream(this.hub, {
      ...this.opts, rooms: u.rooms, notifications: u.notifications, lastEventId: this.#resumeId(), types: [...types],
      onStatus: (st) => {
        if (st === Status.CLOSED) { this.#ended(stream); return; }
        if (this.stream !== stream) return;
        this.#setStatus(st);
        this.#post({ k: 'status', s: st });
        if (st === Status.OPEN) this.#snapshotPresence(stream);
      },
      onCount: undefined, onCounts: undefined, onCreated: undefined, onUpdated: undefined, onRead: undefined,
      onDeleted: undefined, onPresence: undefined,
      onGap: (g) => this.#relay('system.gap', g, ''),
      onEvicted: (d) => { this.#relay('system.evicted', d, ''); },
      onError: (e) => {
        stream.lastError = e;
        // A refused room is reported to the tabs that asked for it (ended).
        if (!(e instanceof HubError && e.status === 403 && /\/rooms\//.test(e.path || ''))) this.opts.onError?.(e);
      },
    });
    this.stream = stream;
    stream.on('*', (data, id, type) => { if (!type.startsWith('system.')) this.#relay(type, data, id); });
  }

  // snapshotPresence reads who is online in the rooms the stream has no
  // position for: such a room starts live when the stream (re)connects, so
  // a presence update published meanwhile (a join, when the leader changed
  // or the union grew) would be missed. The snapshot stands in for it,
  // unless a real update of the room came first.
  #snapshotPresence(stream) {
    for (const r of stream.rooms) {
      const room = String(r);
      if (this.known.has(room)) continue;
      const seen = this.presenceSeen.get(room) || 0;
      this.hub.api('GET', `/api/v1/rooms/${encodeURIComponent(room)}/presence`).then((p) => {
        if (this.stream !== stream || this.closed || (this.presenceSeen.get(room) || 0) !== seen) return;
        const onlineUsers = (p.onlineUsers || []).map((u) => u.userId);
        this.#relay('presence.update', { roomId: r, onlineUsers, count: p.count ?? onlineUsers.length,
          joined: null, left: null, joinedUsers: [], leftUsers: [] }, '');
      }, () => {});
    }
  }

  // listenTo makes the leader's stream listen to event types some tab wants.
  #listenTo(types) {
    for (const t of types) if (this.stream && !this.stream.types.has(t)) this.stream.on(t, () => {});
  }

  #resumeId() {
    const parts = [...this.known].map(([m, p]) => `${m}:${p}`);
    return parts.length ? `p1,${parts.join(',')}` : '';
  }

  // relay hands an event the leader's stream got to every tab, itself too.
  #relay(type, data, id) {
    const msg = { k: 'ev', type, data, id };
    // What a tab arriving later is sent at once (catchUp): each room's last
    // presence, the bell's newest counts.
    if (type === 'presence.update' && data) {
      this.last[`p${data.roomId}`] = msg;
      if (id) this.presenceSeen.set(String(data.roomId), (this.presenceSeen.get(String(data.roomId)) || 0) + 1);
    }
    const counts = type === 'notification.counts' ? data : data && data.counts;
    if (counts && typeof counts.version === 'number' &&
        (!this.last.counts || counts.version >= this.last.counts.data.version)) {
      this.last.counts = { k: 'ev', type: 'notification.counts', data: counts, id: '' };
      this.last.unread = { k: 'ev', type: 'notification.unread', data: { count: counts.unread }, id: '' };
    } else if (type === 'notification.unread' && !this.last.counts) {
      this.last.unread = msg;
    }
    this.#queue(msg);
    this.#deliver(msg);
  }

  // queue hands relayed events to the other tabs in one message per task: a
  // burst the stream parsed in one task (500 notifications) is one message,
  // not 500. The task after it is a MessageChannel's, which the browser
  // does not throttle in a background tab, unlike a timer.
  #queue(msg) {
    if (!this.bc || this.closed) return;
    this.outbox.push(msg);
    if (this.outbox.length > 1) return;
    if (!this.kick) {
      this.kick = new MessageChannel();
      this.kick.port1.onmessage = () => this.#flush();
      this.kick.port1.unref?.();
    }
    this.kick.port2.postMessage(0);
  }

  #flush() {
    if (!this.outbox.length) return;
    const list = this.outbox;
    this.outbox = [];
    if (this.bc && !this.closed) {
      try { this.bc.postMessage({ k: 'evs', list }); } catch { /* closing */ }
    }
  }

  #receive(m) {
    if (!m || this.closed) return;
    if (m.k === 'alive' || m.k === 'leader') {
      this.leaderSeen = Date.now();
      this.leaderTab = m.tab;
    } else if (m.k === 'ev' || m.k === 'evs' || m.k === 'status') {
      this.leaderSeen = Date.now();
    }
    switch (m.k) {
      case 'ev': this.slicer.take(() => this.#deliver(m)); break;
      case 'evs': for (const e of m.list || []) this.slicer.take(() => this.#deliver(e)); break;
      case 'status': this.#setStatus(m.s); break;
      case 'hello': {
        const before = this.tabs.get(m.tab);
        const asks = !before || before.notifications !== m.notifications || String(before.rooms) !== String(m.rooms);
        this.tabs.set(m.tab, { rooms: m.rooms, notifications: m.notifications, types: m.types, visible: m.visible, seen: Date.now() });
        if (this.leading) {
          if (asks) this.#askedAgain();
          this.#listenTo(m.types || []);
          this.#follow();
          if (!before) this.#catchUp();
        }
        break;
      }
      case 'refused': // the hub refused a room: the tab that asked for it hears why
        if (this.covers(m.roomId)) {
          const err = new HubError(m.status, m.code, m.message);
          err.roomId = m.roomId;
          this.opts.onError?.(err);
        }
        break;
      case 'bye': this.tabs.delete(m.tab); if (this.leading) this.#follow(); break;
      case 'leader': this.#announce(); break;
      default:
    }
  }

  // catchUp sends a tab that just arrived what it cannot get from the stream:
  // the bell's counts and each room's online users, as last relayed.
  #catchUp() {
    this.#post({ k: 'status', s: this.status });
    for (const msg of Object.values(this.last)) this.#post(msg);
  }

  // expireTabs forgets tabs silent for 90 s: crashed ones (a closed tab says
  // bye). Long, because a background tab's timers may run once a minute, and
  // a tab forgotten too soon would lose its rooms' events meanwhile.
  #expireTabs() {
    const now = Date.now();
    let gone = false;
    for (const [tab, t] of this.tabs) if (now - t.seen > 90000) { this.tabs.delete(tab); gone = true; }
    if (gone) this.#follow();
  }

  #announce() {
    this.#post({ k: 'hello', tab: this.tab, rooms: this.rooms, notifications: this.notifications, visible: visible(),
      types: [...this.listeners.keys()].filter((t) => t !== '*') });
  }

  #post(msg) {
    if (!this.bc || this.closed) return;
    this.#flush(); // what was relayed goes first
    try { this.bc.postMessage(msg); } catch { /* closing */ }
  }

  // deliver hands one relayed event to this tab's listeners, if it wants it
  // and has not had it.
  #deliver({ type, data, id }) {
    if (id) {
      for (const [m, p] of parsePageId(id)) if (newer(p, this.known.get(m))) this.known.set(m, p);
    }
    const member = memberOf(type, data);
    if (member === 'n' && !this.notifications) return;
    if (member && member !== 'n' && !this.covers(member)) return;
    if (id && member) {
      const pos = parsePageId(id).get(member);
      if (pos) {
        if (!newer(pos, this.positions.get(member))) return; // had it
        this.positions.set(member, pos);
      }
    }
    if (type === 'presence.update' && data) {
      this.online.set(data.roomId, data.onlineUsers);
      this.opts.onPresence?.(data.roomId, data);
    }
    this.inbox.handle(type, data);
    if (type === 'system.gap') this.opts.onGap?.(data);
    if (type === 'system.evicted') this.opts.onEvicted?.(data);
    for (const fn of this.listeners.get(type) || []) fn(data, id, type);
    for (const fn of this.listeners.get('*') || []) fn(data, id, type);
  }

  #setStatus(st) {
    if (this.status !== st && !this.closed) { this.status = st; this.opts.onStatus?.(st); }
  }
}
