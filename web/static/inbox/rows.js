// The element's rows: a long list has rows only near the view (5,000
// items listed are a few dozen rows), measured as the browser lays them
// out, never by forcing a layout.

/**
 * windowOf chooses which rows of a long list exist in the page: those within
 * `over` pixels of the view (top and height in pixels), at most max of them.
 * height(item) is a row's measured or estimated height. It answers the rows
 * [from, to) and the heights that stand in for the rows before and after.
 */
export function windowOf(items, height, top, view, over = 600, max = 60) {
  let i = 0;
  let y = 0;
  while (i < items.length && y + height(items[i]) <= top - over) y += height(items[i++]);
  const from = i;
  const before = y;
  while (i < items.length && y < top + view + over && i - from < max) y += height(items[i++]);
  const to = i;
  let after = 0;
  for (; i < items.length; i++) after += height(items[i]);
  return { from, to, before, after };
}

/**
 * Rows are the rows of a list (a ul) near its view: each row's measured
 * height (those not yet made are estimated at the mean of those measured),
 * the rows made, and the window of items they show.
 */
export class Rows {
  constructor(list) {
    this.list = list;
    this.heights = new Map();
    this.heightSum = 0;
    this.rowH = 72;
    this.sizes = typeof ResizeObserver === 'function' ? new ResizeObserver((es) => {
      for (const e of es) if (e.target.isConnected) this.#measured(e.target.dataset.id, e.borderBoxSize?.[0]?.blockSize ?? e.target.offsetHeight);
    }) : null;
    this.made = new Map();
    this.win = { from: 0, to: 0 };
    this.spacers = {};
  }

  /** forget drops the heights measured: a new list comes. */
  forget() {
    this.heights.clear();
    this.heightSum = 0;
  }

  /** stop lets the rows go (the element left the page); they are observed again as they are made. */
  stop() {
    this.sizes?.disconnect();
    this.made.clear();
  }

  /**
   * paint makes the rows of items near the view (top and view in pixels)
   * and no others; force: the items changed, make them again. make(n) makes
   * an item's row; size is the list's length for assistive technology (-1:
   * not known). It answers the window, or null when it did not change.
   *
   * A row kept stays in the page, so the focus stays in it; a keyboard user
   * whose row went (active: the focused element) keeps their place: the
   * same control of the same item, or the item's main button, or the one
   * that took its place, or else fallback() (asked only then).
   */
  paint({ items, top, view, force, size, make, active, fallback }) {
    const est = this.rowH;
    const w = windowOf(items, (n) => this.heights.get(n.notificationId) ?? est, top, view);
    if (!force && w.from === this.win.from && w.to === this.win.to) return null;
    this.win = w;
    const gone = active?.closest('li.item');
    const at = gone ? Number(gone.getAttribute('aria-posinset')) - 1 : -1;
    const label = active?.getAttribute('aria-label');
    const made = new Map();
    const want = [this.#spacer('before', w.before)];
    for (let i = w.from; i < w.to; i++) {
      const n = items[i];
      let li = this.made.get(n.notificationId);
      if (!li || li.item !== n) li = make(n);
      li.setAttribute('aria-posinset', String(i + 1));
      li.setAttribute('aria-setsize', String(size));
      made.set(n.notificationId, li);
      want.push(li);
    }
    want.push(this.#spacer('after', w.after));
    this.made = made;
    this.#place(want);
    if (gone && !gone.isConnected) {
      const same = made.get(gone.dataset.id);
      const near = this.list.querySelectorAll('li.item')[Math.max(0, Math.min(at - w.from, made.size - 1))];
      const target = (same && label && same.querySelector(`[aria-label="${CSS.escape(label)}"]`)) || same?.querySelector('.open') ||
        near?.querySelector('.open');
      (target || fallback())?.focus();
    }
    return w;
  }

  /**
   * place makes the list's children want: rows that go are taken out
   * first, so those kept never move (a moved node loses the focus); the
   * new ones go in around them.
   */
  #place(want) {
    const keep = new Set(want);
    for (const node of [...this.list.children]) {
      if (keep.has(node)) continue;
      node.remove();
      this.sizes?.unobserve(node);
    }
    let cur = this.list.firstChild;
    for (const node of want) {
      if (cur === node) cur = cur.nextSibling;
      else {
        this.list.insertBefore(node, cur);
        if (node.dataset.id) this.sizes?.observe(node);
      }
    }
  }

  /** measured keeps a row's height. */
  #measured(id, h) {
    if (!h) return;
    this.heightSum += h - (this.heights.get(id) ?? 0);
    this.heights.set(id, h);
    this.rowH = this.heightSum / this.heights.size;
  }

  /** spacer is the stand-in for the rows before or after the window. */
  #spacer(which, px) {
    let li = this.spacers[which];
    if (!li) {
      li = document.createElement('li');
      li.className = 'spacer';
      li.setAttribute('aria-hidden', 'true');
      this.spacers[which] = li;
    }
    li.style.height = `${px}px`; // through the CSSOM: a CSP without 'unsafe-inline' allows it
    return li;
  }
}
