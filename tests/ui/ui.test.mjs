// Browser tests of the operator page (`telha serve --ui`): a seeded store,
// the real server binary ($TELHA_BIN), /usr/bin/chromium through
// playwright-core. Run: node --test tests/ui/
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import * as H from './helpers.mjs';

const { until, tid, sel } = H;
let browser;
let main; // the shared seeded server (tests 1-4, 7, 8)

before(async () => {
  browser = await H.launch();
  main = await H.seededServer();
});

after(async () => {
  await browser?.close();
  await main?.stop();
  H.cleanTemps();
});

async function overviewCells(page, stats) {
  const cells = {};
  for (const [kind, counts] of [...Object.entries(stats.byKind), ['total', stats.total]]) {
    for (const s of H.STATES) cells[`${kind}-${s}`] = [await tid(page, `count-${kind}-${s}`), String(counts[s])];
    // The ready backlog beside the counts (pending + failed).
    cells[`${kind}-backlog`] = [await tid(page, `backlog-${kind}`), String(counts.pending + counts.failed)];
  }
  return cells;
}

async function matchesStats(page, srv) {
  const stats = await H.grpcStats(srv);
  const cells = await overviewCells(page, stats);
  const rows = await page.locator(`${sel('kinds-table')} tbody tr`).count();
  // Per scope too (the seed has fewer than 20 scopes: every one is shown).
  for (const [sc, c] of Object.entries(stats.byScope)) {
    for (const s of ['pending', 'leased', 'failed', 'completed', 'dead', 'cancelled']) {
      const got = await tid(page, `scope-count-${sc}-${s}`);
      if (got !== String(c[s])) return false;
    }
  }
  const scopeRows = await page.locator(`${sel('scopes-table')} tbody tr`).count();
  const ok = Object.values(cells).every(([got, want]) => got === want) &&
    rows === Object.keys(stats.byKind).length &&
    scopeRows === Object.keys(stats.byScope).length &&
    (await tid(page, 'dead-total')) === String(stats.total.dead);
  return ok ? stats : false;
}

test('the overview shows the counts of stats, and follows them live', { timeout: 60000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  await page.goto(main.ui + '/#/');
  await page.waitForSelector(sel('count-total-dead'));
  const stats = await until(() => matchesStats(page, main), 10000, 'every kind x state cell to match stats');
  assert.deepEqual(Object.keys(stats.byKind).sort(), ['email', 'embed', 'ingest']);
  assert.equal(stats.byKind.ingest.dead, 3);
  // embed has pending jobs due now: an age, not the dash of "none due".
  assert.match(await tid(page, 'oldest-ready-embed'), /^\d+[smhd]$/);
  assert.ok(Object.keys(stats.byScope).length >= 2, 'the seed has jobs in two scopes at least');
  // A count is a link to the filtered list.
  assert.equal(await page.getAttribute(sel('count-ingest-dead'), 'href'), '#/jobs?state=dead&kind=ingest');
  // Live refresh: a job enqueued through gRPC shows up without a reload.
  const before = Number(await tid(page, 'count-email-pending'));
  const q = await H.Queue.connect(main.grpc);
  await q.enqueue('email', { to: 'late@example.com' });
  // A flow-control limit shows on the overview's limits card.
  await q.setLimit('kind:email', { concurrency: 3, rate: 2.5 });
  await until(async () => (await page.locator(sel('limit-row')).count()) === 1, 8000, 'the limit to show');
  const row = await page.locator(sel('limit-row')).innerText();
  assert.ok(row.includes('kind:email') && row.includes('2.5 (3)'), row);
  assert.equal(await q.removeLimit('kind:email'), true);
  await q.close();
  await until(async () => (await page.locator(sel('limit-row')).count()) === 0, 8000, 'the limit to go');
  await until(async () => Number(await tid(page, 'count-email-pending')) === before + 1, 8000, 'the poll to show the new job');
  await until(() => matchesStats(page, main), 8000, 'cells to match stats again');
  assert.deepEqual(seen.errors, []);
  await context.close();
});

test('a dead job: filter, open, read its events, retry it', { timeout: 60000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  const deadBefore = (await H.grpcStats(main)).byKind.ingest.dead;
  await page.goto(main.ui + '/#/jobs');
  await page.waitForSelector(sel('jobs-table'));
  await page.selectOption(sel('filter-state'), 'dead');
  await page.fill(sel('filter-kind'), 'ingest');
  await page.click(sel('filter-apply'));
  await until(() => page.evaluate(() => location.hash === '#/jobs?state=dead&kind=ingest'), 5000, 'the filter in the hash');
  const rows = page.locator(`${sel('jobs-table')} tbody tr[data-id]`);
  await until(async () => (await rows.count()) === deadBefore, 5000, `${deadBefore} dead ingest rows`);
  const id = await rows.first().getAttribute('data-id');
  await rows.first().locator('a.job-link').click();
  await until(async () => (await tid(page, 'job-state')) === 'dead', 5000, 'the job page');
  assert.equal(await page.evaluate(() => location.hash), '#/job/' + id);
  const events = await page.locator(`${sel('job-events')} li`).allTextContents();
  const transitions = await page.locator(`${sel('job-events')} ${sel('event-transition')}`).allTextContents();
  assert.ok(transitions.includes('enqueued') && transitions.includes('leased'), transitions.join());
  assert.ok(transitions.includes('dead') || transitions.includes('failed'), transitions.join());
  assert.ok(events.some((e) => e.includes('parse error')), events.join('\n'));
  assert.match(await tid(page, 'job-error'), /parse error: unexpected EOF/);
  assert.match(await tid(page, 'job-attempts'), /^1 \/ \d+$/);

  await page.click(sel('btn-retry'));
  await page.waitForSelector(sel('confirm-ok'));
  await page.click(sel('confirm-ok'));
  await until(async () => (await tid(page, 'job-state')) === 'pending', 8000, 'the job to be pending');
  assert.match(await tid(page, 'notice'), /Retried/);
  assert.equal(await page.locator(sel('btn-retry')).count(), 0);
  assert.equal((await H.grpcGet(main, id)).state, 'pending');

  await page.click('#nav a[data-route="overview"]');
  await until(async () => (await tid(page, 'count-ingest-dead')) === String(deadBefore - 1), 8000, 'the dead count to drop');
  const stats = await until(() => matchesStats(page, main), 8000, 'cells to match stats');
  assert.equal(stats.byKind.ingest.dead, deadBefore - 1);
  assert.deepEqual(seen.dialogs, []);
  await context.close();
});

test('bulk retry of a kind\'s dead jobs', { timeout: 60000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  const before = (await H.grpcStats(main)).byKind.embed;
  assert.ok(before.dead >= 2);
  await page.goto(main.ui + '/#/');
  await page.waitForSelector(sel('btn-bulk-retry-embed'));
  // Cancelling the confirmation changes nothing.
  await page.click(sel('btn-bulk-retry-embed'));
  await page.click(sel('confirm-cancel'));
  assert.equal(await page.locator(sel('confirm-ok')).count(), 0);
  assert.equal((await H.grpcStats(main)).byKind.embed.dead, before.dead);

  await page.click(sel('btn-bulk-retry-embed'));
  await page.click(sel('confirm-ok'));
  await until(async () => (await tid(page, 'count-embed-dead')) === '0', 8000, 'embed dead to be 0');
  assert.equal(await tid(page, 'count-embed-pending'), String(before.pending + before.dead));
  assert.match(await tid(page, 'notice'), new RegExp(`Retried ${before.dead} embed`));
  const after = (await H.grpcStats(main)).byKind.embed;
  assert.equal(after.dead, 0);
  assert.equal(after.pending, before.pending + before.dead);
  assert.equal(await page.locator(sel('btn-bulk-retry-embed')).count(), 0);
  assert.deepEqual(seen.dialogs, []);
  await context.close();
});

test('job data is rendered as text, never as HTML', { timeout: 60000 }, async () => {
  const { context, page, seen } = await H.openPage(browser);
  const origin = new URL(main.ui).origin;
  await page.goto(main.ui + '/#/job/' + main.ids.inject);
  await page.waitForSelector(sel('job-payload'));
  const payload = await tid(page, 'job-payload');
  assert.ok(payload.includes('<script>window.__pwned=1</script>'), payload);
  assert.ok(payload.includes('\\"><img src=x onerror=window.__pwned=2>'), payload);
  assert.equal(JSON.parse(payload).x, H.INJECT_PAYLOAD.x);
  assert.equal(await tid(page, 'job-error'), H.INJECT_ERROR);
  const events = (await page.locator(`${sel('job-events')} li`).allTextContents()).join('\n');
  assert.ok(events.includes(H.INJECT_ERROR), events);
  // The same text in the jobs list (last error) and after a few polls.
  await page.goto(main.ui + '/#/jobs?state=dead&kind=email');
  await until(async () => (await page.locator(`${sel('jobs-table')} td.err`).allTextContents()).includes(H.INJECT_ERROR), 5000, 'the error in the list');
  await page.goto(main.ui + '/#/job/' + main.ids.inject);
  await page.waitForSelector(sel('job-payload'));
  await page.waitForTimeout(2500);
  assert.equal(await page.evaluate(() => typeof window.__pwned), 'undefined');
  assert.equal(await page.evaluate(() => document.querySelectorAll('main img, main script, #notice *').length), 0);
  assert.equal(await page.evaluate(() => document.scripts.length), 1);
  assert.deepEqual(seen.dialogs, []);
  assert.deepEqual(seen.errors, []);
  assert.deepEqual(seen.console, []); // a CSP violation would be logged here
  const foreign = seen.requests.filter((u) => new URL(u).origin !== origin);
  assert.deepEqual(foreign, []);
  assert.deepEqual(seen.requests.filter((u) => new URL(u).pathname === '/x'), []);
  await context.close();
});

function evilServer(target) {
  const html = `<!doctype html><html><body>
<form id="f" method="POST" action="${target}" enctype="text/plain"><input name='{"a":"' value='"}'></form>
<script>
fetch(${JSON.stringify(target)}, { method: 'POST', mode: 'no-cors', credentials: 'include', body: '{}' })
  .catch(() => {}).finally(() => document.getElementById('f').submit());
</script></body></html>`;
  const s = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end(html);
  });
  return new Promise((r) => s.listen(0, '127.0.0.1', () => r(s)));
}

test('with a token: login form, 401s, wrong and right token, no cross-site POST', { timeout: 90000 }, async () => {
  const token = 'ui-test-token-' + process.pid;
  const srv = await H.seededServer({ token });
  const { context, page, seen } = await H.openPage(browser);
  try {
    await page.goto(srv.ui + '/');
    await page.waitForSelector('#login-token');
    assert.equal(await page.getAttribute('#login-token', 'type'), 'password');
    assert.equal(await page.locator(sel('kinds-table')).count(), 0);
    assert.equal(await page.locator(sel('dead-total')).count(), 0);
    assert.equal(await page.isVisible('#nav'), false);
    for (const p of ['overview', 'stats', 'jobs?state=dead', 'jobs/' + srv.ids.inject, 'leases']) {
      const r = await fetch(`${srv.ui}/api/v1/${p}`);
      assert.equal(r.status, 401, p);
      assert.equal((await r.json()).error.code, 'UNAUTHENTICATED');
    }
    assert.equal(await page.evaluate(() => fetch('/api/v1/stats').then((r) => r.status)), 401);

    await page.fill('#login-token', 'not-the-token');
    await page.click('#login-submit');
    await until(async () => (await tid(page, 'login-error')) !== '', 5000, 'the wrong token refused');
    assert.equal(await page.locator(sel('kinds-table')).count(), 0);

    await page.fill('#login-token', token);
    await page.click('#login-submit');
    await page.waitForSelector(sel('count-total-dead'));
    await until(() => matchesStats(page, srv), 8000, 'the overview after login');
    const cookie = (await context.cookies()).find((c) => c.name === 'telha_session');
    assert.ok(cookie && cookie.httpOnly && cookie.sameSite === 'Strict', JSON.stringify(cookie));

    // Forged POSTs from another origin (same site: 127.0.0.1, other port) and
    // another site (localhost), in the logged-in context.
    const victim = srv.ids.dead.embed[0];
    const target = `${srv.ui}/api/v1/jobs/${victim}/retry`;
    const evil = await evilServer(target);
    try {
      const port = evil.address().port;
      for (const host of ['127.0.0.1', 'localhost']) {
        const p = await context.newPage();
        await p.goto(`http://${host}:${port}/`);
        await until(() => p.url().startsWith(target), 10000, `the forged form from ${host} to be posted`);
        await p.waitForLoadState();
        const body = await p.textContent('body');
        assert.match(body, /FORBIDDEN|UNAUTHENTICATED/, body);
        await p.close();
      }
    } finally {
      evil.close();
    }
    assert.equal((await H.grpcGet(srv, victim)).state, 'dead');

    // A session that ends (here: the cookie dropped) sends the page back to the form.
    await context.clearCookies();
    await page.waitForSelector('#login-token', { timeout: 8000 });
    assert.equal(await page.locator(sel('kinds-table')).count(), 0);
    await page.fill('#login-token', token);
    await page.click('#login-submit');
    await page.waitForSelector(sel('count-total-dead'));
    await page.click('#logout');
    await page.waitForSelector('#login-token');
    assert.equal(await page.evaluate(() => fetch('/api/v1/stats').then((r) => r.status)), 401);
    assert.deepEqual(seen.dialogs, []);
  } finally {
    await context.close();
    await srv.stop();
  }
});

test('read-only: no action in the DOM, POSTs answer 403', { timeout: 60000 }, async () => {
  const srv = await H.seededServer({ readOnly: true });
  const { context, page } = await H.openPage(browser);
  try {
    await page.goto(srv.ui + '/#/');
    await page.waitForSelector(sel('count-total-dead'));
    await until(() => matchesStats(page, srv), 8000, 'the overview');
    assert.ok(await page.isVisible(sel('read-only')));
    const actions = () => page.evaluate(() =>
      document.querySelectorAll('main button, main form, [data-testid^="btn-"], #confirm-ok').length);
    assert.equal(await actions(), 0);
    const dead = srv.ids.dead.ingest[0];
    await page.goto(srv.ui + '/#/job/' + dead);
    await until(async () => (await tid(page, 'job-state')) === 'dead', 5000, 'the job page');
    assert.equal(await actions(), 0);
    await page.goto(srv.ui + '/#/jobs?state=dead');
    await page.waitForSelector(`${sel('jobs-table')} tr[data-id]`);
    assert.equal(await page.locator(sel('btn-retry-matching')).count(), 0);
    await page.goto(srv.ui + '/#/schedules');
    await page.waitForSelector(sel('schedules-table'));
    assert.equal(await page.locator('main button').count(), 0);
    // The tags its jobs get, each a link to the jobs carrying it (issue 42).
    const tagCell = page.locator(sel('sched-tags-yearly-report'));
    assert.equal(await tagCell.textContent(), 'reports');
    assert.equal(await tagCell.getAttribute('title'), 'owner=ops');
    assert.match(await tagCell.locator('a').getAttribute('href'), /#\/jobs\?tag=reports$/);
    const answer = await page.evaluate(async (id) => {
      const info = await (await fetch('/api/v1/info')).json();
      const r = await fetch(`/api/v1/jobs/${id}/retry`, {
        method: 'POST', body: '{}', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': info.csrf },
      });
      return { status: r.status, body: await r.json(), csrf: info.csrf };
    }, dead);
    assert.equal(typeof answer.csrf, 'string');
    assert.equal(answer.status, 403);
    assert.equal(answer.body.error.code, 'READ_ONLY');
    assert.equal((await H.grpcGet(srv, dead)).state, 'dead');
  } finally {
    await context.close();
    await srv.stop();
  }
});

test('pause/resume, cancel, delete, retry matching, paging, schedules, workers, search', { timeout: 90000 }, async () => {
  const srv = await H.seededServer();
  const { context, page, seen } = await H.openPage(browser);
  const q = await H.Queue.connect(srv.grpc);
  const confirm = () => page.click(sel('confirm-ok'));
  try {
    await page.goto(srv.ui + '/#/');
    await page.waitForSelector('#pause-form');
    await page.fill('#pause-value', 'embed');
    await page.click('#pause-submit');
    await confirm();
    await page.waitForSelector(sel('btn-resume-kind:embed'));
    assert.deepEqual((await q.stats()).paused.kinds, ['embed']);
    await page.click(sel('btn-resume-kind:embed'));
    await confirm();
    await until(async () => (await page.locator(sel('paused-list')).count()) === 0, 5000, 'nothing paused');
    assert.deepEqual((await q.stats()).paused.kinds, []);

    const pending = (await q.list({ state: 'pending', kind: 'ingest', limit: 1 })).jobs[0].id;
    await page.fill('#job-search', pending);
    await page.press('#job-search', 'Enter');
    await until(async () => (await tid(page, 'job-state')) === 'pending', 5000, 'the searched job');
    await page.click(sel('btn-cancel'));
    await page.fill('#confirm-input', 'no longer needed');
    await confirm();
    await until(async () => (await tid(page, 'job-state')) === 'cancelled', 5000, 'the job cancelled');
    assert.equal((await q.get(pending)).state, 'cancelled');
    await page.click(sel('btn-delete'));
    await confirm();
    await until(() => page.evaluate(() => location.hash === '#/jobs'), 5000, 'back to the jobs list');
    assert.equal(await q.get(pending), null);
    await page.goto(srv.ui + '/#/job/' + pending);
    await until(async () => /No job/.test(await tid(page, 'view-error')), 5000, 'the missing job');

    // A parent waiting on a child (fan-in) is cancelled from its page too.
    const child = await q.enqueue('page', { n: 1 }, { delayMs: 3600000 });
    const waiting = await q.enqueue('index', { n: 1 }, { after: [child] });
    await page.goto(srv.ui + '/#/job/' + waiting);
    await until(async () => (await tid(page, 'job-state')) === 'waiting', 5000, 'the waiting parent');
    await page.click(sel('btn-cancel'));
    await confirm();
    await until(async () => (await tid(page, 'job-state')) === 'cancelled', 5000, 'the parent cancelled');
    assert.equal((await q.get(child)).state, 'pending');

    // Steering a delayed job (issue 44): Priority, Reschedule, Run now.
    const later = await q.enqueue('steer', { n: 1 }, { delayMs: 3600000 });
    await page.goto(srv.ui + '/#/job/' + later);
    await until(async () => (await tid(page, 'job-state')) === 'pending', 5000, 'the delayed job');
    await page.click(sel('btn-priority'));
    await page.fill('#confirm-input', '7');
    await confirm();
    await until(async () => (await tid(page, 'job-priority')) === '7', 5000, 'priority 7');
    assert.equal((await q.get(later)).priority, 7);
    await page.click(sel('btn-reschedule'));
    await page.fill('#confirm-input', '2030-01-01T00:00:00Z');
    await confirm();
    await until(async () => (await q.get(later)).stateTs === Date.UTC(2030, 0, 1), 5000, 'rescheduled');
    await page.click(sel('btn-promote'));
    await confirm();
    await until(async () => (await q.get(later)).stateTs <= Date.now(), 5000, 'promoted');
    await until(async () => (await page.locator(sel('btn-promote')).count()) === 0, 5000, 'no Run now on a due job');
    assert.deepEqual((await q.get(later)).events.map((e) => e.transition), ['enqueued', 'reprioritized', 'rescheduled', 'promoted']);

    await page.goto(srv.ui + '/#/jobs?state=dead&kind=ingest');
    await page.click(sel('btn-retry-matching'));
    await confirm();
    await until(async () => (await page.locator(`${sel('jobs-table')} tr[data-id]`).count()) === 0, 5000, 'no dead ingest left');
    assert.equal((await q.stats()).byKind.ingest.dead, 0);

    await q.enqueueMany(Array.from({ length: 60 }, (_, i) => ['bulk', { i }]));
    await page.goto(srv.ui + '/#/jobs?kind=bulk');
    const rows = page.locator(`${sel('jobs-table')} tr[data-id]`);
    await until(async () => (await rows.count()) === 50, 5000, 'a first page of 50');
    await page.click(sel('next-page'));
    await until(async () => (await rows.count()) === 10, 5000, 'a second page of 10');
    assert.equal(await page.locator(sel('next-page')).count(), 0);
    await page.click(sel('first-page'));
    await until(async () => (await rows.count()) === 50, 5000, 'the first page again');

    await page.goto(srv.ui + '/#/schedules');
    await page.click(sel('btn-sched-pause-yearly-report'));
    await confirm();
    await page.waitForSelector(sel('btn-sched-resume-yearly-report'));
    assert.equal((await q.scheduleGet('yearly-report')).paused, true);

    await page.goto(srv.ui + '/#/workers');
    const w = page.locator(sel('worker-w-1'));
    await w.waitFor();
    assert.match(await w.textContent(), new RegExp(`${srv.ids.leased}[\\s\\S]*in \\d+m`));
    await w.locator('a').first().click();
    await until(async () => (await tid(page, 'job-state')) === 'leased', 5000, 'the leased job');
    assert.equal(await tid(page, 'job-worker'), 'w-1');
    // Cancelling a leased job only requests it (its worker is told).
    await page.click(sel('btn-cancel'));
    await page.fill('#confirm-input', 'operator stop');
    await confirm();
    await until(async () => /operator stop/.test(await tid(page, 'job-cancel-requested')), 5000, 'the cancel request');
    assert.match(await tid(page, 'notice'), /requested/);
    assert.equal((await q.get(srv.ids.leased)).cancelRequested, 'operator stop');
    assert.deepEqual(seen.dialogs, []);
    assert.deepEqual(seen.errors, []);
  } finally {
    await q.close();
    await context.close();
    await srv.stop();
  }
});

test('a narrow screen (390 px) has no page-level horizontal overflow', { timeout: 60000 }, async () => {
  const { context, page } = await H.openPage(browser, { viewport: { width: 390, height: 844 } });
  const width = () => page.evaluate(() => document.documentElement.scrollWidth);
  await page.goto(main.ui + '/#/');
  await page.waitForSelector(sel('count-total-dead'));
  assert.ok((await width()) <= 391, 'overview ' + (await width()));
  // The table scrolls inside its own box instead.
  assert.ok(await page.evaluate(() => [...document.querySelectorAll('.table-wrap')].some((w) => w.scrollWidth > w.clientWidth)));
  await page.goto(main.ui + '/#/jobs');
  await page.waitForSelector(`${sel('jobs-table')} tr[data-id]`);
  assert.ok((await width()) <= 391, 'jobs ' + (await width()));
  await page.goto(main.ui + '/#/job/' + main.ids.inject);
  await page.waitForSelector(sel('job-payload'));
  assert.ok((await width()) <= 391, 'job ' + (await width()));
  await context.close();
});

test('screenshots of the overview and a job page (docs/)', { timeout: 90000 }, async () => {
  const docs = join(H.REPO, 'docs');
  mkdirSync(docs, { recursive: true });
  const { context, page } = await H.openPage(browser, { viewport: { width: 1280, height: 800 } });
  const q = await H.Queue.connect(main.grpc);
  // Some traffic for the throughput line: a worker "w-2" enqueues and
  // completes thumbnails until a few samples (5 s apiece) have a shape.
  let stop = false;
  const traffic = (async () => {
    const t0 = Date.now();
    for (let t = 0; !stop; t++) {
      const n = [1, 6, 3, 9, 4, 7][Math.floor((Date.now() - t0) / 5000) % 6];
      await q.enqueueMany(Array.from({ length: n }, (_, i) => ['thumbnail', { t, i }]));
      const got = await q.leaseMany('w-2', Math.max(1, n - (t % 3)), { kinds: 'thumbnail' });
      if (got.length) await q.completeMany(got, got.map(() => ({ ok: true })));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const samples = async () => {
    const o = await (await fetch(main.ui + '/api/v1/overview')).json();
    return o.throughput.points.filter((p) => p.completed > 0).length >= 4;
  };
  await until(samples, 25000, 'throughput samples').catch(() => {});
  stop = true;
  await traffic;
  await page.goto(main.ui + '/#/');
  await page.waitForSelector('.spark-svg');
  await page.screenshot({ path: join(docs, 'ui-overview.png') });
  const dead = (await q.list({ state: 'dead', kind: 'ingest', limit: 1 })).jobs[0];
  await q.close();
  await page.goto(main.ui + '/#/job/' + dead.id);
  await until(async () => (await tid(page, 'job-state')) === 'dead', 5000, 'the job page');
  await page.screenshot({ path: join(docs, 'ui-job.png') });
  await context.close();
});
