// Helpers of the browser tests: seed a store with the Node addon, run
// `telha serve --ui` on it (by pid), drive /usr/bin/chromium with
// playwright-core, poll until a condition holds.

import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
export const { Queue } = require(fileURLToPath(new URL('../../node/', import.meta.url)));
export const { chromium } = require('playwright-core');

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
export const TELHA_BIN = process.env.TELHA_BIN ||
  join(process.env.CARGO_TARGET_DIR || join(homedir(), '.cache/telha-jobs/target'), 'release/telha');
export const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export const INJECT_PAYLOAD = { html: '<script>window.__pwned=1</script>', x: '"><img src=x onerror=window.__pwned=2>' };
export const INJECT_ERROR = '<img src=x onerror=window.__pwned=3>';
export const STATES = ['pending', 'leased', 'failed', 'completed', 'dead', 'cancelled'];

const temps = [];
export function tempDir(prefix = 'telha-ui-') {
  const d = mkdtempSync(join(tmpdir(), prefix));
  temps.push(d);
  return d;
}
export function cleanTemps() {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** Poll `fn` until it returns a truthy value (returned) or `ms` pass (throws with the last value/error). */
export async function until(fn, ms = 10000, what = 'condition') {
  const end = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) return last;
    } catch (e) {
      last = e;
    }
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}; last: ${last instanceof Error ? last.stack : JSON.stringify(last)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function kill(q, kind, n, reason) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const j = await q.leaseNext('seeder', { kinds: kind });
    await q.fail(j, reason + ' #' + (i + 1), { retryable: false });
    ids.push(j.id);
  }
  return ids;
}

/**
 * Seed a store: ingest (4 pending, 2 completed, 3 dead), embed (1 pending,
 * 2 dead, 1 leased by w-1 for an hour), email (1 completed, 1 dead job
 * with an HTML-injection payload and error), one schedule.
 */
export async function seed(dir) {
  const q = await Queue.open(dir, { leaseTtlMs: 3600000, reaperIntervalMs: 0 });
  const scope = '7d444840-9dc1-11d1-b245-5ffdce74fad2';
  const ids = { dead: {} };
  // Dead first (FIFO): each lease takes the oldest pending job of the kind.
  for (let i = 0; i < 3; i++) await q.enqueue('ingest', { doc: `s3://bucket/bad-${i}.pdf` }, { scope });
  ids.dead.ingest = await kill(q, 'ingest', 3, 'parse error: unexpected EOF at byte 1024');
  for (let i = 0; i < 2; i++) await q.enqueue('ingest', { doc: `s3://bucket/ok-${i}.pdf` }, { scope });
  for (let i = 0; i < 2; i++) {
    const j = await q.leaseNext('seeder', { kinds: 'ingest' });
    await q.complete(j, { pages: 12 + i });
  }
  for (let i = 0; i < 4; i++) await q.enqueue('ingest', { doc: `s3://bucket/new-${i}.pdf` }, { scope, idempotencyKey: `doc-${i}` });
  for (let i = 0; i < 2; i++) await q.enqueue('embed', { text: `chunk ${i}`, model: 'small' });
  ids.dead.embed = await kill(q, 'embed', 2, 'model timeout after 30s');
  ids.leased = await q.enqueue('embed', { text: 'long chunk', model: 'large' }, { priority: 10 });
  const held = await q.leaseNext('w-1', { kinds: 'embed' });
  if (held.id !== ids.leased) throw new Error('seed: w-1 leased ' + held.id);
  await q.enqueue('embed', { text: 'later', model: 'small' });
  await q.enqueue('email', { to: 'ops@example.com' });
  const done = await q.leaseNext('seeder', { kinds: 'email' });
  await q.complete(done, { sent: true });
  ids.inject = await q.enqueue('email', INJECT_PAYLOAD);
  const bad = await q.leaseNext('seeder', { kinds: 'email' });
  await q.fail(bad, INJECT_ERROR, { retryable: false });
  ids.dead.email = [bad.id];
  await q.schedulePut({ name: 'yearly-report', spec: '@yearly', kind: 'report', payload: { year: true }, tags: ['reports'], metadata: { owner: 'ops' } });
  await q.close();
  return ids;
}

/** Start `telha serve --ui` on `dir`; resolves with { pid, grpc, ui, stop }. */
export async function serve(dir, extra = []) {
  const args = ['--db', dir, 'serve', '--listen', '127.0.0.1:0', '--ui', '--http-listen', '127.0.0.1:0', ...extra];
  const env = { ...process.env };
  // TELHA_UI_DEV=1: serve server/ui/ from the checkout (no rebuild); =DIR: from DIR.
  const dev = process.env.TELHA_UI_DEV;
  if (dev) env.TELHA_UI_ASSETS = dev === '1' ? join(REPO, 'server/ui') : dev;
  const child = spawn(TELHA_BIN, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b) => { out += b; });
  child.stderr.on('data', (b) => { err += b; });
  const exited = new Promise((r) => child.once('exit', (code, sig) => r({ code, sig })));
  let gone = null;
  exited.then((x) => { gone = x; });
  const found = await until(() => {
    if (gone) throw new Error(`telha serve exited ${JSON.stringify(gone)}:\n${out}\n${err}`);
    const g = out.match(/listening on (http:\/\/\S+)/);
    const u = out.match(/ui on (http:\/\/\S+?)\/?\s/);
    return g && u && { grpc: g[1], ui: u[1] };
  }, 20000, 'telha serve to print its URLs').catch((e) => {
    child.kill('SIGKILL');
    throw gone ? e : new Error(`${e.message}\nstdout: ${out}\nstderr: ${err}`);
  });
  return {
    pid: child.pid,
    ...found,
    log: () => out + err,
    async stop() {
      if (gone) return;
      process.kill(child.pid, 'SIGTERM');
      const t = setTimeout(() => { if (!gone) process.kill(child.pid, 'SIGKILL'); }, 8000);
      await exited;
      clearTimeout(t);
    },
  };
}

/** A fresh store, seeded, served; with a token when `token` is given. */
export async function seededServer({ token, readOnly } = {}) {
  const dir = tempDir();
  const db = join(dir, 'db');
  const ids = await seed(db);
  const extra = [];
  if (token) {
    const f = join(dir, 'token');
    writeFileSync(f, token + '\n', { mode: 0o600 });
    extra.push('--token-file', f);
  }
  if (readOnly) extra.push('--ui-read-only');
  const srv = await serve(db, extra);
  return { ...srv, ids, dir, token };
}

export async function grpcStats(srv) {
  const q = await Queue.connect(srv.grpc, srv.token ? { token: srv.token } : {});
  try {
    return await q.stats();
  } finally {
    await q.close();
  }
}

export async function grpcGet(srv, id) {
  const q = await Queue.connect(srv.grpc, srv.token ? { token: srv.token } : {});
  try {
    return await q.get(id);
  } finally {
    await q.close();
  }
}

export function launch() {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** A new context + page that records dialogs, page errors and every request URL. */
export async function openPage(browser, opts = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, ...opts });
  const page = await context.newPage();
  const seen = { dialogs: [], errors: [], requests: [], console: [] };
  page.on('dialog', (d) => { seen.dialogs.push(d.message()); d.dismiss().catch(() => {}); });
  page.on('pageerror', (e) => seen.errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') seen.console.push(m.text()); });
  context.on('request', (r) => seen.requests.push(r.url()));
  return { context, page, seen };
}

/** The text of the element with this data-testid (null when absent). */
export async function tid(page, id) {
  const l = page.locator(`[data-testid="${id}"]`);
  return (await l.count()) ? (await l.first().textContent()).trim() : null;
}

export const sel = (id) => `[data-testid="${id}"]`;
