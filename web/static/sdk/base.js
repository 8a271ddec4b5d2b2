export const SYSTEM = ['system.gap', 'system.lagged', 'system.evicted'];

export const NOTIFY = ['notification.unread', 'notification.counts', 'notification.created', 'notification.updated',
  'notification.read', 'notification.deleted'];

export const DEFAULT_TYPES = ['retrospect.submitted', 'retrospect.created', 'comment.created', 'like.toggled',
  'member.joined', 'presence.update'];

/** Status of a stream, for a UI. */
export const Status = Object.freeze({
  CONNECTING: 'connecting', OPEN: 'open', RECONNECTING: 'reconnecting', CLOSED: 'closed',
});

/** An answer of the hub that was not a success: status, code and message of its envelope. */
export class HubError extends Error {
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

// newer reports whether stream id a comes after b ('' is before all).
export function newer(a, b) {
  if (!b) return !!a;
  const [am, as] = a.split('-').map(Number);
  const [bm, bs] = b.split('-').map(Number);
  return am > bm || (am === bm && as > bs);
}

export function visible() { return typeof document === 'undefined' || document.visibilityState !== 'hidden'; }

// tokenSubject reads a JWT's sub without checking it: only to name the
// channel that one user's tabs share.
export function tokenSubject(token) {
  try {
    const b64 = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    return String(JSON.parse(atob(b64)).sub ?? '');
  } catch { return ''; }
}
