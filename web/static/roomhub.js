// roomhub client SDK: one EventSource per room, resumed by the browser with
// Last-Event-ID. When the hub ends a stream because the token expired (or the
// browser sees an error), the SDK asks getToken() for a fresh token and
// reconnects from the last event id it saw.
export class RoomStream {
  constructor(baseUrl, roomId, { getToken, onEvent, onSystem, onOpen, onError } = {}) {
    this.baseUrl = baseUrl.replace(/\/$/, '');
    this.roomId = roomId;
    this.getToken = getToken;
    this.onEvent = onEvent || (() => {});
    this.onSystem = onSystem || (() => {});
    this.onOpen = onOpen || (() => {});
    this.onError = onError || (() => {});
    this.lastEventId = '';
    this.types = new Set();
    this.closed = false;
  }

  // on subscribes to an event type (EventSource needs each name registered).
  on(type) { this.types.add(type); if (this.es) this.#listen(type); return this; }

  async open() {
    if (this.closed) return;
    const token = await this.getToken();
    const q = new URLSearchParams({ token });
    if (this.lastEventId) q.set('lastEventId', this.lastEventId);
    this.es = new EventSource(`${this.baseUrl}/api/v1/rooms/${this.roomId}/stream?${q}`, { withCredentials: true });
    this.es.onopen = () => this.onOpen();
    this.es.onerror = (e) => {
      this.onError(e);
      if (this.es.readyState === EventSource.CLOSED && !this.closed) {
        setTimeout(() => this.open(), 1000); // e.g. 401: fetch a fresh token
      }
    };
    for (const t of this.types) this.#listen(t);
    for (const t of ['system.gap', 'system.lagged', 'system.evicted']) {
      this.es.addEventListener(t, (e) => this.onSystem(t, JSON.parse(e.data)));
    }
  }

  #listen(type) {
    this.es.addEventListener(type, (e) => {
      if (e.lastEventId) this.lastEventId = e.lastEventId;
      this.onEvent(type, JSON.parse(e.data), e.lastEventId);
    });
  }

  close() { this.closed = true; if (this.es) this.es.close(); }
}
