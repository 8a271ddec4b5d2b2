// The SDK installs as a package (npm install <path-or-git-url>): its
// package.json names files that exist, and the entry point exports the SDK.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, access } from 'node:fs/promises';

const root = new URL('../', import.meta.url);

test('package.json exports the SDK and its types', async () => {
  const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8'));
  assert.equal(pkg.type, 'module');
  const entry = pkg.exports['.'];
  for (const f of [entry.import, entry.types, pkg.types, ...pkg.files]) await access(new URL(f, root));
  const sdk = await import(new URL(entry.import, root));
  for (const name of ['RoomHub', 'PageStream', 'SharedPageStream', 'RoomStream', 'NotificationStream', 'HubError', 'Status', 'WebPush', 'Devices']) {
    assert.ok(sdk[name], `exports ${name}`);
  }
  const dts = await readFile(new URL(entry.types, root), 'utf8');
  for (const name of ['RoomHub', 'SharedPageStream', 'Counts', 'InboxFilter', 'Settings', 'QuietHours', 'WebPush', 'PushState', 'Devices', 'Device']) {
    assert.match(dts, new RegExp(`(class|interface|type) ${name}\\b`), `types declare ${name}`);
  }
});

test('package.json exports the inbox element and its types', async () => {
  const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8'));
  const entry = pkg.exports['./inbox'];
  for (const f of [entry.import, entry.types]) await access(new URL(f, root));
  assert.ok(pkg.files.includes(entry.import.replace('./', '')), 'the element is in the package');
  const dts = await readFile(new URL(entry.types, root), 'utf8');
  assert.match(dts, /'roomhub-inbox': RoomhubInbox/, 'HTMLElementTagNameMap names the element');
});

test('package.json exports the React component, React a peer dependency', async () => {
  const pkg = JSON.parse(await readFile(new URL('package.json', root), 'utf8'));
  const entry = pkg.exports['./react'];
  for (const f of [entry.import, entry.types]) await access(new URL(f, root));
  assert.ok(pkg.files.includes(entry.import.replace('./', '')), 'the component is in the package');
  assert.ok(pkg.peerDependencies.react && pkg.peerDependenciesMeta.react.optional, 'React is the app\'s, optional');
  assert.ok(!pkg.dependencies || !pkg.dependencies.react, 'React is not bundled');
  const dts = await readFile(new URL(entry.types, root), 'utf8');
  assert.match(dts, /export declare function RoomhubInbox\(props: RoomhubInboxProps\)/);
});
