// The element's texts: its messages in each language, an item's title and
// body, who did it and when, the badge, and where a click may go.

/** Built-in messages; `messages` (a property) overrides any of them. */
export const MESSAGES = {
  en: {
    bell: 'Notifications', bellCount: (n) => `Notifications, ${n} unread`, title: 'Notifications',
    all: 'All', unread: 'Unread', archived: 'Archived', markAllRead: 'Mark all as read',
    markRead: 'Mark as read', archive: 'Archive', unarchive: 'Move to inbox', snooze: 'Snooze',
    inHour: 'In an hour', tomorrow: 'Tomorrow morning', nextWeek: 'Next week', until: 'Until', snoozeAt: 'Snooze until then',
    prefs: 'Preferences', back: 'Back', inApp: 'In app', type: 'Type', quiet: 'Quiet hours', from: 'From', to: 'To',
    zone: 'Time zone', save: 'Save', saved: 'Saved',
    channel: (c) => ({ webpush: 'Browser', fcm: 'Android', apns: 'iPhone/iPad', sms: 'SMS' })[c] || c[0].toUpperCase() + c.slice(1),
    thisBrowser: 'This browser', pushOn: 'Turn on notifications here', pushOff: 'Turn off notifications here',
    pushDenied: 'Notifications are blocked in this browser\'s settings',
    pushWorking: 'Waiting for the browser…', pushFailed: 'The browser did not answer: try again',
    devices: 'Your devices', platform: (p) => ({ fcm: 'Android', apns: 'iPhone/iPad', webpush: 'Browser' })[p] || p,
    topics: 'What you follow', leave: 'Leave', leaveTopic: (k) => `Leave ${k}`, left: (k) => `You no longer follow ${k}`,
    delete: 'Delete', empty: 'Nothing here yet', error: 'Could not load notifications', retry: 'Try again',
    newItems: (n) => `${n} new`, loadMore: 'Load more', close: 'Close', actions: 'Actions',
    others: (name, n) => `${name} and ${n} other${n === 1 ? '' : 's'}`, user: (id) => `User ${id}`,
    and: (a, b) => `${a} and ${b}`, times: (who, n) => `${who} (${n})`, on: 'On',
    showGroup: (n) => `Show all ${n}`, hideGroup: 'Show less', groupOf: (n, who) => `${n} events from ${who}`,
    newArrived: (n) => `${n} new notification${n === 1 ? '' : 's'}`,
  },
  ko: {
    bell: '알림', bellCount: (n) => `알림, 읽지 않음 ${n}개`, title: '알림',
    all: '전체', unread: '읽지 않음', archived: '보관함', markAllRead: '모두 읽음으로 표시',
    markRead: '읽음으로 표시', archive: '보관', unarchive: '받은 알림으로 이동', snooze: '다시 알림',
    inHour: '1시간 뒤', tomorrow: '내일 아침', nextWeek: '다음 주', until: '날짜', snoozeAt: '이때 다시 알림',
    prefs: '알림 설정', back: '뒤로', inApp: '앱 안', type: '종류', quiet: '방해 금지 시간', from: '시작', to: '끝',
    zone: '시간대', save: '저장', saved: '저장했습니다', channel: (c) => ({ email: '이메일', push: '푸시', sms: '문자', webpush: '브라우저', fcm: 'Android', apns: 'iPhone/iPad' })[c] || c,
    thisBrowser: '이 브라우저', pushOn: '이 브라우저에서 알림 받기', pushOff: '이 브라우저에서 알림 끄기',
    pushDenied: '브라우저 설정에서 알림이 차단되어 있습니다',
    pushWorking: '브라우저의 응답을 기다리는 중…', pushFailed: '브라우저가 응답하지 않았습니다. 다시 시도해 주세요',
    devices: '내 기기', platform: (p) => ({ fcm: 'Android', apns: 'iPhone/iPad', webpush: '브라우저' })[p] || p,
    topics: '받아 보는 소식', leave: '그만 받기', leaveTopic: (k) => `${k} 그만 받기`, left: (k) => `이제 ${k} 소식을 받지 않습니다`,
    delete: '삭제', empty: '아직 알림이 없습니다', error: '알림을 불러오지 못했습니다', retry: '다시 시도',
    newItems: (n) => `새 알림 ${n}개`, loadMore: '더 보기', close: '닫기', actions: '작업',
    others: (name, n) => `${name} 외 ${n}명`, user: (id) => `사용자 ${id}`,
    and: (a, b) => `${a}, ${b}`, times: (who, n) => `${who} (${n})`, on: '사용',
    showGroup: (n) => `${n}개 모두 보기`, hideGroup: '접기', groupOf: (n, who) => `${who}의 이벤트 ${n}개`,
    newArrived: (n) => `새 알림 ${n}개`,
  },
};

/** itemText is the default title and body of an item, from its event's data. */
export function itemText(n) {
  const d = (n && n.data) || {};
  const pick = (...ks) => ks.map((k) => d[k]).find((v) => typeof v === 'string' && v.trim() !== '');
  const title = pick('title', 'subject', 'heading') || humanType(n.eventType);
  const body = pick('text', 'body', 'content', 'message', 'description') || '';
  return { title, body };
}

/** humanType is an event type as words: "comment.created" is "Comment created". */
export function humanType(t) {
  const s = String(t || '').replace(/[._-]+/g, ' ').trim();
  return s ? s[0].toUpperCase() + s.slice(1) : '';
}

/**
 * openable is where an item's data.url may take the page at base: an
 * absolute http(s) URL, or a path that stays on base's origin ("/orders/1";
 * never "//evil.example/x" or "/\\evil.example/x", which a browser reads
 * as another host); '' for anything else (javascript:, data:, …).
 */
export function openable(url, base) {
  if (typeof url !== 'string' || url === '') return '';
  let u;
  try { u = new URL(url, base); } catch { return ''; }
  if (url.startsWith('/') || url.startsWith('\\')) return u.origin === new URL(base).origin ? u.href : '';
  return /^https?:$/.test(u.protocol) && /^https?:\/\//i.test(url) ? u.href : '';
}

/** badgeText is the badge's display: the exact count up to 99, then 99+. */
export function badgeText(n) { return n > 99 ? '99+' : String(n); }

/**
 * peopleText names people by their ids: "Ana", "Ana and Ben", "Ana, Ben
 * and 3 others" (a group keeps its 5 latest people: past that, "others"
 * counts those kept).
 */
export function peopleText(t, ids) {
  const names = ids.map((id) => t.user(id));
  if (names.length <= 1) return names[0] || '';
  if (names.length === 2) return t.and(names[0], names[1]);
  return t.others(`${names[0]}, ${names[1]}`, names.length - 2);
}

/**
 * metaText is an item's second line: who (the publisher; a group's
 * people, or its one person and how many times) and how long ago (ago(ts)).
 */
export function metaText(t, n, ago) {
  const g = n.group;
  let who = n.publisherId ? t.user(n.publisherId) : '';
  if (g && g.count > 1 && g.actors && g.actors.length) {
    who = g.actors.length === 1 ? t.times(t.user(g.actors[0]), g.count) : peopleText(t, g.actors);
  }
  return [who, ago(n.activityAt || n.timestamp)].filter(Boolean).join(' · ');
}

/** Ago says how long ago a time was, in a locale ("5 minutes ago", "yesterday"). */
export class Ago {
  #lang = '';
  #rtf = null;

  /** format is ts (an ISO time) relative to now, in lang; '' for no time. */
  format(ts, lang) {
    const ms = Date.parse(ts);
    if (Number.isNaN(ms)) return '';
    if (this.#lang !== lang) { // made once per locale: Intl formatters are slow to make
      this.#rtf = new Intl.RelativeTimeFormat(lang, { numeric: 'auto' });
      this.#lang = lang;
    }
    const rtf = this.#rtf;
    const s = Math.round((ms - Date.now()) / 1000);
    const abs = Math.abs(s);
    if (abs < 60) return rtf.format(s, 'second');
    if (abs < 3600) return rtf.format(Math.round(s / 60), 'minute');
    if (abs < 86400) return rtf.format(Math.round(s / 3600), 'hour');
    return rtf.format(Math.round(s / 86400), 'day');
  }
}
