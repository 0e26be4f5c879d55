// Browser test of the scopes on the operator page (issue 49): the overview
// shows the top scopes by pending (the server sends only those) and links
// to the scopes view, which pages through every scope by cursor and
// searches by id prefix. Run: node --test tests/ui/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as H from './helpers.mjs';

const { until, sel } = H;
const SCOPES = 130;
const nth = (i) => `5c09e000-0000-0000-0000-${i.toString(16).padStart(12, '0')}`;
let browser;
let srv;

before(async () => {
  browser = await H.launch();
  const db = join(H.tempDir(), 'db');
  const q = await H.Queue.open(db, { reaperIntervalMs: 0 });
  // Scope i < 25 holds 30 - i pending jobs (the known top), the others 1.
  const items = [];
  for (let i = 0; i < SCOPES; i++) {
    for (let n = 0; n < (i < 25 ? 30 - i : 1); n++) items.push({ kind: 'embed', scope: nth(i) });
  }
  await q.enqueueMany(items);
  await q.close();
  srv = await H.serve(db);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  H.cleanTemps();
});

const rowScopes = (page, table) => page.locator(`${sel(table)} tbody tr[data-scope]`).evaluateAll((rs) => rs.map((r) => r.dataset.scope));

test('the overview shows the top scopes; the scopes view pages through the rest', { timeout: 90000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  await page.goto(srv.ui + '/#/');
  await page.waitForSelector(sel('scopes-table'));
  const top = await until(async () => { const s = await rowScopes(page, 'scopes-table'); return s.length === 20 && s; }, 10000, '20 scope rows');
  assert.deepEqual(top, [...Array(20).keys()].map(nth), 'the most pending first');
  assert.equal(await H.tid(page, `scope-count-${nth(0)}-pending`), '30');
  assert.match(await H.tid(page, 'scopes-more'), /more exist/);

  await page.click(sel('all-scopes'));
  await until(() => page.evaluate(() => location.hash.startsWith('#/scopes')), 5000, 'the scopes view');
  await page.waitForSelector(sel('scope-list'));
  await page.selectOption(sel('scope-order'), 'name');
  await page.click(sel('scope-apply'));
  await until(() => page.evaluate(() => location.hash.includes('order=name')), 5000, 'the name order');
  const all = [];
  for (let p = 0; ; p++) {
    // route() rebuilds the view: its rows appear once this page loaded.
    const rows = await until(async () => { const s = await rowScopes(page, 'scope-list'); return s.length && s; }, 8000, `page ${p + 1}`);
    all.push(...rows);
    if (!(await page.locator(sel('scopes-next')).count())) break;
    const before = rows[0];
    await page.click(sel('scopes-next'));
    await until(async () => (await rowScopes(page, 'scope-list'))[0] !== before, 8000, 'the next page');
  }
  assert.equal(all.length, SCOPES, 'every scope once');
  assert.deepEqual(all, [...Array(SCOPES).keys()].map(nth), 'by id, each once');
  assert.equal(await page.locator(sel('scopes-first')).count(), 1);

  // Search: the scopes whose id starts with a prefix (16 of them).
  await page.fill(sel('scope-search'), nth(0).slice(0, 35));
  await page.click(sel('scope-apply'));
  const found = await until(async () => { const s = await rowScopes(page, 'scope-list'); return s.length === 16 && s; }, 8000, '16 matches');
  assert.deepEqual(found, [...Array(16).keys()].map(nth));
  assert.equal(await page.locator(sel('scopes-next')).count(), 0);
  assert.deepEqual(seen.errors, []);
  await context.close();
});
