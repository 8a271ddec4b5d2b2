// Types of roomhub.js, the roomhub client SDK.

export declare const Status: Readonly<{
  CONNECTING: 'connecting';
  OPEN: 'open';
  RECONNECTING: 'reconnecting';
  CLOSED: 'closed';
}>;
export type StreamStatus = (typeof Status)[keyof typeof Status];

/** An answer of the hub that was not a success. */
export declare class HubError extends Error {
  status: number;
  /** The envelope's code: AUTH4001, COMMON403, COMMON429, … */
  code: string | undefined;
  /** A shared page stream's refused room: the hub refused it (403) and the stream goes on without it. */
  roomId?: number;
}

export interface Gap {
  requested: string;
  oldest: string | null;
  /** On a page stream: the room whose history no longer reached back. */
  roomId?: number;
  /** On a page stream: the gap is in the user's notification log. */
  notifications?: true;
}

export interface StreamOptions {
  /** Resume from this id on the first connect. */
  lastEventId?: string;
  /** Event types to listen to beyond the defaults (on() adds them too). */
  types?: string[];
  /** Backoff: the first delay and the largest, in ms (500 and 30000). */
  minDelay?: number;
  maxDelay?: number;
  onStatus?: (status: StreamStatus) => void;
  /** A refusal (401 after a fresh token, 403) or a failing getToken. */
  onError?: (err: Error) => void;
  /** History no longer reached back: fetch what you can with RoomHub.fetchGap. */
  onGap?: (gap: Gap) => void;
  /** The hub ended the stream for good (connection limit, access revoked). */
  onEvicted?: (data: { reason: string; roomId?: number }) => void;
}

export interface PresenceUpdate {
  onlineUsers: number[] | null;
  joined: number | null;
  left: number | null;
  count: number;
  joinedUsers: number[];
  leftUsers: number[];
}

declare class Stream {
  readonly status: StreamStatus;
  /** The last event id seen: sent on every reconnect. */
  readonly lastEventId: string;
  /** Calls fn for each event of type ('*': every type); returns an unsubscribe. */
  on<T = any>(type: string, fn: (data: T, id: string, type: string) => void): () => void;
  /** Reconnects now, from the last event id. */
  reconnect(): void;
  /** Ends the stream and clears every timer and listener. */
  close(): void;
}

export declare class RoomStream extends Stream {
  readonly roomId: number | string;
  /** Online users of the last presence.update (null above the hub's list limit). */
  readonly online: number[] | null;
}

export interface RoomStreamOptions extends StreamOptions {
  onPresence?: (update: PresenceUpdate) => void;
}

export interface CountsBy {
  visible: number;
  unread: number;
  unseen: number;
}

/** GET /notifications/counts, and the counts every inbox event carries. */
export interface Counts extends CountsBy {
  /** Rises with every change of the inbox: keep the counts of the highest version. */
  version: number;
  archived: number;
  snoozed: number;
  byTag: Record<string, CountsBy>;
  bySeverity: Record<string, CountsBy>;
}

/** What the notification events carry, as typed callbacks. */
export interface InboxCallbacks {
  /** The unread count changed (visible unread items). */
  onCount?: (unread: number) => void;
  /** Counts of a higher version arrived. */
  onCounts?: (counts: Counts) => void;
  onCreated?: (item: Notification & { unread: number; counts: Counts }) => void;
  /** Items changed (seen, archived, snoozed, woken, a group joined); over 100, a filter and action instead. */
  onUpdated?: (data: { notifications?: Notification[]; filter?: InboxFilter; action?: string; counts: Counts }) => void;
  onRead?: (data: { notificationIds: string[]; readAt: string; unread: number; counts: Counts }) => void;
  onDeleted?: (data: { notificationIds: string[]; reason: 'deleted' | 'expired' | 'retention'; counts: Counts }) => void;
}

export declare class NotificationStream extends Stream {
  /** The unread count, once known. */
  readonly count: number | null;
  /** The counts of the highest version seen. */
  readonly counts: Counts | null;
}

export interface NotificationStreamOptions extends StreamOptions, InboxCallbacks {}

/**
 * Tabs of one user share one PageStream: a leader tab (Web Locks) holds the
 * connection for every tab's rooms and relays over BroadcastChannel. What
 * hub.page() returns when the browser can; same surface as PageStream.
 */
export declare class SharedPageStream {
  static supported(): boolean;
  readonly status: StreamStatus;
  readonly rooms: (number | string)[];
  readonly notifications: boolean;
  readonly online: Map<number, number[] | null>;
  readonly count: number | null;
  readonly counts: Counts | null;
  /** The newest page position this tab knows. */
  readonly lastEventId: string;
  /** Whether this tab holds the connection. */
  readonly isLeader: boolean;
  on<T = any>(type: string, fn: (data: T, id: string, type: string) => void): () => void;
  setRooms(rooms: (number | string)[]): void;
  setMembers(rooms: (number | string)[], notifications: boolean): void;
  reconnect(): void;
  close(): void;
}

export declare class PageStream extends Stream {
  /** A RoomHub and options, or the options alone with getToken (and baseUrl). */
  constructor(hub: RoomHub, options?: PageStreamOptions);
  constructor(options: PageStreamOptions & { getToken: () => string | Promise<string>; baseUrl?: string });
  readonly rooms: (number | string)[];
  readonly notifications: boolean;
  /** Each room's online users, from its last presence.update. */
  readonly online: Map<number, number[] | null>;
  /** The unread count, once known (notifications: true). */
  readonly count: number | null;
  /** The counts of the highest version seen (notifications: true). */
  readonly counts: Counts | null;
  /** Changes the rooms: reconnects at once with the last id; kept rooms lose nothing, new ones start live. */
  setRooms(rooms: (number | string)[]): void;
  /** setRooms that may also turn the notifications on or off. */
  setMembers(rooms: (number | string)[], notifications: boolean): void;
}

export interface PageStreamOptions extends StreamOptions, InboxCallbacks {
  rooms?: (number | string)[];
  notifications?: boolean;
  /** A room's presence.update (data.roomId is the room). */
  onPresence?: (roomId: number, update: PresenceUpdate & { roomId: number }) => void;
  /** hub.page(): false keeps this tab's stream its own (default: shared between the user's tabs when the browser can). */
  shared?: boolean;
  /** The user, when getToken returns no JWT (cookie auth): tabs share only with tabs of the same user. */
  userId?: number | string;
  /** Narrows what the tabs share (the user always names it: tabs of two users never share). */
  shareKey?: string;
}

export type Severity = 'low' | 'normal' | 'high' | 'critical';

export interface Notification {
  notificationId: string;
  roomId: number;
  eventType: string;
  data: Record<string, unknown>;
  publisherId: string | null;
  timestamp: string;
  readAt: string | null;
  seenAt: string | null;
  archivedAt: string | null;
  snoozedUntil: string | null;
  severity: Severity;
  tags: string[];
  expiresAt: string | null;
  /** "Ana and 4 others": count events, the last 5 distinct actors, newest first. */
  group: { key: string; count: number; actors: string[]; first: string } | null;
  /** Its newest event, or its wake from snooze: the list's order. */
  activityAt: string;
}

export type InboxState = 'visible' | 'unread' | 'unseen' | 'read' | 'archived' | 'snoozed' | 'all';

export interface InboxFilter {
  state?: InboxState;
  tags?: string[];
  severity?: Severity[];
  eventType?: string;
  roomId?: number;
}

export interface ChannelPreferences {
  enabled: boolean;
  mutedEventTypes: string[];
}

export interface QuietHours {
  /** "22:00": local time in timeZone; start after end spans midnight. */
  start: string;
  end: string;
  /** An IANA zone, e.g. "Asia/Seoul". */
  timeZone: string;
}

export interface Settings {
  /** Held back in the inbox and on streams. */
  mutedEventTypes: string[];
  /** Per delivery channel (push, email, …): every configured one. */
  channels: Record<string, ChannelPreferences>;
  /** No push or e-mail then, but for severity critical. */
  quietHours: QuietHours | null;
}

export type BulkAction = 'seen' | 'read' | 'archive' | 'unarchive' | 'delete';

export interface HistoryEvent {
  id: string;
  eventType: string;
  data: Record<string, unknown>;
  publisherId: string | null;
  timestamp: string;
}

/** What a browser's Web Push is with the hub. */
export type PushState = 'unsupported' | 'denied' | 'off' | 'on';

/**
 * This browser's Web Push subscription with the hub: a closed tab rings.
 * The service worker (roomhub-sw.js) must be on the page's own origin.
 */
export declare class WebPush {
  static supported(): boolean;
  /** Where the service worker is; the hub's /static/roomhub-sw.js by default. */
  serviceWorkerUrl: string;
  /** The signed-in user when getToken gives no JWT (cookie auth): the worker shows only their pushes, and none while nobody is known. */
  userId: number | string;
  /** The state; when on, the subscription is sent to the hub again (kept 90 more days). */
  state(): Promise<PushState>;
  /** Asks the permission (call it from a click), subscribes, hands the subscription to the hub. */
  enable(): Promise<PushState>;
  /** Forgets this browser's subscription, at the hub and here. */
  disable(): Promise<PushState>;
}

/** One of the person's devices the hub pushes to: a phone (fcm, apns) or a browser (webpush). Its id is not its token. */
export interface Device {
  id: string;
  platform: 'fcm' | 'apns' | 'webpush';
  /** What the app called it ("Pixel 9"); a browser's is its browser's name. */
  label: string;
  /** Consent on this device: off, it is kept and sent nothing. */
  enabled: boolean;
  addedAt: string;
  lastSentAt: string | null;
}

/** The person's devices, each with its own consent: a settings page's list. */
export declare class Devices {
  /** Every platform's, first added first. */
  list(): Promise<Device[]>;
  /** Turns one on or off; answers it as listed. */
  setEnabled(id: string, on: boolean): Promise<Device>;
}

export declare class RoomHub {
  constructor(options: {
    /** The hub's origin; '' (the default) is the page's own. */
    baseUrl?: string;
    /** A fresh access token, asked for whenever one is needed. */
    getToken: () => string | Promise<string>;
    EventSource?: typeof EventSource;
    fetch?: typeof fetch;
  });
  /** This browser's Web Push with the hub. */
  readonly push: WebPush;
  /** The person's phones and browsers the hub pushes to, consent per device. */
  readonly devices: Devices;
  room(roomId: number | string, options?: RoomStreamOptions): RoomStream;
  notifications(options?: NotificationStreamOptions): NotificationStream;
  /** One stream for several rooms and, with notifications: true, the user's notifications; shared between the user's tabs. */
  page(options?: PageStreamOptions): PageStream | SharedPageStream;
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** Heartbeats roomId every nextInSecs while no open stream of this hub covers it; returns a stop function. */
  keepPresent(roomId: number | string): () => void;
  unread(): Promise<number>;
  /** One page, newest first, within the filter (state visible by default). */
  list(options?: InboxFilter & { limit?: number; before?: string }): Promise<{
    notifications: Notification[];
    hasMore: boolean;
    nextBefore: string | null;
  }>;
  counts(): Promise<Counts>;
  markRead(notificationId: string): Promise<{ notificationId: string; readAt: string }>;
  /** Repeats read-all until the hub says no more are left (it reads at most 1,000 a call). */
  markAllRead(upTo?: string): Promise<{ marked: number; more: false; readAt: string }>;
  seen(notificationId: string): Promise<{ notification: Notification }>;
  archive(notificationId: string): Promise<{ notification: Notification }>;
  unarchive(notificationId: string): Promise<{ notification: Notification }>;
  /** Hides it until then (1 minute to 90 days ahead); it comes back unseen, at the top. */
  snooze(notificationId: string, until: Date | string): Promise<{ notification: Notification }>;
  unsnooze(notificationId: string): Promise<{ notification: Notification }>;
  delete(notificationId: string): Promise<{ notificationId: string; deleted: true }>;
  /**
   * action on listed ids (at most 100), or on every item that passes filter (up to upTo, inclusive);
   * repeats the call while the hub says more (it changes at most 1,000 items a call).
   */
  bulk(action: BulkAction, target: { ids: string[] } | { filter?: InboxFilter; upTo?: string }): Promise<{
    changed: number;
    more: false;
    at: string;
    counts: Counts;
  }>;
  /** Every visible unseen item seen: call it when the bell opens. */
  markAllSeen(upTo?: string): Promise<{ changed: number; more: false; at: string; counts: Counts }>;
  /** Reads the settings; an array replaces the muted types; an object replaces each field it gives. */
  settings(change?: string[] | Partial<Settings>): Promise<Settings>;
  /** A page of what the person follows, by key; nextAfter is the next page's after. */
  topics(page?: { after?: string; limit?: number }): Promise<{ topics: { topicKey: string; followedAt: string }[]; nextAfter: string | null }>;
  /** Stops the person following topicKey: removed is 0 when they did not. */
  leaveTopic(topicKey: string): Promise<{ removed: 0 | 1 }>;
  presence(roomId: number | string): Promise<{ onlineUsers: { userId: number; lastSeen: string }[]; count: number }>;
  heartbeat(roomId: number | string): Promise<{ acknowledged: boolean; nextInSecs: number }>;
  events(roomId: number | string, since?: string, count?: number): Promise<{
    events: HistoryEvent[];
    lastId: string | null;
    hasMore: boolean;
  }>;
  /** Every retained event after requested (up to until, inclusive), oldest first. */
  fetchGap(roomId: number | string, requested: string, until?: string): Promise<HistoryEvent[]>;
}
