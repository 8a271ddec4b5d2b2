// roomhub client SDK: dependency-free ES modules served by the hub at
// /static/roomhub.js (this file: what the SDK exports) and /static/sdk/
// (one module a job). See web/README.md for examples.
//
//   const hub = new RoomHub({ baseUrl: '', getToken: () => fetchToken() });
//   const room = hub.room(42, { onGap: (g) => hub.fetchGap(42, g.requested, g.oldest).then(show) });
//   room.on('comment.created', (data, id) => show(data));
//   const bell = hub.notifications({ onCount: (n) => badge(n) });
//   // or one connection for the page's rooms and its bell:
//   const page = hub.page({ rooms: [42, 43], notifications: true, onCount: badge });
//
// Tabs share: hub.page() in several tabs of one user holds one connection in
// all (a leader tab, elected with Web Locks, relays over BroadcastChannel).
//
// A stream keeps the last event id it saw and sends it on every reconnect, so
// the hub resumes exactly (catch-up, no gap, no duplicate). It asks getToken()
// for a token whenever it connects, reconnects with backoff and jitter, never
// loops on a refusal (401 after a fresh token, 403), and stops for good when
// the hub evicts it.

// One module a job (web/static/sdk/): base.js (Status, HubError, the event
// types), hub.js (RoomHub: streams and the JSON API), stream.js (a room's
// and the user's streams, reconnects), page.js (the page stream), shared.js
// (the page stream the tabs share), push.js (Web Push), devices.js (the
// person's devices, consent per device), slicer.js (event handling in
// slices of a task).
export { Status, HubError } from './sdk/base.js';
export { RoomHub, PageStream } from './sdk/hub.js';
export { WebPush } from './sdk/push.js';
export { Devices } from './sdk/devices.js';
export { RoomStream, NotificationStream } from './sdk/stream.js';
export { SharedPageStream } from './sdk/shared.js';
