// The operator's console: one page per link, each reading the hub's
// /console/api/ routes with the session's cookie (a change with the
// page's CSRF token).
import { t, say, el } from './ui.js';
import { overviewPage } from './overview.js';
import { personPage } from './person.js';
import { notificationPage } from './notification.js';
import { deadPage } from './dead.js';
import { topicPage } from './topic.js';

// Find: a user id, a notification id or a topic key, each to its page.
function find(e) {
  e.preventDefault();
  const q = document.getElementById('find-q').value.trim();
  if (/^[1-9]\d{0,18}$/.test(q)) location.assign(`/console/users/${q}`);
  else if (/^\d+:\d+-\d+$/.test(q)) location.assign(`/console/notifications/${encodeURIComponent(q)}`);
  else if (/^[A-Za-z0-9_.:-]{1,128}$/.test(q)) location.assign(`/console/topics/${encodeURIComponent(q)}`);
  else say(t('findBad'));
}

const pages = [
  [/^\/console\/?$/, overviewPage],
  [/^\/console\/users\/([^/]+)$/, personPage],
  [/^\/console\/notifications\/([^/]+)$/, notificationPage],
  [/^\/console\/dead$/, deadPage],
  [/^\/console\/topics\/([^/]+)$/, topicPage],
];

for (const n of document.querySelectorAll('[data-t]')) n.textContent = t(n.dataset.t);
for (const n of document.querySelectorAll('[data-t-label]')) n.setAttribute('aria-label', t(n.dataset.tLabel));
for (const n of document.querySelectorAll('[data-t-placeholder]')) n.placeholder = t(n.dataset.tPlaceholder);
document.getElementById('find').addEventListener('submit', find);
const main = document.getElementById('main');
const here = location.pathname;
for (const a of document.querySelectorAll('header nav a')) if (a.getAttribute('href') === here) a.setAttribute('aria-current', 'page');
const page = pages.find(([re]) => re.test(here));
if (page) page[1](main, decodeURIComponent(here.match(page[0])[1] ?? ''));
else main.append(el('p', {}, t('notFound')));
