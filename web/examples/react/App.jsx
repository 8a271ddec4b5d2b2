// A React app's bell: <RoomhubInbox> from the package (React is the app's
// own). Clicks are routed by the app; the item is still read.
import { useState } from 'react';
import { createRoot } from 'react-dom/client';
import { RoomhubInbox } from 'roomhub-client/react';

// Your backend mints the signed-in user's access token.
const getToken = async () => (await fetch('/token')).text();

function App() {
  const [route, setRoute] = useState('/');
  return (
    <main>
      <header>
        <h1>React app</h1>
        <RoomhubInbox
          baseUrl={process.env.HUB_URL /* the hub's origin, set at build time */}
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

createRoot(document.getElementById('root')).render(<App />);
