// The browser modules import one another without a circle: each reads top
// to bottom from what it stands on (house III, 5).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../static');

function modules(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? modules(join(dir, e.name)) : e.name.endsWith('.js') ? [join(dir, e.name)] : []);
}

function imports(file) {
  const src = readFileSync(file, 'utf8');
  return [...src.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)]
    .map((m) => resolve(dirname(file), m[1]));
}

test('no import circle among the browser modules', () => {
  const graph = new Map(modules(root).map((f) => [f, imports(f)]));
  assert.ok(graph.size > 10, `found ${graph.size} modules`);
  const state = new Map(); // 1: on the path, 2: done
  const visit = (f, path) => {
    if (state.get(f) === 2) return;
    assert.notEqual(state.get(f), 1, `import circle: ${[...path, f].map((p) => p.slice(root.length + 1)).join(' → ')}`);
    state.set(f, 1);
    for (const g of graph.get(f) || []) visit(g, [...path, f]);
    state.set(f, 2);
  };
  for (const f of graph.keys()) visit(f, []);
});
