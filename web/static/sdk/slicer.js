// A slice is how long event handling may hold the page in one task.
export const SLICE_MS = 8;

/**
 * Slicer runs callbacks in order, at most SLICE_MS of them in one task, the
 * rest in the next (a MessageChannel's task, which the browser does not
 * throttle in a background tab as it does timers). The browser hands over
 * all the events of one network read in one task: 500 notifications at
 * once would otherwise hold the page for a long task.
 */
export class Slicer {
  constructor() {
    this.queue = [];
    this.spent = 0; // ms run in this task
    this.kicked = false;
    this.chan = null;
  }

  take(fn) {
    if (!this.queue.length && this.spent < SLICE_MS) this.#run(fn);
    else {
      this.queue.push(fn);
      this.#kick();
    }
  }

  #run(fn) {
    const t0 = performance.now();
    try {
      fn();
    } finally {
      this.spent += performance.now() - t0;
      this.#kick(); // the next task starts a new slice
    }
  }

  #kick() {
    if (this.kicked || typeof MessageChannel !== 'function') return;
    if (!this.chan) {
      this.chan = new MessageChannel();
      this.chan.port1.onmessage = () => this.#next();
      this.chan.port1.unref?.(); // node: the tests end without closing it
    }
    this.kicked = true;
    this.chan.port2.postMessage(0);
  }

  #next() {
    this.kicked = false;
    this.spent = 0;
    while (this.queue.length && this.spent < SLICE_MS) this.#run(this.queue.shift());
  }

  close() {
    this.queue = [];
    this.chan?.port1.close();
    this.chan = null;
  }
}
