// The headless Chromium every driver of web/e2e starts: Debian's chromium,
// nothing downloaded, no background traffic. For an https:// URL (the tests'
// own self-signed certificate) it ignores certificate errors.
import { chromium } from 'playwright-core';

export function launch(url = '') {
  const args = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'];
  if (url.startsWith('https:')) args.push('--ignore-certificate-errors');
  return chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args });
}
