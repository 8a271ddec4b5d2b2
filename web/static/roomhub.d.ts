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

export declare class NotificationStream extends Stream {
  /** The unread count, once known. */
  readonly count: number | null;
}

export interface NotificationStreamOptions extends StreamOptions {
  onCount?: (unread: number) => void;
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
  /** Changes the rooms: reconnects at once with the last id; kept rooms lose nothing, new ones start live. */
  setRooms(rooms: (number | string)[]): void;
}

export interface PageStreamOptions extends StreamOptions {
  rooms?: (number | string)[];
  notifications?: boolean;
  /** A room's presence.update (data.roomId is the room). */
  onPresence?: (roomId: number, update: PresenceUpdate & { roomId: number }) => void;
  onCount?: (unread: number) => void;
}

export interface Notification {
  notificationId: string;
  roomId: number;
  eventType: string;
  data: Record<string, unknown>;
  publisherId: string | null;
  timestamp: string;
  readAt: string | null;
}

export interface HistoryEvent {
  id: string;
  eventType: string;
  data: Record<string, unknown>;
  publisherId: string | null;
  timestamp: string;
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
  room(roomId: number | string, options?: RoomStreamOptions): RoomStream;
  notifications(options?: NotificationStreamOptions): NotificationStream;
  /** One stream for several rooms and, with notifications: true, the user's notifications. */
  page(options?: PageStreamOptions): PageStream;
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** Heartbeats roomId every nextInSecs while no open stream of this hub covers it; returns a stop function. */
  keepPresent(roomId: number | string): () => void;
  unread(): Promise<number>;
  list(options?: { limit?: number; before?: string }): Promise<{
    notifications: Notification[];
    hasMore: boolean;
    nextBefore: string | null;
  }>;
  markRead(notificationId: string): Promise<{ notificationId: string; readAt: string }>;
  markAllRead(upTo?: string): Promise<{ marked: number; readAt: string }>;
  settings(mutedEventTypes?: string[]): Promise<{ mutedEventTypes: string[] }>;
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
