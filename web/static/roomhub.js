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
// A stream keeps the last event id it saw and sends it on every reconnect, so
// the hub resumes exactly (catch-up, no gap, no duplicate). It asks getToken()
// for a token whenever it connects, reconnects with backoff and jitter, never
// loops on a refusal (401 after a fresh token, 403), and stops for good when
// the hub evicts it.

const SYSTEM = ['system.gap', 'system.lagged', 'system.evicted'];
const NOTIFY = ['notification.unread', 'notification.created', 'notification.read'];
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

  /** room opens the stream of one room. */
  room(roomId, opts = {}) { return new RoomStream(this, roomId, opts); }

  /** notifications opens the user's own stream: count, created, read. */
  notifications(opts = {}) { return new NotificationStream(this, opts); }

  /** page opens one stream for several rooms and (notifications: true) the user's notifications. */
  page(opts = {}) { return new PageStream(this, opts); }

  /** api calls a JSON route and returns its result, or throws a HubError. */
  async api(method, path, body) {
    const headers = { Authorization: `Bearer ${await this.getToken()}` };
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

  /** list returns one page of the inbox, newest first: {notifications, hasMore, nextBefore}. */
  list({ limit = 20, before } = {}) {
    const q = new URLSearchParams({ limit: String(limit) });
    if (before) q.set('before', before);
    return this.api('GET', `/api/v1/notifications?${q}`);
  }

  /** markRead marks one notification read: {notificationId, readAt}. */
  markRead(id) { return this.api('PATCH', `/api/v1/notifications/${encodeURIComponent(id)}/read`); }

  /** markAllRead marks every notification (up to upTo, inclusive) read: {marked, readAt}. */
  markAllRead(upTo) { return this.api('POST', '/api/v1/notifications/read-all', upTo ? { upTo } : undefined); }

  /** settings returns {mutedEventTypes}; with types it replaces them. */
  settings(mutedEventTypes) {
    if (mutedEventTypes === undefined) return this.api('GET', '/api/v1/notifications/settings');
    return this.api('PUT', '/api/v1/notifications/settings', { mutedEventTypes });
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
    const q = new URLSearchParams({ token });
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
    for (const t of SYSTEM) es.addEventListener(t, (e) => this.#system(t, e));
  }

  // diagnose asks the hub why a stream could not open: a refusal (401, 403)
  // is not retried in a loop; anything else is.
  async #diagnose() {
    let status = 0;
    let err = null;
    try {
      for (const p of [].concat(this.probePath)) await this.hub.api('GET', p);
    } catch (e) {
      err = e;
      status = e instanceof HubError ? e.status : 0;
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
      if (e.lastEventId) this.lastEventId = e.lastEventId;
      let data;
      try { data = JSON.parse(e.data); } catch { data = e.data; }
      this.handle(type, data, e.lastEventId);
      this.#emit(type, data, e.lastEventId);
    });
  }

  #system(type, e) {
    if (this.es !== e.target && e.target !== undefined) return;
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

/** NotificationStream is the user's own stream: the unread count, created and read. */
export class NotificationStream extends Stream {
  constructor(hub, opts = {}) {
    super(hub, '/api/v1/notifications/stream', '/api/v1/notifications/unread', NOTIFY, opts);
    /** @type {number|null} the unread count, once known */
    this.count = null;
    this.onCount = opts.onCount || (() => {});
  }

  handle(type, data) {
    const n = type === 'notification.unread' ? data.count : data.unread;
    if (typeof n === 'number' && n !== this.count) {
      this.count = n;
      this.onCount(n);
    }
  }
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
    /** @type {number|null} the unread count, once known (notifications: true) */
    this.count = null;
    this.onPresence = opts.onPresence || (() => {});
    this.onCount = opts.onCount || (() => {});
  }

  /**
   * setRooms changes the page's rooms: the stream reconnects at once with its
   * last id, so the rooms it keeps lose nothing; new rooms start live.
   */
  setRooms(rooms) {
    this.rooms = [...new Set(rooms)];
    for (const r of this.online.keys()) if (!this.rooms.includes(r)) this.online.delete(r);
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
    if (!NOTIFY.includes(type)) return;
    const n = type === 'notification.unread' ? data.count : data.unread;
    if (typeof n === 'number' && n !== this.count) {
      this.count = n;
      this.onCount(n);
    }
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
