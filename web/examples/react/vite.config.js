// Vite builds the app with React's JSX. VITE_HUB_URL is the hub's origin
// (default http://localhost:8083, `go run .`), fixed at build time.
//
// /token stands in for your backend while you develop (`npm run dev`,
// `npm run preview`): it asks a dev-mode hub's /dev/token for user
// VITE_USER_ID (default 1). A built app (dist/) has no /token: your backend
// serves it, minting the signed-in user's token with the hub's JWT_SECRET.
import { defineConfig, loadEnv } from 'vite';
import react from '@vitejs/plugin-react';

export default defineConfig(({ mode }) => {
  const env = loadEnv(mode, process.cwd(), 'VITE_');
  const hubUrl = env.VITE_HUB_URL || 'http://localhost:8083';
  const userId = env.VITE_USER_ID || '1';
  return {
    plugins: [react(), devToken(hubUrl, userId)],
    define: { 'import.meta.env.VITE_HUB_URL': JSON.stringify(hubUrl) },
  };
});

function devToken(hubUrl, userId) {
  const serve = async (req, res, next) => {
    if (req.url !== '/token') return next();
    try {
      const r = await fetch(`${hubUrl}/dev/token?userId=${encodeURIComponent(userId)}`);
      const body = await r.json();
      if (!r.ok) throw new Error(`${body.code}: ${body.message}`);
      res.setHeader('Content-Type', 'text/plain; charset=utf-8');
      res.end(body.result.token);
    } catch (err) {
      res.statusCode = 502;
      res.end(`no token from ${hubUrl}/dev/token (is a dev-mode hub running there?): ${err.message}`);
    }
  };
  return {
    name: 'roomhub-dev-token',
    configureServer: (server) => void server.middlewares.use(serve),
    configurePreviewServer: (server) => void server.middlewares.use(serve),
  };
}
