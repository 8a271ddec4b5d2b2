import { DEFAULT_TYPES, HubError, NOTIFY, SYSTEM, Status } from './base.js';
import { Slicer } from './slicer.js';

/** Stream is what RoomStream and NotificationStream share. */
export class Stream {
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
    let cred;
    try {
      cred = await streamCredential(this.hub, token); // none: the cookie
    } catch (err) {
      if (this.closed) return;
      if (err.status === 401 || err.status === 403) { this.#diagnose(); return; } // a refusal is not retried in a loop
      this.onError(err);
      this.#reconnect();
      return;
    }
    if (this.closed) return;
    const q = new URLSearchParams(cred);
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
export class Inbox {
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

// streamCredential is what a stream's URL carries for token: a single-use
// ticket (POST /api/v1/stream-tickets; a URL may end up in a proxy's access
// log, where a used ticket is worth nothing), or the token itself only when
// the hub has no ticket route (404: a hub from before tickets). Any other
// failure (a refusal, 429, 5xx, the network) is thrown as a HubError
// (status 0: no answer): the token never goes into a URL for it. No token:
// nothing, the cookie.
export async function streamCredential(hub, token) {
  if (!token) return {};
  let resp;
  try {
    resp = await hub.fetch(`${hub.baseUrl}/api/v1/stream-tickets`, {
      method: 'POST', headers: { Authorization: `Bearer ${token}` }, credentials: 'include',
    });
  } catch (err) {
    throw new HubError(0, 'NETWORK', `stream ticket: ${err?.message || err}`);
  }
  if (resp.status === 404) return { token };
  const env = await resp.json().catch(() => null);
  if (resp.ok && env && env.isSuccess && env.result && typeof env.result.ticket === 'string' && env.result.ticket) {
    return { ticket: env.result.ticket };
  }
  throw new HubError(resp.status, env?.code, env?.message || 'no stream ticket');
}
