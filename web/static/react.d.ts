// Types of <RoomhubInbox> (react.js; the package's "roomhub-client/react").
import type { ReactElement, CSSProperties } from 'react';
import type { Notification, Counts } from './roomhub.js';
import type { InboxMessages, InboxErrorDetail, RoomhubInbox as InboxElement } from './roomhub-inbox.js';

/** The click on an item: preventDefault() stops only the navigation; keepUnread() leaves the item unread. */
export type NotificationClickEvent = CustomEvent<Notification> & { keepUnread(): void };

export interface RoomhubInboxProps {
  /** The hub's origin ('' or unset: the page's own). */
  baseUrl?: string;
  /** A fresh access token, asked for whenever one is needed (unset with auth="cookie"). */
  tokenProvider?: () => Promise<string> | string;
  badge?: 'unread' | 'unseen';
  locale?: string;
  mode?: 'popover' | 'inline';
  auth?: 'token' | 'cookie';
  /** The service worker's URL on the page's origin (Web Push). */
  serviceWorker?: string;
  /** With auth="cookie": the user, so that their tabs share one stream. */
  userId?: string;
  renderItem?: ((item: Notification, el: HTMLElement) => boolean | void) | null;
  messages?: Partial<InboxMessages>;
  eventTypes?: string[];
  onNotificationClick?: (e: NotificationClickEvent) => void;
  onCounts?: (e: CustomEvent<Counts>) => void;
  onError?: (e: CustomEvent<InboxErrorDetail>) => void;
  className?: string;
  id?: string;
  style?: CSSProperties;
}

/** <roomhub-inbox> with its properties and events as props. */
export declare function RoomhubInbox(props: RoomhubInboxProps): ReactElement;

export type { InboxElement };
