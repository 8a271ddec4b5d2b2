// The overview: the fleet's figures every 2 s, each instance, the
// deliveries by state, and two small charts of the last minutes.
import { t, api, el, table, when, every, stateCell } from './ui.js';

const points = 150; // 5 minutes of 2 s readings

function chart(name, values) {
  const max = Math.max(1, ...values);
  const latest = values.at(-1) ?? 0;
  const svg = document.createElementNS('http://www.w3.org/2000/svg', 'svg');
  svg.setAttribute('class', 'chart');
  svg.setAttribute('viewBox', `0 0 ${points - 1} 100`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', t('chart', name, Math.round((values.length * 2) / 60) || 1, latest));
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline');
  const start = points - values.length;
  line.setAttribute('points', values.map((v, i) => `${start + i},${(100 - (v / max) * 96 - 2).toFixed(1)}`).join(' '));
  svg.append(line);
  return el('figure', {}, el('figcaption', { class: 'muted' }, name), svg);
}

export function overviewPage(main) {
  const body = el('div');
  main.append(el('h1', {}, t('overview')), body);
  const history = { pps: [], conns: [] };
  every(async () => {
    const o = await api('GET', '/console/api/overview');
    history.pps = [...history.pps, Math.round(o.publishesPerSec * 10) / 10].slice(-points);
    history.conns = [...history.conns, o.connections].slice(-points);
    const figure = (label, value, href) => el('li', {}, el('span', { class: 'label' }, label),
      el('span', { class: 'value' }, href ? el('a', { href }, String(value)) : String(value)));
    body.replaceChildren(
      el('ul', { class: 'figures', 'aria-label': t('overview') },
        figure(t('connections'), o.connections),
        figure(t('publishesPerSec'), Math.round(o.publishesPerSec * 10) / 10),
        figure(t('deadDeliveries'), o.dead.deliveries, '/console/dead'),
        figure(t('deadIngest'), o.dead.ingest, '/console/dead'),
        figure(t('ingestLag'), o.ingestLag),
        figure(t('fanoutsRunning'), o.fanoutsRunning)),
      el('h2', {}, t('lastMinutes')),
      chart(t('publishesPerSec'), history.pps),
      chart(t('connections'), history.conns),
      el('h2', {}, t('instances')),
      table(t('instances'), [t('instance'), t('connections'), t('rooms'), t('publishesPerSec'), t('startedAt')],
        o.instances.map((i) => [i.id, String(i.connections), String(i.rooms), String(Math.round(i.publishesPerSec * 10) / 10), when(i.startedAt)]), [1, 2, 3]),
      el('h2', {}, t('deliveriesByState')),
      table(t('deliveriesByState'), [t('state'), t('count')],
        Object.entries(o.deliveries).sort(([a], [b]) => a.localeCompare(b)).map(([s, n]) => [stateCell(s), String(n)]), [1]));
  });
}
