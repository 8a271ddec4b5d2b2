import { HubError, Status } from './base.js';
import { PageStreamOf } from './page.js';
import { WebPush } from './push.js';
import { Devices } from './devices.js';
import { SharedPageStream } from './shared.js';
import { NotificationStream, RoomStream } from './stream.js';

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

  /**
   * devices are the person's phones and browsers the hub pushes to:
   * list() and setEnabled(id, on), consent per device. See Devices.
   * @type {Devices}
   */
  get devices() { return (this.deviceList ??= new Devices(this)); }

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
    let resp;
    try {
      resp = await this.fetch(this.baseUrl + path, {
        method, headers, credentials: 'include', body: body === undefined ? undefined : JSON.stringify(body),
      });
    } catch (e) {
      throw unreachable(this.baseUrl, e);
    }
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

  /**
   * topics returns a page of what the person follows, by key:
   * {topics: [{topicKey, followedAt}], nextAfter}; pass nextAfter as after
   * for the next page. Who follows what is the backend's to decide.
   */
  topics({ after, limit } = {}) {
    const q = new URLSearchParams();
    if (after) q.set('after', after);
    if (limit) q.set('limit', String(limit));
    return this.api('GET', '/api/v1/topics' + (q.size ? `?${q}` : ''));
  }

  /** leaveTopic stops the person following topicKey: {removed: 1, or 0 when they did not}. */
  leaveTopic(topicKey) { return this.api('DELETE', `/api/v1/topics/${encodeURIComponent(topicKey)}`); }

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

/**
 * unreachable is the HubError of a request that got no answer (status 0,
 * code UNREACHABLE): from a page of another origin than the hub's, most
 * often the hub's ALLOWED_ORIGINS lacks the page's (the browser hides a
 * CORS refusal from the page), so the message says so.
 */
function unreachable(baseUrl, cause) {
  const here = globalThis.location?.origin;
  let hub = here;
  try { hub = new URL(baseUrl || '/', globalThis.location?.href).origin; } catch { /* a relative or bad base */ }
  const msg = hub && here && hub !== here
    ? `the hub at ${hub} did not answer this page: is ${here} in the hub's ALLOWED_ORIGINS? (else the network failed: ${cause && cause.message})`
    : `the hub did not answer (${cause && cause.message})`;
  return new HubError(0, 'UNREACHABLE', msg);
}

/**
 * PageStream is one connection for a page: several rooms and, with
 * notifications: true, the user's own notifications (see PageStreamOf in
 * page.js). It is made on a hub, or on the hub's options alone:
 *
 *   new PageStream({ rooms: [42, 43], notifications: true, getToken })
 *   hub.page({ rooms: [42], notifications: true, shared: false })
 */
export class PageStream extends PageStreamOf {
  /**
   * @param {RoomHub|object} hub a RoomHub, or the options themselves with getToken (and baseUrl)
   * @param {object} [opts] rooms, notifications, onCount, onPresence(roomId, data), onGap, …
   */
  constructor(hub, opts) {
    if (!(hub instanceof RoomHub)) { opts = hub; hub = new RoomHub(opts); }
    super(hub, opts);
  }
}
