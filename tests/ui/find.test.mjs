// Browser test of the search box (issue 42): the header's box asks
// GET /api/v1/find, and the find view shows every kind the text matched
// (an idempotency key and a tag side by side, with a link to the tag's
// jobs list); a text that is only a job id opens that job; the jobs list
// filters by tag. Run: node --test tests/ui/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import * as H from './helpers.mjs';

const { until, sel } = H;
let browser;
let srv;
const ids = {};

before(async () => {
  browser = await H.launch();
  const db = join(H.tempDir(), 'db');
  const q = await H.Queue.open(db, { reaperIntervalMs: 0 });
  ids.keyed = await q.enqueue('mail', { n: 1 }, { idempotencyKey: 'order 4711' });
  ids.tagged = [];
  for (let n = 0; n < 3; n++) ids.tagged.push(await q.enqueue('ship', { n }, { tags: ['order 4711'] }));
  ids.other = await q.enqueue('ship', { n: 9 }, { tags: ['order-9'] });
  await q.close();
  srv = await H.serve(db);
});

after(async () => {
  await browser?.close();
  await srv?.stop();
  H.cleanTemps();
});

const rowIds = (page, table) => page.locator(`${sel(table)} tbody tr[data-id]`).evaluateAll((rs) => rs.map((r) => r.dataset.id));

test('the search box finds a key and a tag side by side, an id opens its job, the jobs list filters by tag', { timeout: 90000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  await page.goto(srv.ui + '/#/');
  await page.waitForSelector('#job-search');
  await page.fill('#job-search', 'order 4711');
  await page.press('#job-search', 'Enter');
  await until(() => page.evaluate(() => location.hash.startsWith('#/find?')), 5000, 'the find view');
  await page.waitForSelector(sel('found-tag-table'));
  assert.match(await H.tid(page, 'find-summary'), /idempotency key, tag/);
  assert.deepEqual(await rowIds(page, 'found-key-table'), [ids.keyed]);
  assert.deepEqual(await rowIds(page, 'found-tag-table'), ids.tagged);
  assert.equal(await page.locator(sel('found-id')).count(), 0);

  // The tag's link: the jobs list filtered by the tag.
  await page.click(sel('found-tag-all'));
  await until(() => page.evaluate(() => location.hash.startsWith('#/jobs?') && location.hash.includes('tag=')), 5000, 'the tag list');
  const listed = await until(async () => { const r = await rowIds(page, 'jobs-table'); return r.length && r; }, 8000, 'tagged rows');
  assert.deepEqual(listed, ids.tagged);
  assert.equal(await page.inputValue(sel('filter-tag')), 'order 4711');
  await page.fill(sel('filter-tag'), 'order-9');
  await page.click(sel('filter-apply'));
  await until(async () => JSON.stringify(await rowIds(page, 'jobs-table')) === JSON.stringify([ids.other]), 8000, 'the other tag');

  // Nothing matches: said so; an id opens its job.
  await page.fill('#job-search', 'order 47');
  await page.press('#job-search', 'Enter');
  await until(async () => /Nothing is/.test(await H.tid(page, 'find-summary')), 8000, 'no match');
  await page.fill('#job-search', ids.tagged[1]);
  await page.press('#job-search', 'Enter');
  await until(() => page.evaluate(() => location.hash.startsWith('#/job/')), 8000, 'the job view');
  await until(async () => (await H.tid(page, 'job-state')) === 'pending', 8000, 'the job');
  // A control character: the API's error, shown in the view.
  await page.goto(srv.ui + '/#/find?text=' + encodeURIComponent('a\u0007b'));
  await until(async () => /control character/.test(await H.tid(page, 'view-error')), 8000, 'the error');
  assert.deepEqual(seen.errors, []);
  await context.close();
});
