// Types of <roomhub-inbox> (roomhub-inbox.js; the package's "roomhub-client/inbox").
import type { Counts, Notification } from './roomhub.js';

/** The texts the element shows; `messages` overrides any of them. */
export interface InboxMessages {
  bell: string;
  bellCount: (n: number) => string;
  title: string;
  all: string;
  unread: string;
  archived: string;
  markAllRead: string;
  markRead: string;
  archive: string;
  unarchive: string;
  snooze: string;
  inHour: string;
  tomorrow: string;
  nextWeek: string;
  until: string;
  snoozeAt: string;
  prefs: string;
  back: string;
  inApp: string;
  type: string;
  quiet: string;
  from: string;
  to: string;
  zone: string;
  save: string;
  saved: string;
  channel: (name: string) => string;
  /** The device list's heading. */
  devices: string;
  /** A device's kind when its app gave it no label: fcm, apns, webpush. */
  platform: (platform: string) => string;
  /** The heading of the topics the person follows, each with Leave. */
  topics: string;
  leave: string;
  /** Leave's name for a screen reader: which topic. */
  leaveTopic: (topicKey: string) => string;
  /** Said (aria-live) once a topic is left. */
  left: (topicKey: string) => string;
  delete: string;
  empty: string;
  error: string;
  retry: string;
  newItems: (n: number) => string;
  loadMore: string;
  close: string;
  actions: string;
  /** "Ana, Ben and 3 others": names, and how many more. */
  others: (name: string, n: number) => string;
  user: (id: string) => string;
  /** "Ana and Ben". */
  and: (a: string, b: string) => string;
  /** "Ana (3)": one person, and how many times. */
  times: (who: string, n: number) => string;
  /** The heading of each channel's on/off switch in the preferences. */
  on: string;
  showGroup: (n: number) => string;
  hideGroup: string;
  /** "3 events from Ana and Ben". */
  groupOf: (n: number, who: string) => string;
  newArrived: (n: number) => string;
}

/** Built-in messages: English and Korean. */
export const MESSAGES: { en: InboxMessages; ko: InboxMessages };

/** itemText is the default title and body of an item, from its event's data (title, text, content…). */
export function itemText(n: Notification): { title: string; body: string };

/** badgeText is the badge's display: the exact count up to 99, then "99+". */
export function badgeText(n: number): string;

/**
 * openable is where an item's data.url may take the page at base: an
 * absolute http(s) URL, or a path that stays on base's origin; "" for
 * anything else ("//evil.example/x", javascript:, …).
 */
export function openable(url: unknown, base: string): string;

/** inTab says whether an item belongs in a tab's list: all (visible), unread or archived. */
export function inTab(tab: 'all' | 'unread' | 'archived', n: Notification, now?: number): boolean;

/** newer says whether a comes before b in a list: newer activity first, ties by id. */
export function newer(a: Notification, b: Notification): boolean;

/** placeOf is where n goes in the sorted items, or -1 after them when more are to be loaded. */
export function placeOf(items: Notification[], n: Notification, complete: boolean): number;

/** windowOf chooses the rows of a long list near the view: [from, to) and the heights around them. */
export function windowOf<T>(items: T[], height: (item: T) => number, top: number, view: number, over?: number, max?: number):
  { from: number; to: number; before: number; after: number };

/** What roomhub-error carries. */
export interface InboxErrorDetail {
  status?: number;
  code?: string;
  message: string;
}

/**
 * <roomhub-inbox base-url="https://hub.example" badge="unread|unseen"
 * mode="popover|inline" locale="en|ko" auth="cookie" user-id="7">: a bell
 * with the exact count and a feed (auth="cookie": the hub's access_token
 * cookie authenticates, no tokenProvider; user-id lets the user's tabs share
 * one stream). Events: roomhub-notification-click (cancelable; detail: the item),
 * roomhub-counts (detail: the counts), roomhub-error.
 */
export class RoomhubInbox extends HTMLElement {
  /** A fresh access token; the element connects once it has one. */
  tokenProvider: (() => Promise<string> | string) | null;
  /** Fills el (the item's clickable body) itself; return false to keep the default. */
  renderItem: ((item: Notification, el: HTMLElement) => boolean | void) | null;
  /** Overrides of the locale's texts. */
  messages: Partial<InboxMessages>;
  /** Event types the preferences list, besides those of the items shown and those muted. */
  eventTypes: string[];
  /** The latest counts (the highest version seen). */
  readonly counts: Counts | null;
}

/** The element's attributes, as JSX writes them (React, Preact, Solid…). */
export interface RoomhubInboxAttributes {
  'base-url'?: string;
  badge?: 'unread' | 'unseen';
  locale?: string;
  mode?: 'popover' | 'inline';
  auth?: 'token' | 'cookie';
  'service-worker'?: string;
  'user-id'?: string;
  id?: string;
  class?: string;
  className?: string;
  slot?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  ref?: any;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  style?: any;
}

declare global {
  interface HTMLElementTagNameMap {
    'roomhub-inbox': RoomhubInbox;
  }
  // <roomhub-inbox> in JSX is typed (the plain element; roomhub-client/react is the component).
  namespace JSX {
    interface IntrinsicElements {
      'roomhub-inbox': RoomhubInboxAttributes;
    }
  }
  interface HTMLElementEventMap {
    /** preventDefault() stops only the navigation; keepUnread() leaves the item unread. */
    'roomhub-notification-click': CustomEvent<Notification> & { keepUnread(): void };
    'roomhub-counts': CustomEvent<Counts>;
    'roomhub-error': CustomEvent<InboxErrorDetail>;
  }
}
