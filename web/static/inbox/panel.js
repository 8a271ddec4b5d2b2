// The panel's parts: the element's markup, where the popover opens, the
// focus kept in it, its tabs and the list's foot.
import { ICONS } from './style.js';
import { TABS } from './feed.js';

/** MARKUP is the element's shadow DOM: the bell, the panel (tabs, list, preferences) and a live region. */
export const MARKUP = `<button class="bell" part="bell" type="button" aria-haspopup="dialog" aria-expanded="false" aria-controls="panel">${ICONS.bell}<span class="badge" part="badge" hidden></span></button>
<div class="panel" id="panel" part="panel" role="dialog" aria-labelledby="title" hidden>
  <div class="head"><h2 id="title"></h2><button type="button" class="all-read"></button><button type="button" class="gear"></button></div>
  <div role="tablist"></div>
  <div class="scroll"><button type="button" class="pill" hidden></button><ul role="list"></ul><div class="foot"></div></div>
  <form class="prefs" hidden></form>
</div>
<div class="sr" role="status" aria-live="polite"></div>`;

/**
 * placePanel places the popover p under a bell at r (its bounding box):
 * toward the side with room (near the page's left edge it grows rightward,
 * else leftward), or, on a phone, across the width of the screen.
 */
export function placePanel(p, r) {
  const w = window.innerWidth;
  const sheet = w < 480;
  p.classList.toggle('sheet', sheet);
  p.style.top = sheet ? `${Math.round(r.bottom + 6)}px` : '';
  p.classList.toggle('from-left', !sheet && w - r.left >= Math.min(380, w - 16) && r.left < w / 2);
  p.classList.toggle('from-right', !sheet && !p.classList.contains('from-left'));
}

/** keepFocus keeps Tab and Shift+Tab in panel p (cur: the focused element). */
export function keepFocus(e, p, cur) {
  const f = [...p.querySelectorAll('button:not([hidden]), [tabindex="0"]')].filter((x) => !x.closest('[hidden]'));
  if (!f.length) return;
  const first = f[0];
  const last = f[f.length - 1];
  if (e.shiftKey && cur === first) { last.focus(); e.preventDefault(); }
  else if (!e.shiftKey && cur === last) { first.focus(); e.preventDefault(); }
}

/**
 * paintTabs shows the tabs in box: each one's name and count (counts), the
 * selected one (tab). They are made once, so a tab keeps the focus while
 * counts change; a click selects (select(key)).
 */
export function paintTabs(box, { t, counts, tab, select }) {
  if (!box.children.length) {
    box.replaceChildren(...TABS.map((x) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.setAttribute('role', 'tab');
      b.dataset.tab = x.key;
      b.addEventListener('click', () => select(x.key));
      return b;
    }));
  }
  for (const b of box.children) {
    const x = TABS.find((y) => y.key === b.dataset.tab);
    b.setAttribute('aria-selected', String(x.key === tab));
    b.tabIndex = x.key === tab ? 0 : -1;
    const n = counts?.[x.count];
    b.textContent = t[x.key];
    if (typeof n === 'number') {
      const c = document.createElement('span');
      c.className = 'n';
      c.textContent = String(n);
      b.append(c);
    }
  }
}

/**
 * listFoot is what ends the list: why it is empty, or a button for more
 * (loadMore); with failed, what failed and a button to try again (retry).
 */
export function listFoot(t, { empty, more, failed }, retry, loadMore) {
  const note = (text) => {
    const s = document.createElement('div');
    s.className = 'state';
    s.textContent = text;
    return s;
  };
  const button = (text, cls, fn) => {
    const b = document.createElement('button');
    b.type = 'button';
    if (cls) b.className = cls;
    b.textContent = text;
    b.addEventListener('click', fn);
    return b;
  };
  if (failed) {
    const s = note(t.error);
    s.append(document.createElement('br'), button(t.retry, '', retry));
    return [s];
  }
  if (empty) return [note(t.empty)];
  return more ? [button(t.loadMore, 'more', loadMore)] : [];
}
