// A person: online or not, inbox counts, devices with consent, and the
// latest deliveries with why each did or did not go out; a dead one is
// re-driven from here.
import { t, api, el, table, when, every, say, confirmed, stateCell, notificationLink } from './ui.js';

/** errorOf is a record's last error and the attempt it came from. */
export const errorOf = (r) => (r.lastErrorCode ? `${r.lastErrorCode}${r.lastErrorAttempt ? ` (#${r.lastErrorAttempt})` : ''}` : '');

/** redriveButton re-drives one dead delivery after a confirmation, then calls done. */
export function redriveButton(r, done) {
  return el('button', {
    type: 'button',
    'aria-label': `${t('redrive')} ${r.channel} ${r.notificationId}`,
    onclick: async () => {
      if (!(await confirmed(t('redriveOne', r.channel, r.notificationId, r.userId)))) return;
      try {
        const res = await api('POST', '/console/api/deliveries/redrive',
          { userId: r.userId, channel: r.channel, notificationIds: [r.notificationId] });
        say(t('redriven', res.requeued));
        done();
      } catch (e) {
        say(t('failed', e.message));
      }
    },
  }, t('redrive'));
}

export function personPage(main, id) {
  const body = el('div');
  main.append(el('h1', {}, t('user', id)), body);
  let last = '';
  const load = async () => {
    const p = await api('GET', `/console/api/users/${encodeURIComponent(id)}`);
    const now = JSON.stringify(p);
    if (now === last) return; // unchanged: the focus stays where it is
    last = now;
    const c = p.counts;
    body.replaceChildren(
      el('p', { class: p.online ? 'online' : 'offline' }, p.online ? t('online', p.streams) : t('offline')),
      el('ul', { class: 'figures', 'aria-label': t('user', id) },
        [[t('unread'), c.unread], [t('unseen'), c.unseen], [t('visible'), c.visible], [t('archived'), c.archived], [t('topics'), p.topics]]
          .map(([l, v]) => el('li', {}, el('span', { class: 'label' }, l), el('span', { class: 'value' }, String(v))))),
      el('h2', {}, t('devices')),
      p.devices.length === 0 ? el('p', { class: 'muted' }, t('noDevices'))
        : table(t('devices'), [t('platform'), t('label'), t('consent'), t('addedAt'), t('lastSentAt')],
          p.devices.map((d) => [d.platform, d.label, d.enabled ? t('on') : t('off'), when(d.addedAt), when(d.lastSentAt)])),
      el('h2', {}, t('recent')),
      p.recentDeliveries.length === 0 ? el('p', { class: 'muted' }, t('noDeliveries'))
        : table(t('recent'), [t('notification'), t('channel'), t('state'), t('reason'), t('attempts'), t('lastError'), t('updatedAt'), t('action')],
          p.recentDeliveries.map((r) => [notificationLink(r.notificationId), r.channel, stateCell(r.state), r.reason ?? '',
            String(r.attempts), errorOf(r), when(r.updatedAt), r.state === 'dead' ? redriveButton(r, load) : '']), [4]));
  };
  every(load);
}
