// The element's look: one constructed style sheet (a page's CSP that
// refuses inline styles does not refuse it) and its icons. Styling hooks
// for a page: ::part(bell), ::part(badge), ::part(item), ::part(panel), and
// the --roomhub-* custom properties.

const STYLE = `
:host { --roomhub-accent: #2563eb; --roomhub-bg: #fff; --roomhub-fg: #111827; --roomhub-muted: #4b5563;
  --roomhub-border: #e5e7eb; --roomhub-unread-bg: #eff6ff; --roomhub-badge-bg: #dc2626; --roomhub-badge-fg: #fff;
  --roomhub-radius: 10px; --roomhub-width: 380px; --roomhub-font: system-ui, sans-serif;
  display: inline-block; position: relative; font: 14px/1.4 var(--roomhub-font); color: var(--roomhub-fg); }
@media (prefers-color-scheme: dark) {
  :host { --roomhub-bg: #111827; --roomhub-fg: #f9fafb; --roomhub-muted: #9ca3af; --roomhub-border: #374151;
    --roomhub-unread-bg: #1e293b; --roomhub-accent: #60a5fa; }
}
:host([mode="inline"]) { display: block; }
button { font: inherit; color: inherit; background: none; border: 0; cursor: pointer; border-radius: 6px; }
button:focus-visible, [tabindex]:focus-visible { outline: 2px solid var(--roomhub-accent); outline-offset: 2px; }
.bell { position: relative; padding: 6px; line-height: 0; }
.bell svg { width: 24px; height: 24px; fill: currentColor; }
.badge { position: absolute; inset-block-start: 0; inset-inline-end: 0; min-width: 18px; height: 18px; padding: 0 5px;
  box-sizing: border-box; border-radius: 9px; background: var(--roomhub-badge-bg); color: var(--roomhub-badge-fg);
  font-size: 11px; font-weight: 600; line-height: 18px; text-align: center; }
.badge[hidden] { display: none; }
.panel { position: absolute; inset-block-start: calc(100% + 6px); inset-inline-end: 0; z-index: 1000;
  width: min(var(--roomhub-width), calc(100vw - 16px)); max-height: min(560px, calc(100vh - 80px));
  display: flex; flex-direction: column; background: var(--roomhub-bg); border: 1px solid var(--roomhub-border);
  border-radius: var(--roomhub-radius); box-shadow: 0 10px 30px rgb(0 0 0 / .18); overflow: hidden;
  animation: appear .12s ease-out; }
.panel[hidden] { display: none; }
.panel.from-left { inset-inline-end: auto; left: 0; right: auto; }
.panel.from-right { inset-inline-start: auto; right: 0; left: auto; }
.panel.sheet { position: fixed; left: 8px; right: 8px; width: auto; max-height: calc(100vh - 80px); }
:host([mode="inline"]) .panel { position: static; width: auto; max-height: none; box-shadow: none; animation: none; }
@keyframes appear { from { opacity: 0; transform: translateY(-4px); } }
@media (prefers-reduced-motion: reduce) { .panel { animation: none; } * { transition: none !important; } }
.head { display: flex; align-items: center; gap: 8px; padding: 10px 12px; border-block-end: 1px solid var(--roomhub-border); }
.head h2 { flex: 1; margin: 0; font-size: 15px; }
.head button { padding: 4px 8px; color: var(--roomhub-accent); font-size: 13px; }
[role="tablist"] { display: flex; gap: 4px; padding: 6px 8px; border-block-end: 1px solid var(--roomhub-border); }
[role="tab"] { padding: 4px 10px; color: var(--roomhub-muted); }
[role="tab"][aria-selected="true"] { color: var(--roomhub-fg); background: var(--roomhub-unread-bg); font-weight: 600; }
[role="tab"] .n { margin-inline-start: 4px; font-variant-numeric: tabular-nums; }
.scroll { position: relative; overflow-y: auto; flex: 1; }
ul { list-style: none; margin: 0; padding: 0; }
li.item { display: flex; gap: 10px; padding: 10px 12px; border-block-end: 1px solid var(--roomhub-border);
  border-inline-start: 3px solid transparent; }
li.item.unread { background: var(--roomhub-unread-bg); }
li.item[data-severity="high"] { border-inline-start-color: #f59e0b; }
li.item[data-severity="critical"] { border-inline-start-color: #dc2626; }
li.item[data-severity="low"] { opacity: .85; }
.body { flex: 1; min-width: 0; }
.open { display: block; width: 100%; text-align: start; padding: 0; }
.item-title { font-weight: 600; overflow-wrap: anywhere; }
.item-text { color: var(--roomhub-fg); overflow-wrap: anywhere; }
.meta { color: var(--roomhub-muted); font-size: 12px; margin-block-start: 2px; }
.tags { display: flex; flex-wrap: wrap; gap: 4px; margin-block-start: 4px; }
.tag { padding: 0 6px; border: 1px solid var(--roomhub-border); border-radius: 999px; font-size: 11px; color: var(--roomhub-muted); }
.acts { display: flex; align-items: flex-start; gap: 2px; }
.acts button { padding: 3px; line-height: 0; color: var(--roomhub-muted); }
.acts svg { width: 16px; height: 16px; fill: currentColor; }
.group { padding: 0; margin-block-start: 2px; color: var(--roomhub-accent); font-size: 12px; }
.snooze { display: flex; flex-wrap: wrap; align-items: center; gap: 6px; margin-block-start: 6px; }
.snooze button, .prefs button { padding: 2px 8px; border: 1px solid var(--roomhub-border); }
.snooze input, .prefs input, .prefs select { font: inherit; color: inherit; background: var(--roomhub-bg);
  border: 1px solid var(--roomhub-border); border-radius: 6px; padding: 2px 4px; }
.prefs { padding: 10px 12px; overflow-y: auto; }
.prefs table { border-collapse: collapse; width: 100%; margin-block-end: 12px; }
.prefs th, .prefs td { padding: 4px; text-align: start; border-block-end: 1px solid var(--roomhub-border); }
.prefs fieldset { border: 1px solid var(--roomhub-border); border-radius: 6px; margin: 0 0 12px; display: grid; gap: 6px; }
.prefs .row { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; }
.state { padding: 32px 16px; text-align: center; color: var(--roomhub-muted); }
.state button { margin-block-start: 8px; color: var(--roomhub-accent); padding: 4px 8px; }
li.spacer { padding: 0; border: 0; }
.more { display: block; margin: 8px auto; padding: 4px 10px; color: var(--roomhub-accent); }
.pill { position: sticky; inset-block-start: 6px; display: block; margin: 6px auto 0; padding: 4px 12px; border-radius: 999px;
  background: var(--roomhub-accent); color: #fff; font-size: 12px; z-index: 1; }
.pill[hidden] { display: none; }
.sr { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
`;

let shared = null;

/** sheet is the element's style sheet, made once for every instance. */
export function sheet() {
  if (!shared) {
    shared = new CSSStyleSheet();
    shared.replaceSync(STYLE);
  }
  return shared;
}

/** ICONS are the bell's and the actions' pictures. */
export const ICONS = {
  bell: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 22a2.5 2.5 0 0 0 2.45-2h-4.9A2.5 2.5 0 0 0 12 22Zm7-6V11a7 7 0 0 0-5.5-6.84V3a1.5 1.5 0 0 0-3 0v1.16A7 7 0 0 0 5 11v5l-2 2v1h18v-1Z"/></svg>',
  read: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M9 16.2 4.8 12l-1.4 1.4L9 19 21 7l-1.4-1.4Z"/></svg>',
  archive: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M20.5 5.2 19.1 3.5A1.5 1.5 0 0 0 18 3H6a1.5 1.5 0 0 0-1.1.5L3.5 5.2A2 2 0 0 0 3 6.5V19a2 2 0 0 0 2 2h14a2 2 0 0 0 2-2V6.5a2 2 0 0 0-.5-1.3ZM12 17.5 6.5 12H10v-2h4v2h3.5ZM5.1 5l.8-1h12l.9 1Z"/></svg>',
  snooze: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M12 4a9 9 0 1 0 9 9 9 9 0 0 0-9-9Zm0 16a7 7 0 1 1 7-7 7 7 0 0 1-7 7Zm.5-11H11v5l4.2 2.5.8-1.2-3.5-2.1Z"/></svg>',
  delete: '<svg viewBox="0 0 24 24" aria-hidden="true"><path d="M6 19a2 2 0 0 0 2 2h8a2 2 0 0 0 2-2V7H6Zm13-15h-3.5l-1-1h-5l-1 1H5v2h14Z"/></svg>',
};
