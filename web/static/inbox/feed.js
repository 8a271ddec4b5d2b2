// The element's list: which items a tab holds, in what order, and the
// Feed that loads them page by page and keeps them as events change them.

/** TABS are the list's tabs: the state each lists and the count of its size. */
export const TABS = [
  { key: 'all', state: 'visible', count: 'visible' },
  { key: 'unread', state: 'unread', count: 'unread' },
  { key: 'archived', state: 'archived', count: 'archived' },
];

export const PAGE = 20; // the first page of a list
export const MORE = 50; // each page after it, as the list scrolls

/** inTab says whether an item belongs in a tab's list: all (visible), unread or archived. */
export function inTab(tab, n, now = Date.now()) {
  if (tab === 'archived') return !!n.archivedAt;
  const later = (ts) => !!ts && Date.parse(ts) > now;
  const visible = !n.archivedAt && !later(n.snoozedUntil) && !(n.expiresAt && !later(n.expiresAt));
  return visible && (tab !== 'unread' || !n.readAt);
}

/** newer says whether a comes before b in a list: newer activity first, ties by id. */
export function newer(a, b) {
  const x = Date.parse(a.activityAt || a.timestamp);
  const y = Date.parse(b.activityAt || b.timestamp);
  return x !== y ? x > y : a.notificationId > b.notificationId;
}

/**
 * placeOf is the index at which item n goes in the sorted items, or -1 when
 * it goes after all of them and more are yet to be loaded (the page that
 * has it will bring it).
 */
export function placeOf(items, n, complete) {
  let i = 0;
  while (i < items.length && newer(items[i], n)) i++;
  return i === items.length && !complete ? -1 : i;
}

/**
 * Feed is one tab's list as the element knows it: the items loaded (newest
 * first), where the next page starts, and the events' changes made on it.
 * A list asked for later wins over one still on its way (gen); a change made
 * while a list is on its way is made again on it, since the hub may have
 * answered before the change.
 */
export class Feed {
  /** list(query) asks the hub for a page (RoomHub.list). */
  constructor(list) {
    this.list = list;
    this.tab = 'all';
    this.items = [];
    this.next = null;
    this.loading = false;
    this.failed = false;
    this.fresh = 0; // items that arrived while the list was scrolled down
    this.gen = 0;
    this.replay = [];
    this.types = new Set(); // every item's type listed: the preferences offer them
  }

  /** count names the counts' field that is the tab's size. */
  get count() { return TABS.find((x) => x.key === this.tab).count; }

  get #state() { return TABS.find((x) => x.key === this.tab).state; }

  /** restart begins the tab's list from its top (keep: the old items stay until the new come). */
  restart(keep) {
    this.gen++;
    if (!keep) this.items = [];
    this.next = null;
    this.fresh = 0;
  }

  /**
   * more loads the next page, or the first. It answers whether the list
   * changed (false: nothing to load, or a list asked for later took its
   * place) and throws what the hub answered when it failed.
   */
  async more(first = false) {
    if (!first && (this.loading || !this.next)) return false;
    const gen = this.gen;
    this.loading = true;
    this.replay = [];
    try {
      const page = await this.list({ limit: first ? PAGE : MORE, state: this.#state, before: first ? undefined : this.next });
      if (gen !== this.gen) return false;
      if (first) this.items = page.notifications;
      else { // an item placed from an event meanwhile is not listed twice
        const have = new Set(this.items.map((n) => n.notificationId));
        this.items = this.items.concat(page.notifications.filter((n) => !have.has(n.notificationId)));
      }
      this.#replay();
      for (const n of page.notifications) this.types.add(n.eventType);
      this.next = page.hasMore ? page.nextBefore : null;
      this.failed = false;
      return true;
    } catch (e) {
      if (gen !== this.gen) return false;
      this.failed = true;
      throw e;
    } finally {
      if (gen === this.gen) this.loading = false;
    }
  }

  /**
   * again lists the tab's first items anew, as many as are loaded (at
   * least a page, at most 100): what changed is not known. It answers and
   * throws as more does.
   */
  async again() {
    const gen = ++this.gen;
    const shown = Math.max(this.items.length, PAGE);
    this.loading = true;
    this.replay = [];
    try {
      const page = await this.list({ limit: Math.min(shown, 100), state: this.#state });
      if (gen !== this.gen) return false;
      this.items = page.notifications;
      this.#replay();
      this.next = page.hasMore ? page.nextBefore : null;
      this.loading = false; // before painting: rows that reach the end load the next page
      return true;
    } catch (e) {
      if (gen === this.gen) throw e;
      return false;
    } finally {
      if (gen === this.gen) this.loading = false;
    }
  }

  /** patch makes an event's change now, and again on the list on its way if one is. */
  patch(fn) {
    fn(false);
    if (this.loading) this.replay.push(fn);
  }

  #replay() {
    for (const fn of this.replay) fn(true);
    this.replay = [];
  }

  /**
   * place puts an item, new or changed, where it belongs: out of the list
   * if its tab no longer has it; at the top only while the reader is there
   * (atTop; further down it is counted in fresh, and place answers true:
   * the "N new" pill says so and the list does not move); nowhere when it
   * belongs after what is loaded. again: the change is made once more, on
   * a list that came meanwhile (fresh counted it already).
   */
  place(n, again, atTop) {
    const at = this.items.findIndex((x) => x.notificationId === n.notificationId);
    const was = at >= 0 ? this.items[at] : null;
    if (at >= 0) this.items.splice(at, 1);
    if (!inTab(this.tab, n)) return false;
    const to = placeOf(this.items, n, !this.next);
    const moved = !was || (was.activityAt || was.timestamp) !== (n.activityAt || n.timestamp);
    if (to === 0 && moved && !atTop) {
      if (again) return false;
      this.fresh++;
      return true;
    }
    if (to >= 0) this.items.splice(to, 0, n);
    return false;
  }

  /** read marks the items of ids read (and so seen) at now; the unread tab drops them. */
  read(ids, now) {
    this.items = this.items.flatMap((n) => {
      if (!ids.has(n.notificationId) || n.readAt) return [n];
      const r = { ...n, readAt: now, seenAt: n.seenAt || now };
      return inTab(this.tab, r) ? [r] : [];
    });
  }

  /** drop takes the items of ids out: deleted, expired or past retention. */
  drop(ids) {
    this.items = this.items.filter((n) => !ids.has(n.notificationId));
  }
}

/**
 * Burst does what a burst of events needs once it has passed, 100 ms after
 * its first: 500 notifications in a second draw the list a few times, not
 * 500. run(need) gets the most asked for in the burst: 'reload' (the first
 * items listed again, then drawn) over 'paint' (the rows drawn again) over
 * null (nothing for the list).
 */
export class Burst {
  #run;
  #need = null;
  #timer = null;

  constructor(run) { this.#run = run; }

  /** ask asks for need once the burst has passed. */
  ask(need) {
    if (need === 'reload' || (need === 'paint' && !this.#need)) this.#need = need;
    if (this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = null;
      const need = this.#need;
      this.#need = null;
      this.#run(need);
    }, 100);
  }

  /** stop drops what was asked (the element left the page). */
  stop() {
    clearTimeout(this.#timer);
    this.#timer = null;
  }
}
