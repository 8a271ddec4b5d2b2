// Dead letters: dead deliveries (of one channel or all), paged, each
// re-driven alone or all at once after a confirmation; dead ingest entries.
import { t, api, el, table, when, say, confirmed, userLink, notificationLink, errorOf, redriveButton } from './ui.js';

const pageSize = 50;

/** paged lists pages of a route into box: rows of each page, More for the next. */
function paged(box, caption, head, load, row, none) {
  let after = '';
  const rows = [];
  const more = el('button', { type: 'button' }, t('more'));
  const draw = () => box.replaceChildren(rows.length === 0 ? el('p', { class: 'muted' }, none) : table(caption, head, rows),
    after ? el('div', { class: 'actions' }, more) : null);
  const next = async () => {
    try {
      const page = await load(after);
      rows.push(...page.items.map(row));
      after = page.next ?? '';
      draw();
    } catch (e) {
      say(t('failed', e.message));
    }
  };
  more.addEventListener('click', next);
  return next();
}

export function deadPage(main) {
  const q = new URLSearchParams(location.search);
  const channel = q.get('channel') ?? '';
  const deliveries = el('div');
  const ingest = el('div');
  const filter = el('form', { class: 'actions', method: 'get', action: '/console/dead' },
    el('label', { for: 'channel' }, t('channelFilter')),
    el('input', { id: 'channel', name: 'channel', value: channel, autocomplete: 'off' }),
    el('button', { type: 'submit' }, t('show')));
  const refresh = () => {
    paged(deliveries, t('deadDeliveries'), [t('userCol'), t('notification'), t('channel'), t('attempts'), t('lastError'), t('updatedAt'), t('action')],
      async (after) => {
        const p = await api('GET', `/console/api/deliveries/dead?limit=${pageSize}&channel=${encodeURIComponent(channel)}&after=${encodeURIComponent(after)}`);
        return { items: p.deliveries, next: p.nextAfter };
      },
      (r) => [userLink(r.userId), notificationLink(r.notificationId), r.channel, String(r.attempts), errorOf(r), when(r.updatedAt), redriveButton(r, refresh)],
      t('noDead'));
    paged(ingest, t('ingestTitle'), [t('partition'), t('entry'), t('code'), t('message'), t('at'), t('data')],
      async (after) => {
        const p = await api('GET', `/console/api/ingest/dead?limit=${pageSize}&after=${encodeURIComponent(after)}`);
        return { items: p.entries, next: p.nextAfter };
      },
      (e) => [String(e.partition), e.entryId, e.code, e.message, when(e.at), el('code', {}, e.event)],
      t('noIngest'));
  };
  const all = el('button', {
    type: 'button',
    class: 'danger',
    onclick: async () => {
      if (!(await confirmed(channel ? t('redriveChannelQ', channel) : t('redriveAllQ')))) return;
      try {
        const res = await api('POST', '/console/api/deliveries/redrive', channel ? { channel } : { all: true });
        say(t('redriven', res.requeued));
        refresh();
      } catch (e) {
        say(t('failed', e.message));
      }
    },
  }, channel ? t('redriveChannel', channel) : t('redriveAll'));
  main.append(el('h1', {}, t('deadTitle')), filter, el('div', { class: 'actions' }, all), deliveries,
    el('h2', {}, t('ingestTitle')), ingest);
  refresh();
}
