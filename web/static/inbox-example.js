// The example page's one script (the demo CSP allows no inline script):
// a dev token for ?user= (dev mode only; an app returns its own token).
const user = new URLSearchParams(location.search).get('user') || '7';
const inbox = document.getElementById('inbox');
inbox.tokenProvider = async () => {
  const r = await fetch(`/dev/token?userId=${encodeURIComponent(user)}`);
  return (await r.json()).result.token;
};
const locale = new URLSearchParams(location.search).get('locale');
if (locale) inbox.setAttribute('locale', locale);
