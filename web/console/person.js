// A person: online or not, inbox counts, devices with consent, and the
// latest deliveries with why each did or did not go out; a dead one is
// re-driven from here.
import { t, api, el, table, when, every, changes, stateCell, notificationLink, errorOf, redriveButton } from './ui.js';

export function personPage(main, id) {
  const body = el('div');
  main.append(el('h1', {}, t('user', id)), body);
  const changed = changes();
  const load = async () => {
    const p = await api('GET', `/console/api/users/${encodeURIComponent(id)}`);
    if (!changed(p)) return;
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
