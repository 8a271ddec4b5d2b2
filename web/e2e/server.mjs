// One headless Chromium for many drivers of a test process: it prints the
// endpoint they connect to (ROOMHUB_BROWSER_WS, see launch.mjs), then runs
// until its input ends, and closes the browser.
import { chromium } from 'playwright-core';
import { chromiumPath, chromiumArgs } from './launch.mjs';

const server = await chromium.launchServer({ executablePath: chromiumPath(), args: chromiumArgs(true) });
console.log(server.wsEndpoint());
process.stdin.on('data', () => {});
process.stdin.on('end', async () => {
  await server.close();
  process.exit(0);
});
