// The operator's console's words: Korean says everything English says,
// with the same blanks ({0}, {1}…) to fill.
//   node --test web/test/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { texts } from '../console/texts.js';

const blanks = (s) => [...s.matchAll(/\{\d\}/g)].map((m) => m[0]).sort().join();

test('every text in both languages, with the same blanks', () => {
  assert.deepEqual(Object.keys(texts.ko).sort(), Object.keys(texts.en).sort());
  for (const [k, en] of Object.entries(texts.en)) assert.equal(blanks(texts.ko[k]), blanks(en), k);
});

test('every key the pages ask for exists', async () => {
  const used = new Set();
  for (const f of ['console.js', 'ui.js', 'overview.js', 'person.js', 'notification.js', 'dead.js', 'topic.js', 'index.html']) {
    const src = await readFile(new URL(`../console/${f}`, import.meta.url), 'utf8');
    for (const m of src.matchAll(/\bt\('([A-Za-z]+)'|data-t(?:-label|-placeholder)?="([A-Za-z]+)"/g)) used.add(m[1] ?? m[2]);
  }
  assert.ok(used.size > 40, `only ${used.size} keys found`);
  for (const k of used) assert.ok(k in texts.en, `${k} has no text`);
});
