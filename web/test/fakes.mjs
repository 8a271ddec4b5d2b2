// What the SDK's unit tests share: a fake EventSource, hubs on a fake
// fetch, and what sharing between tabs needs of a browser. (node --test
// runs this file too: it holds no test.)
import { RoomHub } from '../static/roomhub.js';

// The SDK hands events to the page in slices of SLICE_MS of its clock
// (sdk/slicer.js), the rest in later tasks. These tests check what it does
// with events, not when, and assert right after emitting them: their clock
// stands still, so every event is handled as it is emitted however loaded
// the machine (beside a busy loop and a build, one handler once took over
// 8 ms and put the rest past a test's assertions).
Object.defineProperty(globalThis, 'performance', { value: { now: () => 0 }, configurable: true });

export class FakeEventSource {
  static all = [];
  constructor(url) {
    this.url = new URL(url, 'http://hub.test');
    this.listeners = new Map();
    this.closed = false;
    FakeEventSource.all.push(this);
  }
  addEventListener(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, []);
    this.listeners.get(type).push(fn);
  }
  close() { this.closed = true; }
  // test side
  open() { this.onopen?.({}); }
  fail() { this.onerror?.({}); }
  emit(type, data, id = '') {
    for (const fn of this.listeners.get(type) || []) fn({ type, data: JSON.stringify(data), lastEventId: id, target: this });
  }
  static last() { return FakeEventSource.all[FakeEventSource.all.length - 1]; }
}

export const flush = () => new Promise((r) => setImmediate(r));

// TICKETS is the route a stream asks its ticket from (the tests' hubs
// answer none, so streams carry the token).
export const TICKETS = '/api/v1/stream-tickets';

// ticketless answers the ticket route 404, as a hub from before tickets
// (the only answer that puts the token in a stream's URL), and the rest
// through fetch.
export const ticketless = (fetch) => async (url, init) => (new URL(url, 'http://x').pathname === TICKETS
  ? { ok: false, status: 404, json: async () => ({ isSuccess: false, code: 'COMMON404', message: 'no such route' }) }
  : fetch(url, init));

export function setup({ status = 200 } = {}) {
  FakeEventSource.all = [];
  let n = 0;
  const probe = { status };
  const hub = new RoomHub({
    baseUrl: 'http://hub.test',
    getToken: async () => `tok${++n}`,
    EventSource: FakeEventSource,
    fetch: ticketless(async () => ({
      ok: probe.status === 200, status: probe.status,
      json: async () => (probe.status === 200
        ? { isSuccess: true, code: 'COMMON200', result: { count: 0 } }
        : { isSuccess: false, code: probe.status === 403 ? 'COMMON403' : 'AUTH4001', message: 'no' }),
    })),
  });
  return { hub, probe };
}

// recordingHub is a RoomHub whose fetch records each call and answers result.
export function recordingHub(result = {}) {
  const calls = [];
  const hub = new RoomHub({
    baseUrl: 'http://hub.test',
    getToken: () => 'tok',
    EventSource: FakeEventSource,
    fetch: async (url, init) => {
      calls.push({ url: new URL(url), method: init.method, body: init.body === undefined ? undefined : JSON.parse(init.body) });
      return { ok: true, status: 200, json: async () => ({ isSuccess: true, code: 'COMMON200', result }) };
    },
  });
  return { hub, calls };
}

// withTabs runs fn with what sharing between tabs needs of a browser: a
// BroadcastChannel class, Web Locks (locks) and a visible document.
export async function withTabs(Channel, locks, fn) {
  globalThis.BroadcastChannel = Channel;
  const hadNavigator = 'navigator' in globalThis;
  Object.defineProperty(globalThis, 'navigator', { value: { locks }, configurable: true });
  globalThis.addEventListener ??= () => {};
  globalThis.document = { visibilityState: 'visible' };
  try {
    await fn();
  } finally {
    delete globalThis.BroadcastChannel;
    delete globalThis.document;
    if (!hadNavigator) delete globalThis.navigator;
  }
}
