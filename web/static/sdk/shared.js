import { HubError, Status, newer, tokenSubject, visible } from './base.js';
import { PageStreamOf, memberOf, parsePageId } from './page.js';
import { Slicer } from './slicer.js';
import { Inbox } from './stream.js';

/**
 * SharedPageStream is a PageStream that the tabs of one origin and user
 * share: one tab, elected with the Web Locks API, holds the one connection
 * for the union of every tab's rooms and the bell, and relays each event over
 * a BroadcastChannel to the tabs that want it. When the leader closes,
 * crashes or is frozen, another tab takes over and resumes from the newest
 * position any relayed event carried; each tab drops what it already had
 * (per room and for the bell), so no tab misses or repeats an event.
 */
export class SharedPageStream {
  /** supported reports whether this browser can share (Web Locks and BroadcastChannel). */
  static supported() {
    return typeof BroadcastChannel === 'function' && typeof navigator !== 'undefined' && !!navigator.locks;
  }

  /**
   * @param {RoomHub} hub
   * @param {object} opts PageStream's options, userId (the user, when
   *   getToken returns no JWT: cookie auth) and shareKey (narrows what the
   *   tabs share; the user always names it, so tabs of two users never share)
   */
  constructor(hub, opts = {}) {
    this.hub = hub;
    this.opts = opts;
    this.rooms = [...new Set(opts.rooms || [])];
    this.notifications = !!opts.notifications;
    this.status = Status.CONNECTING;
    this.online = new Map();
    this.inbox = new Inbox(opts);
    this.listeners = new Map();
    this.tab = Math.random().toString(36).slice(2);
    this.positions = new Map(); // member → the newest stream id this tab handled
    this.known = new Map(); // member → the newest stream id any relayed event carried
    this.tabs = new Map(); // tab → {rooms, notifications, types, visible, seen}
    this.last = {}; // what catchUp sends a tab that arrives later
    this.outbox = []; // relayed events not yet posted (see #queue)
    this.presenceSeen = new Map(); // room → presence updates relayed (snapshotPresence)
    this.slicer = new Slicer(); // relayed events are handled in order, a slice a task
    this.closed = false;
    this.leading = false;
    this.stream = null;
    // The leader's: rooms the hub refused (left out of the union until a tab
    // asks again), and whether its stream ended for good (evicted, the
    // token refused) and waits for a tab to ask again.
    this.refused = new Set();
    this.stopped = false;
    // This tab's: rooms the hub refused it (left out of what it waits for),
    // and the shared stream's last status with the members it carried.
    this.denied = new Set();
    this.shared = { s: Status.CONNECTING };
    queueMicrotask(() => this.#start());
  }

  /** @type {number|null} */
  get count() { return this.inbox.count; }

  /** @type {object|null} */
  get counts() { return this.inbox.counts; }

  /** @type {string} the newest page position this tab knows */
  get lastEventId() { return this.#resumeId(); }

  /** isLeader reports whether this tab holds the connection. */
  get isLeader() { return this.leading; }

  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    if (type !== '*') this.#listenTo([type]); // the leader's stream listens to it too
    this.#announce();
    return () => this.listeners.get(type)?.delete(fn);
  }

  setRooms(rooms) { this.setMembers(rooms, this.notifications); }

  setMembers(rooms, notifications) {
    this.rooms = [...new Set(rooms)];
    this.notifications = !!notifications;
    this.denied.clear();
    this.#restatus();
    for (const r of this.online.keys()) if (!this.rooms.some((x) => String(x) === String(r))) this.online.delete(r);
    this.#announce();
    if (this.leading) {
      this.#askedAgain();
      this.#follow();
    }
  }

  reconnect() { if (this.stream) this.stream.reconnect(); }

  covers(roomId) { return this.rooms.some((r) => String(r) === String(roomId)); }

  close() {
    if (this.closed) return;
    this.closed = true;
    this.#post({ k: 'bye', tab: this.tab });
    this.#stopLeading();
    clearInterval(this.beat);
    this.bc?.close();
    this.kick?.port1.close();
    this.slicer.close();
    this.hub.streams?.delete(this);
    this.listeners.clear();
    this.#setStatus(Status.CLOSED);
  }

  async #start() {
    let user = '';
    try { user = tokenSubject(await this.hub.getToken()); } catch { user = ''; }
    user = user || String(this.opts.userId ?? ''); // cookie auth: the page names its user
    if (this.closed) return;
    if (!user) { // nothing names the user: do not share
      this.#lead(null, 0);
      return;
    }
    // The user always names the channel: a shareKey only narrows it, so no
    // key can relay one user's stream to another's tabs.
    // The name carries the relay's version ("2": events go in batches), so
    // tabs of an older SDK, still open across a deploy, share among
    // themselves and never miss what they cannot read.
    const name = `roomhub/2:${this.hub.baseUrl || location.origin}:${user}:${this.opts.shareKey || ''}`;
    this.bc = new BroadcastChannel(name);
    this.bc.onmessage = (e) => this.#receive(e.data);
    this.hub.streams?.add(this);
    this.#announce();
    this.name = name;
    this.leaderSeen = Date.now();
    let ticks = 0;
    // Every 250 ms the leader says it is alive; a visible follower that has
    // not heard from it for a second (a tab frozen without a freeze event, a
    // hung tab, or a background tab whose timers the browser throttles)
    // takes the lock from it: the tab in view leads. Hidden followers wait
    // in line (a closed or crashed leader lets go of the lock by itself).
    // Every second each tab says what it wants, and the leader forgets tabs
    // gone silent.
    this.beat = setInterval(() => {
      if (this.leading) this.#post({ k: 'alive', tab: this.tab });
      else if (Date.now() - this.leaderSeen > 1000 && visible() && this.#firstInLine()) this.#elect(true);
      if (++ticks % 4 === 0) {
        this.#announce();
        if (this.leading) this.#expireTabs();
      }
    }, 250);
    addEventListener('pagehide', () => this.close());
    // A tab about to be frozen lets another lead; back, it follows.
    document.addEventListener?.('freeze', () => this.#stopLeading());
    document.addEventListener?.('resume', () => { this.leaderSeen = Date.now(); this.#elect(); });
    this.#elect();
  }

  // firstInLine: of the visible followers still talking, this one has the
  // smallest id, so that one alone takes the lock from a silent leader.
  #firstInLine() {
    const now = Date.now();
    for (const [tab, t] of this.tabs) {
      if (tab !== this.leaderTab && t.visible && now - t.seen < 2500 && tab < this.tab) return false;
    }
    return true;
  }

  // elect queues for the lock (steal: takes it from its holder at once) and
  // leads while it holds it. A lock taken away ends the leading; the tab
  // queues again.
  #elect(steal = false) {
    if (this.closed || this.leading || (!steal && this.waiting)) return;
    if (steal) this.leaderSeen = Date.now(); // one try per silent second
    else this.waiting = true;
    const grant = (this.grants = (this.grants || 0) + 1);
    navigator.locks.request(this.name, steal ? { steal: true } : {}, () => {
      if (!steal) this.waiting = false;
      if (this.closed || this.leading) return undefined;
      return new Promise((release) => this.#lead(release, grant));
    }).catch(() => { // taken away: another tab leads now
      if (!steal) this.waiting = false;
      // The tab that took it is alive: a tab back from a freeze must not
      // take it back before it has heard from the new leader.
      this.leaderSeen = Date.now();
      if (this.grant === grant) {
        this.release = null;
        this.#stopLeading();
      }
      this.#elect();
    });
  }

  #lead(release, grant) {
    this.leading = true;
    this.release = release;
    this.grant = grant;
    this.#post({ k: 'leader', tab: this.tab });
    this.#follow();
  }

  #stopLeading() {
    this.leading = false;
    this.grant = 0;
    const stream = this.stream;
    this.stream = null;
    stream?.close();
    if (this.release) { this.release(); this.release = null; }
  }

  // askedAgain: a tab asked for something (new rooms, a new tab): rooms the
  // hub refused are tried again, and a stream that ended for good starts.
  #askedAgain() {
    this.refused.clear();
    this.stopped = false;
  }

  // union is what every live tab wants, but the rooms the hub refused:
  // rooms and the bell.
  #union() {
    const rooms = new Set(this.rooms.map(String));
    let notifications = this.notifications;
    for (const t of this.tabs.values()) {
      for (const r of t.rooms) rooms.add(String(r));
      notifications = notifications || t.notifications;
    }
    for (const r of this.refused) rooms.delete(r);
    return { rooms: [...rooms].map((r) => (/^\d+$/.test(r) ? Number(r) : r)).sort((a, b) => a - b), notifications };
  }

  // ended: the leader's stream closed by itself. A room the hub refused
  // (403 on its probe) leaves the union, the tabs that asked for it are
  // told, and the others go on streaming; anything else (evicted, the token
  // refused) stops the shared stream until a tab asks again.
  #ended(stream) {
    if (this.stream !== stream) return;
    this.stream = null;
    const err = stream.lastError;
    const m = err instanceof HubError && err.status === 403 && /^\/api\/v1\/rooms\/([^/]+)\/presence$/.exec(err.path || '');
    if (m && !this.refused.has(m[1])) {
      this.refused.add(m[1]);
      const msg = { k: 'refused', roomId: /^\d+$/.test(m[1]) ? Number(m[1]) : m[1], status: err.status, code: err.code, message: err.message };
      this.#post(msg);
      this.#receive(msg);
      this.#follow();
      return;
    }
    this.stopped = true;
    const closed = { k: 'status', s: Status.CLOSED };
    this.#post(closed);
    this.#heard(closed);
  }

  // follow makes the leader's stream carry the union, resuming from the
  // newest known position.
  #follow() {
    if (!this.leading || this.closed || this.stopped) return;
    const u = this.#union();
    // A member no tab wants any more is forgotten: should one want it again,
    // it starts live, as a new room of a page stream does (not replayed
    // from where the last tab that had it left off).
    const wanted = new Set(u.rooms.map(String));
    if (u.notifications) wanted.add('n');
    for (const m of [...this.known.keys()]) if (!wanted.has(m)) this.known.delete(m);
    if (this.stream) {
      const same = this.stream.notifications === u.notifications &&
        this.stream.rooms.length === u.rooms.length && this.stream.rooms.every((r, i) => String(r) === String(u.rooms[i]));
      if (!same) {
        this.stream.lastEventId = this.#resumeId();
        this.stream.setMembers(u.rooms, u.notifications);
      }
      return;
    }
    const types = new Set([...this.listeners.keys()].filter((t) => t !== '*'));
    for (const t of this.tabs.values()) for (const x of t.types || []) types.add(x);
    const stream = new PageStreamOf(this.hub, {
      ...this.opts, rooms: u.rooms, notifications: u.notifications, lastEventId: this.#resumeId(), types: [...types],
      onStatus: (st) => {
        if (st === Status.CLOSED) { this.#ended(stream); return; }
        if (this.stream !== stream) return;
        const m = { k: 'status', s: st, rooms: stream.rooms, notifications: stream.notifications };
        this.#post(m);
        this.#heard(m);
        if (st === Status.OPEN) this.#snapshotPresence(stream);
      },
      onCount: undefined, onCounts: undefined, onCreated: undefined, onUpdated: undefined, onRead: undefined,
      onDeleted: undefined, onPresence: undefined,
      onGap: (g) => this.#relay('system.gap', g, ''),
      onEvicted: (d) => { this.#relay('system.evicted', d, ''); },
      onError: (e) => {
        stream.lastError = e;
        // A refused room is reported to the tabs that asked for it (ended).
        if (!(e instanceof HubError && e.status === 403 && /\/rooms\//.test(e.path || ''))) this.opts.onError?.(e);
      },
    });
    this.stream = stream;
    stream.on('*', (data, id, type) => { if (!type.startsWith('system.')) this.#relay(type, data, id); });
  }

  // snapshotPresence reads who is online in the rooms the stream has no
  // position for: such a room starts live when the stream (re)connects, so
  // a presence update published meanwhile (a join, when the leader changed
  // or the union grew) would be missed. The snapshot stands in for it,
  // unless a real update of the room came first.
  #snapshotPresence(stream) {
    for (const r of stream.rooms) {
      const room = String(r);
      if (this.known.has(room)) continue;
      const seen = this.presenceSeen.get(room) || 0;
      this.hub.api('GET', `/api/v1/rooms/${encodeURIComponent(room)}/presence`).then((p) => {
        if (this.stream !== stream || this.closed || (this.presenceSeen.get(room) || 0) !== seen) return;
        const onlineUsers = (p.onlineUsers || []).map((u) => u.userId);
        this.#relay('presence.update', { roomId: r, onlineUsers, count: p.count ?? onlineUsers.length,
          joined: null, left: null, joinedUsers: [], leftUsers: [] }, '');
      }, () => {});
    }
  }

  // listenTo makes the leader's stream listen to event types some tab wants.
  #listenTo(types) {
    for (const t of types) if (this.stream && !this.stream.types.has(t)) this.stream.on(t, () => {});
  }

  #resumeId() {
    const parts = [...this.known].map(([m, p]) => `${m}:${p}`);
    return parts.length ? `p1,${parts.join(',')}` : '';
  }

  // relay hands an event the leader's stream got to every tab, itself too.
  #relay(type, data, id) {
    const msg = { k: 'ev', type, data, id };
    // What a tab arriving later is sent at once (catchUp): each room's last
    // presence, the bell's newest counts.
    if (type === 'presence.update' && data) {
      this.last[`p${data.roomId}`] = msg;
      if (id) this.presenceSeen.set(String(data.roomId), (this.presenceSeen.get(String(data.roomId)) || 0) + 1);
    }
    const counts = type === 'notification.counts' ? data : data && data.counts;
    if (counts && typeof counts.version === 'number' &&
        (!this.last.counts || counts.version >= this.last.counts.data.version)) {
      this.last.counts = { k: 'ev', type: 'notification.counts', data: counts, id: '' };
      this.last.unread = { k: 'ev', type: 'notification.unread', data: { count: counts.unread }, id: '' };
    } else if (type === 'notification.unread' && !this.last.counts) {
      this.last.unread = msg;
    }
    this.#queue(msg);
    this.#deliver(msg);
  }

  // queue hands relayed events to the other tabs in one message per task: a
  // burst the stream parsed in one task (500 notifications) is one message,
  // not 500. The task after it is a MessageChannel's, which the browser
  // does not throttle in a background tab, unlike a timer.
  #queue(msg) {
    if (!this.bc || this.closed) return;
    this.outbox.push(msg);
    if (this.outbox.length > 1) return;
    if (!this.kick) {
      this.kick = new MessageChannel();
      this.kick.port1.onmessage = () => this.#flush();
      this.kick.port1.unref?.();
    }
    this.kick.port2.postMessage(0);
  }

  #flush() {
    if (!this.outbox.length) return;
    const list = this.outbox;
    this.outbox = [];
    if (this.bc && !this.closed) {
      try { this.bc.postMessage({ k: 'evs', list }); } catch { /* closing */ }
    }
  }

  #receive(m) {
    if (!m || this.closed) return;
    if (m.k === 'alive' || m.k === 'leader') {
      this.leaderSeen = Date.now();
      this.leaderTab = m.tab;
    } else if (m.k === 'ev' || m.k === 'evs' || m.k === 'status') {
      this.leaderSeen = Date.now();
    }
    switch (m.k) {
      case 'ev': this.slicer.take(() => this.#deliver(m)); break;
      case 'evs': for (const e of m.list || []) this.slicer.take(() => this.#deliver(e)); break;
      case 'status': this.#heard(m); break;
      case 'hello': {
        const before = this.tabs.get(m.tab);
        const asks = !before || before.notifications !== m.notifications || String(before.rooms) !== String(m.rooms);
        this.tabs.set(m.tab, { rooms: m.rooms, notifications: m.notifications, types: m.types, visible: m.visible, seen: Date.now() });
        if (this.leading) {
          if (asks) this.#askedAgain();
          this.#listenTo(m.types || []);
          this.#follow();
          if (!before) this.#catchUp();
        }
        break;
      }
      case 'refused': // the hub refused a room: the tab that asked for it hears why
        if (this.covers(m.roomId)) {
          this.denied.add(String(m.roomId));
          this.#restatus();
          const err = new HubError(m.status, m.code, m.message);
          err.roomId = m.roomId;
          this.opts.onError?.(err);
        }
        break;
      case 'bye': this.tabs.delete(m.tab); if (this.leading) this.#follow(); break;
      case 'leader': this.#announce(); break;
      default:
    }
  }

  // catchUp sends a tab that just arrived what it cannot get from the stream:
  // the bell's counts and each room's online users, as last relayed.
  #catchUp() {
    this.#post({ k: 'status', ...this.shared });
    for (const msg of Object.values(this.last)) this.#post(msg);
  }

  // expireTabs forgets tabs silent for 90 s: crashed ones (a closed tab says
  // bye). Long, because a background tab's timers may run once a minute, and
  // a tab forgotten too soon would lose its rooms' events meanwhile.
  #expireTabs() {
    const now = Date.now();
    let gone = false;
    for (const [tab, t] of this.tabs) if (now - t.seen > 90000) { this.tabs.delete(tab); gone = true; }
    if (gone) this.#follow();
  }

  #announce() {
    this.#post({ k: 'hello', tab: this.tab, rooms: this.rooms, notifications: this.notifications, visible: visible(),
      types: [...this.listeners.keys()].filter((t) => t !== '*') });
  }

  #post(msg) {
    if (!this.bc || this.closed) return;
    this.#flush(); // what was relayed goes first
    try { this.bc.postMessage(msg); } catch { /* closing */ }
  }

  // deliver hands one relayed event to this tab's listeners, if it wants it
  // and has not had it.
  #deliver({ type, data, id }) {
    if (id) {
      for (const [m, p] of parsePageId(id)) if (newer(p, this.known.get(m))) this.known.set(m, p);
    }
    const member = memberOf(type, data);
    if (member === 'n' && !this.notifications) return;
    if (member && member !== 'n' && !this.covers(member)) return;
    if (id && member) {
      const pos = parsePageId(id).get(member);
      if (pos) {
        if (!newer(pos, this.positions.get(member))) return; // had it
        this.positions.set(member, pos);
      }
    }
    if (type === 'presence.update' && data) {
      this.online.set(data.roomId, data.onlineUsers);
      this.opts.onPresence?.(data.roomId, data);
    }
    this.inbox.handle(type, data);
    if (type === 'system.gap') this.opts.onGap?.(data);
    if (type === 'system.evicted') this.opts.onEvicted?.(data);
    for (const fn of this.listeners.get(type) || []) fn(data, id, type);
    for (const fn of this.listeners.get('*') || []) fn(data, id, type);
  }

  // heard takes the shared stream's status m (s, and the rooms and bell it
  // carries: absent when it carries none) and makes this tab's of it.
  #heard(m) {
    this.shared = { s: m.s, rooms: m.rooms, notifications: m.notifications };
    this.#restatus();
  }

  // restatus makes this tab's status of the shared stream's: open only once
  // the stream carries what this tab asked for, but the rooms the hub
  // refused it; until then connecting. An event of a room the stream does
  // not carry yet would be missed (a room added to a page stream starts
  // live), so a page must not take the stream's open for its own.
  #restatus() {
    const { s, rooms, notifications } = this.shared;
    if (s !== Status.OPEN || !rooms) { this.#setStatus(s); return; }
    const carried = new Set(rooms.map(String));
    const waiting = this.rooms.some((r) => !carried.has(String(r)) && !this.denied.has(String(r))) ||
      (this.notifications && !notifications);
    this.#setStatus(waiting ? Status.CONNECTING : s);
  }

  #setStatus(st) {
    if (this.status !== st && !this.closed) { this.status = st; this.opts.onStatus?.(st); }
  }
}
