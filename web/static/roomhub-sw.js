// roomhub's service worker: shows the hub's pushes and opens them.
//
// Serve it from your page's own origin (a service worker must be) and
// point the SDK at it: hub.push.serviceWorkerUrl = '/roomhub-sw.js'. Query
// parameters choose the notification's images: roomhub-sw.js?icon=/icon.png&badge=/badge.png.
//
// A push carries the inbox item's face: {notificationId, userId, title,
// body, url, severity, tag}. It is shown only when it is for the user the
// SDK last said is signed in on this browser (hub.push.state() and
// enable() say; disable() forgets): on a shared computer the last person's
// pushes are dropped, and while nobody is known (cookie auth without
// hub.push.userId, or signed out) every push is. A click closes it, focuses a tab of this site (on
// the item's url when it is this site's or https:) or opens one, and tells
// that page, whose SDK marks the item read. When the browser renews the
// subscription, the new one goes to the open pages, whose SDK hands it to
// the hub (a page that opens later sends it too).

const params = new URL(self.location.href).searchParams;

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

// The user signed in on this browser, as the SDK last said, is kept where
// a restarted worker finds it: the Cache API.
const USER = new URL('roomhub-signed-in-user', self.location.href).href;

async function signedIn() {
  const r = await (await caches.open('roomhub')).match(USER);
  return r ? r.text() : '';
}

async function setSignedIn(userId) {
  const c = await caches.open('roomhub');
  if (userId) await c.put(USER, new Response(String(userId)));
  else await c.delete(USER);
}

async function tell(message) {
  for (const w of await self.clients.matchAll({ type: 'window', includeUncontrolled: true })) w.postMessage(message);
}

self.addEventListener('push', (event) => {
  let m = {};
  try {
    m = event.data ? event.data.json() : {};
  } catch {
    m = { title: event.data ? event.data.text() : '' };
  }
  event.waitUntil((async () => {
    const user = await signedIn();
    if (!user || String(m.userId ?? '') !== user) { // nobody signed in, or someone else's: this browser's user changed
      await tell({ type: 'roomhub-push-dropped', notificationId: m.notificationId || '' });
      return;
    }
    const loud = m.severity === 'high' || m.severity === 'critical';
    const tag = m.tag || m.notificationId || '';
    await self.registration.showNotification(m.title || 'New notification', {
      body: m.body || '',
      tag,
      renotify: loud && tag !== '', // a replaced high one rings again
      requireInteraction: m.severity === 'critical',
      icon: params.get('icon') || undefined,
      badge: params.get('badge') || undefined,
      data: { notificationId: m.notificationId || '', url: m.url || '' },
    });
  })());
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(openItem(event.notification.data || {}));
});

// where is the page a notification opens: its url when that is this
// site's or https:, else the site's root (never javascript:, data: or
// another site over plain http).
function where(url) {
  const root = new URL('/', self.registration.scope).href;
  try {
    const u = new URL(url || '/', self.registration.scope);
    return u.origin === self.location.origin || u.protocol === 'https:' ? u.href : root;
  } catch {
    return root;
  }
}

// openItem focuses a window of this site (navigated to the item's url when
// it has one) or opens one, then tells it which item was opened.
async function openItem({ notificationId, url }) {
  const target = where(url);
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  let win = windows.find((w) => w.url === target) || windows[0];
  if (win) {
    try { win = await win.focus(); } catch { /* only a click may take the focus */ }
    if (url && win.url !== target && 'navigate' in win) {
      try { win = (await win.navigate(target)) || win; } catch { /* not controlled by this worker: stay */ }
    }
  } else {
    win = await self.clients.openWindow(target);
  }
  win?.postMessage({ type: 'roomhub-notification-click', notificationId, url: target });
}

// A page may open an item as a click on its notification would (an in-page
// toast of the same push, say): {type: 'roomhub-open', notificationId, url}.
// The SDK says who is signed in: {type: 'roomhub-user', userId} ('' when
// nobody is: disable()).
self.addEventListener('message', (event) => {
  const m = event.data || {};
  if (m.type === 'roomhub-open') event.waitUntil(openItem(m));
  if (m.type === 'roomhub-user') event.waitUntil(setSignedIn(m.userId));
});

self.addEventListener('pushsubscriptionchange', (event) => {
  const key = event.oldSubscription?.options?.applicationServerKey;
  if (!key) return;
  // The renewed subscription is the same browser: the hub carries the old
  // one's consent over when told which it replaces.
  const replaces = event.oldSubscription?.endpoint || '';
  event.waitUntil((async () => {
    const sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    for (const w of await self.clients.matchAll({ type: 'window', includeUncontrolled: true })) {
      w.postMessage({ type: 'roomhub-push-renewed', subscription: sub.toJSON(), replaces });
    }
  })());
});
