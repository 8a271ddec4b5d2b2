// A topic: how many follow it, and its running fan-outs, each cancelled
// from here after a confirmation.
import { t, api, el, every, changes } from './ui.js';
import { fanoutBlock } from './notification.js';

export function topicPage(main, key) {
  const body = el('div');
  main.append(el('h1', {}, t('topicTitle', key)), body);
  const changed = changes();
  const load = async () => {
    const k = encodeURIComponent(key);
    const [f, r] = await Promise.all([
      api('GET', `/console/api/topics/${k}/followers?limit=1`),
      api('GET', `/console/api/fanouts?topicKey=${k}`),
    ]);
    if (!changed([f.followers, r])) return;
    body.replaceChildren(
      el('ul', { class: 'figures', 'aria-label': t('topicTitle', key) },
        el('li', {}, el('span', { class: 'label' }, t('followers')), el('span', { class: 'value' }, String(f.followers)))),
      el('h2', {}, t('running')),
      r.fanouts.length === 0 ? el('p', { class: 'muted' }, t('noRunning'))
        : el('ul', {}, r.fanouts.map((fo) => el('li', {}, el('a', { href: `/console/notifications/${encodeURIComponent(fo.id)}` }, fo.id), fanoutBlock(fo, load)))));
  };
  every(load);
}
