// <RoomhubInbox> for React: the <roomhub-inbox> element with its
// properties and events as props. React is the app's own (a peer
// dependency of the package): this file imports it and bundles nothing.
//
//   import { RoomhubInbox } from 'roomhub-client/react';
//   <RoomhubInbox baseUrl="https://hub.example" tokenProvider={getToken}
//     onNotificationClick={(e) => { e.preventDefault(); navigate(e.detail.data.url); }} />
//
// preventDefault() in onNotificationClick stops only the element's
// navigation (route it yourself): the item is still read, unless the
// handler calls e.keepUnread().
import { createElement, useEffect, useRef } from 'react';
import './roomhub-inbox.js';

const EVENTS = {
  onNotificationClick: 'roomhub-notification-click',
  onCounts: 'roomhub-counts',
  onError: 'roomhub-error',
};

/**
 * RoomhubInbox renders <roomhub-inbox>: baseUrl, badge, locale, mode, auth,
 * serviceWorker and userId become its attributes; tokenProvider,
 * renderItem, messages and eventTypes its properties; onNotificationClick,
 * onCounts and onError listen to its events. Other props (className, id,
 * style…) go to the element.
 */
export function RoomhubInbox(props) {
  const { baseUrl, serviceWorker, userId, tokenProvider, renderItem, messages, eventTypes, ...rest } = props;
  const ref = useRef(null);
  const handlers = useRef({});
  for (const name of Object.keys(EVENTS)) handlers.current[name] = rest[name];
  useEffect(() => {
    const el = ref.current;
    // Props set as properties: a function or an object is no attribute.
    Object.assign(el, { renderItem: renderItem ?? null, messages: messages ?? {}, eventTypes: eventTypes ?? [] });
    if (tokenProvider) el.tokenProvider = tokenProvider;
  }, [tokenProvider, renderItem, messages, eventTypes]);
  useEffect(() => {
    const el = ref.current;
    const off = Object.entries(EVENTS).map(([name, type]) => {
      const listen = (e) => handlers.current[name]?.(e);
      el.addEventListener(type, listen);
      return () => el.removeEventListener(type, listen);
    });
    return () => off.forEach((f) => f());
  }, []);
  const attrs = { ref, 'base-url': baseUrl, 'service-worker': serviceWorker, 'user-id': userId };
  for (const [k, v] of Object.entries(rest)) if (!(k in EVENTS)) attrs[k === 'className' ? 'class' : k] = v;
  return createElement('roomhub-inbox', attrs);
}
