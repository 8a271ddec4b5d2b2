// A React app's bell: <RoomhubInbox> from the package (React is the app's
// own). Clicks are routed by the app; the item is still read.
import { useState } from 'react';
import { RoomhubInbox } from 'roomhub-client/react';

// Your backend mints the signed-in user's access token (vite.config.js
// stands in for it while you develop).
const getToken = async () => (await fetch('/token')).text();

export default function App() {
  const [route, setRoute] = useState('/');
  return (
    <main>
      <header>
        <h1>React app</h1>
        <RoomhubInbox
          baseUrl={import.meta.env.VITE_HUB_URL /* the hub's origin */}
          tokenProvider={getToken}
          onNotificationClick={(e) => {
            e.preventDefault(); // no page load: the app routes it (the item is still read)
            if (e.detail.data?.url) setRoute(e.detail.data.url);
          }}
          onError={(e) => console.warn('roomhub:', e.detail.message)}
        />
      </header>
      <p id="route">{route}</p>
    </main>
  );
}
