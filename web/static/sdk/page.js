import { DEFAULT_TYPES, NOTIFY } from './base.js';
import { Inbox, Stream } from './stream.js';

/**
 * PageStreamOf is one connection for a page on a hub: several rooms and,
 * with notifications: true, the user's own notifications. Room events carry
 * data.roomId; presence and the unread count are kept per room and for the
 * bell. Its ids are the whole page's position: a reconnect (on any hub
 * instance) resumes every room and the bell exactly. The SDK exports it as
 * PageStream (hub.js), which also takes the hub's options alone.
 */
export class PageStreamOf extends Stream {
  /**
   * @param {import('./hub.js').RoomHub} hub the hub it streams from
   * @param {object} [opts] rooms, notifications, onCount, onPresence(roomId, data), onGap, …
   */
  constructor(hub, opts) {
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

export function pagePath(rooms, notifications) {
  const q = new URLSearchParams();
  if (rooms.length) q.set('rooms', rooms.join(','));
  if (notifications) q.set('notifications', 'true');
  return `/api/v1/stream?${q}`.replace(/%2C/g, ',');
}

// pageProbes are the routes that tell why a page stream was refused: each
// room's access, and the user's token.
export function pageProbes(rooms, notifications) {
  const p = rooms.map((r) => `/api/v1/rooms/${r}/presence`);
  if (notifications || !p.length) p.push('/api/v1/notifications/unread');
  return p;
}

// --- Tabs share one page stream ---------------------------------------------

// A page id is every member's position: "p1,42:1708-0,n:1709-3" (a room id,
// or n for the user's notifications, then a stream id).
export function parsePageId(id) {
  const out = new Map();
  if (!id || !id.startsWith('p1')) return out;
  for (const part of id.split(',').slice(1)) {
    const i = part.indexOf(':');
    if (i > 0) out.set(part.slice(0, i), part.slice(i + 1));
  }
  return out;
}

export function memberOf(type, data) {
  if (type.startsWith('notification.')) return 'n';
  if (data && data.roomId !== undefined) return String(data.roomId);
  return null;
}
