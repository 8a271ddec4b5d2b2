// roomhub's service worker: shows the hub's pushes and opens them.
//
// Serve it from your page's own origin (a service worker must be) and
// point the SDK at it: hub.push.serviceWorkerUrl = '/roomhub-sw.js'. Query
// parameters choose the notification's images: roomhub-sw.js?icon=/icon.png&badge=/badge.png.
//
// A push carries the inbox item's face: {notificationId, title, body, url,
// severity, tag}. A click closes it, focuses a tab of this site (on the
// item's url when it has one) or opens one, and tells that page, whose SDK
// marks the item read. When the browser renews the subscription, the new
// one goes to the open pages, whose SDK hands it to the hub (a page that
// opens later sends it too).

const params = new URL(self.location.href).searchParams;

self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let m = {};
  try {
    m = event.data ? event.data.json() : {};
  } catch {
    m = { title: event.data ? event.data.text() : '' };
  }
  const loud = m.severity === 'high' || m.severity === 'critical';
  const tag = m.tag || m.notificationId || '';
  event.waitUntil(self.registration.showNotification(m.title || 'New notification', {
    body: m.body || '',
    tag,
    renotify: loud && tag !== '', // a replaced high one rings again
    requireInteraction: m.severity === 'critical',
    icon: params.get('icon') || undefined,
    badge: params.get('badge') || undefined,
    data: { notificationId: m.notificationId || '', url: m.url || '' },
  }));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(openItem(event.notification.data || {}));
});

// openItem focuses a window of this site (navigated to the item's url when
// it has one) or opens one, then tells it which item was opened.
async function openItem({ notificationId, url }) {
  const target = new URL(url || '/', self.registration.scope).href;
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
  win?.postMessage({ type: 'roomhub-notification-click', notificationId, url });
}

// A page may open an item as a click on its notification would (an in-page
// toast of the same push, say): {type: 'roomhub-open', notificationId, url}.
self.addEventListener('message', (event) => {
  const m = event.data || {};
  if (m.type === 'roomhub-open') event.waitUntil(openItem(m));
});

self.addEventListener('pushsubscriptionchange', (event) => {
  const key = event.oldSubscription?.options?.applicationServerKey;
  if (!key) return;
  event.waitUntil((async () => {
    const sub = await self.registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: key });
    for (const w of await self.clients.matchAll({ type: 'window', includeUncontrolled: true })) {
      w.postMessage({ type: 'roomhub-push-renewed', subscription: sub.toJSON() });
    }
  })());
});
