// A notification: its room event, its fan-out's progress (cancel while it
// runs), and each recipient's deliveries per channel.
import { t, api, el, table, when, every, changes, say, confirmed, stateCell, userLink, errorOf, redriveButton } from './ui.js';

/** fanoutBlock is a fan-out's progress, with cancel while it runs. */
export function fanoutBlock(f, done) {
  return el('div', {},
    el('p', {}, el('a', { href: `/console/topics/${encodeURIComponent(f.topicKey)}` }, f.topicKey), ' · ', stateCell(f.state), ' · ',
      el('span', { class: 'reached' }, t('reached', f.reached, f.recipients)), ' · ', when(f.startedAt)),
    el('progress', { max: Math.max(f.recipients, 1), value: f.reached, 'aria-label': `${t('fanout')} ${f.id}` }),
    f.state !== 'running' ? null : el('div', { class: 'actions' }, el('button', {
      type: 'button',
      class: 'danger',
      onclick: async () => {
        if (!(await confirmed(t('cancelFanoutQ', f.id)))) return;
        try {
          await api('DELETE', `/console/api/fanouts/${encodeURIComponent(f.id)}`);
          say(t('canceled'));
          done();
        } catch (e) {
          say(t('failed', e.message));
        }
      },
    }, t('cancelFanout'))));
}

export function notificationPage(main, id) {
  const body = el('div');
  main.append(el('h1', {}, t('notificationTitle', id)), body);
  const changed = changes();
  const load = async () => {
    const n = await api('GET', `/console/api/notifications/${encodeURIComponent(id)}/deliveries`);
    if (!changed(n)) return;
    const ev = n.event;
    body.replaceChildren(
      el('h2', {}, t('event')),
      !ev ? el('p', { class: 'muted' }, t('eventGone'))
        : el('dl', {}, el('dt', {}, t('eventType')), el('dd', {}, ev.eventType), el('dt', {}, t('at')), el('dd', {}, when(ev.timestamp)),
          el('dt', {}, t('data')), el('dd', {}, el('pre', {}, JSON.stringify(ev.data, null, 2)))),
      n.fanout ? el('h2', {}, t('fanout')) : null,
      n.fanout ? fanoutBlock(n.fanout, load) : null,
      el('h2', {}, t('deliveries')),
      n.deliveries.length === 0 ? el('p', { class: 'muted' }, t('noDeliveries'))
        : table(t('deliveries'), [t('userCol'), t('channel'), t('state'), t('reason'), t('attempts'), t('lastError'), t('dueAt'), t('updatedAt'), t('action')],
          n.deliveries.map((r) => [userLink(r.userId), r.channel, stateCell(r.state), r.reason ?? '', String(r.attempts), errorOf(r),
            r.dueAt ? when(r.dueAt) : '', when(r.updatedAt), r.state === 'dead' ? redriveButton(r, load) : '']), [4]));
  };
  every(load);
}
