import { tokenSubject } from './base.js';

/**
 * WebPush subscribes this browser to the hub's pushes: a closed tab rings
 * (the hub pushes only when the user has no stream open, by default). The
 * service worker (roomhub-sw.js) must be served from the page's own origin:
 * the hub's /static/roomhub-sw.js when the page is the hub's, else a copy
 * on the app's origin, named by serviceWorkerUrl. A click on a
 * notification opens its url (or focuses a tab) and that page's SDK marks
 * the item read.
 */
export class WebPush {
  constructor(hub) {
    this.hub = hub;
    /** where the service worker is (same origin as the page); set before enable() */
    this.serviceWorkerUrl = `${hub.baseUrl}/static/roomhub-sw.js`;
    /** the signed-in user, when getToken gives no JWT to read it from (cookie auth): the worker shows only their pushes */
    this.userId = '';
    this.listening = false;
  }

  /** supported says whether this browser has service workers, push and notifications. */
  static supported() {
    return typeof navigator !== 'undefined' && 'serviceWorker' in navigator &&
      typeof PushManager !== 'undefined' && typeof Notification !== 'undefined';
  }

  #listen() {
    if (this.listening || !WebPush.supported()) return;
    this.listening = true;
    // The worker tells the page it opened (or focused) after a click, and
    // hands over a subscription the browser renewed: this page has a token.
    navigator.serviceWorker.addEventListener('message', (e) => {
      const m = e.data || {};
      if (m.type === 'roomhub-notification-click' && m.notificationId) this.hub.markRead(m.notificationId).catch(() => {});
      if (m.type === 'roomhub-push-renewed' && m.subscription) {
        this.#send(m.replaces ? { ...m.subscription, replaces: m.replaces } : m.subscription).catch(() => {});
      }
    });
  }

  async #registration() {
    const reg = await navigator.serviceWorker.getRegistration(new URL(this.serviceWorkerUrl, location.href).href);
    return reg || null;
  }

  #send(json) { return this.hub.api('POST', '/api/v1/push/subscriptions', json); }

  // #tellWorker says who is signed in to reg's worker, which shows only
  // that user's pushes ('' : nobody, show none of anyone's).
  async #tellWorker(reg, signedIn) {
    let userId = '';
    if (signedIn) {
      try { userId = tokenSubject(await this.hub.getToken()); } catch { userId = ''; }
      userId = userId || String(this.userId ?? ''); // cookie auth: the page names its user
    }
    (reg.active || reg.waiting || reg.installing)?.postMessage({ type: 'roomhub-user', userId });
  }

  // #subscription is reg's subscription with the hub's key publicKey: the
  // one there, or a new one when there is none or the hub's key changed.
  async #subscription(reg, publicKey) {
    let sub = await reg.pushManager.getSubscription();
    if (sub && b64url(sub.options.applicationServerKey) !== publicKey) { // the hub's key changed
      await sub.unsubscribe();
      sub = null;
    }
    return sub || reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromB64url(publicKey) });
  }

  /**
   * state is 'unsupported', 'denied' (the user blocked notifications), 'off'
   * or 'on'. When on, it sends the subscription to the hub again (which
   * keeps it another 90 days, and makes it this user's), subscribing again
   * first when the hub's key changed, and tells the worker who is signed in.
   */
  async state() {
    if (!WebPush.supported()) return 'unsupported';
    this.#listen();
    if (Notification.permission === 'denied') return 'denied';
    const reg = await this.#registration();
    const had = await reg?.pushManager.getSubscription();
    if (!had || Notification.permission !== 'granted') return 'off';
    return this.#handOver(reg);
  }

  /**
   * enable asks the permission (call it from a click), registers the
   * service worker, subscribes with the hub's key and hands the
   * subscription to the hub: 'on', or 'denied'.
   */
  async enable() {
    if (!WebPush.supported()) return 'unsupported';
    this.#listen();
    if ((await Notification.requestPermission()) !== 'granted') return 'denied';
    return this.#handOver(await activated(await navigator.serviceWorker.register(this.serviceWorkerUrl)));
  }

  // #handOver makes reg's subscription the signed-in user's: subscribed with
  // the hub's key, the worker told who is signed in, the hub handed it: 'on'.
  async #handOver(reg) {
    const { publicKey } = await this.hub.api('GET', '/api/v1/push/vapid-public-key');
    const sub = await this.#subscription(reg, publicKey);
    await this.#tellWorker(reg, true);
    await this.#send(sub.toJSON());
    return 'on';
  }

  /**
   * disable forgets this browser's subscription, at the hub and here, and
   * tells the worker nobody is signed in: 'off'. Call it when the person
   * signs out, so that the next person on this browser gets none of their
   * pushes.
   */
  async disable() {
    if (!WebPush.supported()) return 'unsupported';
    const reg = await this.#registration();
    if (reg) await this.#tellWorker(reg, false);
    const sub = await reg?.pushManager.getSubscription();
    if (sub) {
      try {
        await this.hub.api('DELETE', '/api/v1/push/subscriptions', { endpoint: sub.endpoint });
      } finally {
        await sub.unsubscribe(); // off here whatever the hub said: it forgets the endpoint at the next push
      }
    }
    return 'off';
  }
}

// activated resolves with reg once its worker is active (serviceWorker.ready
// would wait for a worker whose scope holds this page: /static/'s does not
// hold the page at /).
export function activated(reg) {
  const w = reg.installing || reg.waiting;
  if (reg.active || !w) return Promise.resolve(reg);
  return new Promise((resolve) => {
    w.addEventListener('statechange', () => { if (w.state === 'activated' || w.state === 'redundant') resolve(reg); });
  });
}

export function b64url(buf) {
  if (!buf) return '';
  return btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export function fromB64url(s) {
  const b = atob(s.replace(/-/g, '+').replace(/_/g, '/'));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}
