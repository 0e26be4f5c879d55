// telha-jobs operator page, part 2 of 3: login, routing and polling, and the
// views (overview, jobs, one job, workers, schedules; the scopes in
// scopes.js, the search box's results in find.js). Vanilla ES module, no build step, nothing fetched but this
// server's /api/v1.

import {
  STATES,
  TERMINAL,
  POLL_MS,
  S,
  h,
  add,
  svg,
  $,
  clear,
  fill,
  canAct,
  jobHref,
  jobsHref,
  btn,
  tableWrap,
  cut,
  rel,
  when,
  scopeText,
  stateBadge,
  notice,
  errText,
  api,
  act,
  hooks,
} from './dom.js';
import { scopesCard, scopesView } from './scopes.js';
import { findView, findHref } from './find.js';

// ---------------------------------------------------------------- login

function showLogin(message) {
  if (S.locked && $('login-form')) return; // already showing: keep what is typed
  S.locked = true;
  S.csrf = null;
  stopPolling();
  S.view = null;
  $('nav').hidden = true;
  const main = clear($('main'));
  const token = h('input', { type: 'password', id: 'login-token', name: 'token', autocomplete: 'current-password', required: true, 'aria-label': 'Token' });
  const err = h('p', { class: 'error', id: 'login-error', testid: 'login-error', role: 'alert' }, message || '');
  const form = h('form', { class: 'card login', id: 'login-form' },
    h('h1', {}, 'Log in'),
    h('p', { class: 'muted' }, 'This server needs its bearer token.'),
    h('label', { for: 'login-token' }, 'Token'), token,
    h('button', { type: 'submit', id: 'login-submit', class: 'primary' }, 'Log in'),
    err);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    err.textContent = '';
    try {
      const r = await api('login', { method: 'POST', body: { token: token.value } });
      S.csrf = r.csrf;
      token.value = '';
      await boot();
    } catch (x) {
      err.textContent = x.status === 401 ? 'Wrong token.' : errText(x);
      token.select();
    }
  });
  main.append(form);
  token.focus();
}

async function boot() {
  let info;
  try {
    info = await api('info');
  } catch (e) {
    fill($('main'), h('p', { class: 'error' }, 'Cannot load the page: ' + errText(e)));
    setTimeout(boot, 3000);
    return;
  }
  S.info = info;
  $('version').textContent = 'telha-jobs ' + (info.version || '');
  if (info.auth_required && !info.authenticated) { showLogin(); return; }
  S.csrf = info.csrf;
  S.locked = false;
  $('nav').hidden = false;
  $('logout').hidden = !info.auth_required;
  fill($('badges'), info.read_only ? h('span', { class: 'badge', testid: 'read-only' }, 'read-only') : '');
  route();
}

// ---------------------------------------------------------------- routing and polling

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const qi = raw.indexOf('?');
  const path = qi < 0 ? raw : raw.slice(0, qi);
  const params = Object.fromEntries(new URLSearchParams(qi < 0 ? '' : raw.slice(qi + 1)));
  const parts = path.split('/');
  if (parts[0] === 'job' && parts[1]) return { name: 'job', params: { id: decodeURIComponent(parts.slice(1).join('/')) } };
  if (parts[0] && parts[0] !== 'job' && VIEWS[parts[0]]) return { name: parts[0], params };
  return { name: 'overview', params: {} };
}

function route() {
  if (S.locked) return;
  const { name, params } = parseHash();
  for (const a of document.querySelectorAll('#nav a[data-route]')) {
    if (a.dataset.route === (name === 'job' ? 'jobs' : name)) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const root = clear($('main'));
  const v = VIEWS[name];
  S.seq++;
  S.view = { name, params, root, last: null, ...v.build(root, params) };
  document.title = (v.title(params) || 'telha-jobs') + ' · telha-jobs';
  refresh(true);
  startPolling();
}

// Load the current view; repaint only when the data changed (or `force`).
async function refresh(force = false) {
  const v = S.view;
  if (!v || S.locked) return;
  const seq = S.seq;
  const ticket = (v.ticket = (v.ticket || 0) + 1);
  S.busy = true;
  try {
    const data = await v.load(v.params);
    // A later load already painted (an action's refresh overtook a poll).
    if (seq !== S.seq || S.view !== v || ticket < (v.painted || 0)) return;
    v.painted = ticket;
    const key = JSON.stringify(data, (k, x) => (k === 'now_ms' ? undefined : x));
    if (force || key !== v.last || v.always) {
      v.last = key;
      v.paint(data, v.params);
    }
  } catch (e) {
    if (seq !== S.seq || S.locked) return;
    if (e.status !== 0) { v.last = null; v.fail ? v.fail(e) : showError(v, e); }
  } finally {
    S.busy = false;
  }
}

function showError(v, e) {
  fill(v.data, h('p', { class: 'error', testid: 'view-error' }, errText(e)));
}

function startPolling() {
  stopPolling();
  S.timer = setInterval(() => {
    if (S.modal || S.busy || S.locked || document.hidden) return;
    refresh(false);
  }, POLL_MS);
}

function stopPolling() {
  if (S.timer) clearInterval(S.timer);
  S.timer = null;
}

// ---------------------------------------------------------------- overview

function sparkline(tp) {
  const points = (tp && tp.points) || [];
  const W = 600, H = 80, P = 3;
  const box = h('div', { class: 'spark', testid: 'throughput' });
  if (points.length < 2) {
    box.append(h('p', { class: 'muted' }, 'Throughput: no samples yet (one every few seconds).'));
    return box;
  }
  const max = Math.max(1e-9, ...points.map((p) => Math.max(p.completed || 0, p.enqueued || 0)));
  const xy = (key) => points.map((p, i) => [P + (i * (W - 2 * P)) / (points.length - 1), H - P - ((p[key] || 0) / max) * (H - 2 * P)]);
  const pts = (a) => a.map(([x, y]) => x.toFixed(1) + ',' + y.toFixed(1)).join(' ');
  const done = xy('completed');
  const area = `${P},${H - P} ${pts(done)} ${W - P},${H - P}`;
  const last = points[points.length - 1];
  const pic = svg('svg', { viewBox: `0 0 ${W} ${H}`, preserveAspectRatio: 'none', class: 'spark-svg', role: 'img', 'aria-label': 'throughput' },
    svg('title', {}, 'completed/s (solid) and enqueued/s (dashed), oldest first'),
    svg('polygon', { points: area, class: 'a-done' }),
    svg('polyline', { points: pts(xy('enqueued')), class: 'l-enq', fill: 'none' }),
    svg('polyline', { points: pts(done), class: 'l-done', fill: 'none' }));
  const f = (x) => (x || 0).toFixed(x >= 10 ? 0 : 1);
  const mins = ((points.length - 1) * (tp.interval_ms || 5000)) / 60000;
  box.append(pic, h('p', { class: 'legend' },
    h('span', { class: 'k-done' }, 'completed ' + f(last.completed) + '/s'),
    h('span', { class: 'k-enq' }, 'enqueued ' + f(last.enqueued) + '/s'),
    h('span', { class: 'muted' }, `peak ${f(max)}/s · last ${mins < 1 ? Math.round(mins * 60) + ' s' : Math.round(mins) + ' min'}`)));
  return box;
}

function countCell(kind, state, n, testKind) {
  const f = { state: state === 'total' ? '' : state, kind: kind || '' };
  const a = h('a', { href: jobsHref(f), testid: `count-${testKind}-${state}`, class: n ? '' : 'zero' }, String(n ?? 0));
  return h('td', { class: 'num' + (state === 'dead' && n ? ' hot' : '') }, a);
}

const overview = {
  title: () => 'Overview',
  build(root) {
    const data = h('div', { id: 'overview' });
    root.append(h('h1', {}, 'Overview'), data);
    let form = null;
    if (canAct()) {
      const sel = h('select', { id: 'pause-type', 'aria-label': 'What to pause' },
        h('option', { value: 'kind' }, 'kind'), h('option', { value: 'scope' }, 'scope'));
      const val = h('input', { type: 'text', id: 'pause-value', placeholder: 'embed or ingest:*', 'aria-label': 'Kind or scope to pause', required: true });
      form = h('form', { class: 'inline', id: 'pause-form' }, h('span', {}, 'Pause '), sel, val, h('button', { type: 'submit', id: 'pause-submit' }, 'Pause'));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        const target = sel.value + ':' + val.value.trim();
        if (!val.value.trim()) return;
        act(`Pause ${target}? Its jobs are not leased until it is resumed.`, 'pause', { target },
          { ok: 'Pause', done: (r) => (r.changed ? 'Paused ' : 'Already paused: ') + target }).then((r) => { if (r) val.value = ''; });
      });
    }
    add(root, [h('section', { class: 'card' }, h('h2', {}, 'Paused'), h('div', { id: 'paused' }), form)]);
    return { data, load: () => api('overview'), paint: paintOverview };
  },
};

// An age in ms as the CLI prints it: 42s, 3m, 2h, 5d.
function ageText(ms) {
  const a = Math.round(ms / 1000);
  if (a < 90) return a + 's';
  if (a < 5400) return Math.round(a / 60) + 'm';
  if (a < 172800) return Math.round(a / 3600) + 'h';
  return Math.round(a / 86400) + 'd';
}

function paintOverview(o) {
  const st = o.stats || {};
  const total = st.total || {};
  const kinds = Object.keys(st.by_kind || {}).sort();
  const paused = (st.paused || {});
  const pk = new Set(paused.kinds || []);
  const cards = h('div', { class: 'cards' },
    h('div', { class: 'stat' + (total.dead ? ' alarm' : '') }, h('a', { href: jobsHref({ state: 'dead' }) },
      h('span', { class: 'big', testid: 'dead-total' }, String(total.dead || 0)), h('span', {}, 'dead'))),
    h('div', { class: 'stat' }, h('a', { href: '#/workers' },
      h('span', { class: 'big', testid: 'leased-in-flight' }, String(o.leased_in_flight ?? total.leased ?? 0)), h('span', {}, 'leased in flight'))),
    h('div', { class: 'stat' }, h('a', { href: jobsHref({ state: 'pending' }) },
      h('span', { class: 'big', testid: 'pending-total' }, String(total.pending || 0)), h('span', {}, 'pending'))),
    h('div', { class: 'stat' }, h('a', { href: '#/schedules' },
      h('span', { class: 'big', testid: 'schedules-count' }, String(o.schedules ?? 0)), h('span', {}, 'schedules'))));
  // Per kind: the ready backlog (pending + failed) and how long its oldest
  // due job has waited (`—`: none is due), what autoscalers read.
  const ready = o.ready || {};
  const readyCells = (key, r) => [h('td', { class: 'num', testid: `backlog-${key}` }, String(r ? r.backlog : 0)),
    h('td', { class: 'num', testid: `oldest-ready-${key}` }, r && r.oldest_ready_ms != null ? ageText(r.oldest_ready_ms) : '—')];
  const ages = Object.values(ready).map((r) => r.oldest_ready_ms).filter((ms) => ms != null);
  const oldestAll = ages.length ? Math.max(...ages) : null;
  const backlogAll = (total.pending || 0) + (total.failed || 0);
  const head = h('tr', {}, h('th', {}, 'kind'), STATES.map((s) => h('th', { class: 'num' }, s)), h('th', { class: 'num' }, 'total'),
    h('th', { class: 'num' }, 'backlog'), h('th', { class: 'num' }, 'oldest ready'),
    canAct() ? h('th', {}, '') : null);
  const sum = (c) => c.total ?? STATES.reduce((a, s) => a + (c[s] || 0), 0);
  const rows = kinds.map((k) => {
    const c = st.by_kind[k];
    return h('tr', {},
      h('th', { scope: 'row', class: 'kind' }, h('a', { href: jobsHref({ kind: k }) }, k), pk.has(k) ? h('span', { class: 'badge' }, 'paused') : null),
      STATES.map((s) => countCell(k, s, c[s], k)), countCell(k, 'total', sum(c), k), readyCells(k, ready[k]),
      canAct() ? h('td', {}, c.dead ? btn(`Retry ${c.dead} dead`, { testid: `btn-bulk-retry-${k}`, class: 'small' },
        () => act(`Retry all ${c.dead} dead jobs of kind ${k}? They go back to pending.`, 'retry', { state: 'dead', kind: k },
          { ok: 'Retry all', done: (r) => `Retried ${r.retried} ${k} job(s)` + (r.errors ? `, ${r.errors} error(s)` : '') })) : null) : null);
  });
  const foot = h('tr', { class: 'total' }, h('th', { scope: 'row' }, 'all kinds'),
    STATES.map((s) => countCell('', s, total[s], 'total')), countCell('', 'total', sum(total), 'total'),
    readyCells('total', { backlog: backlogAll, oldest_ready_ms: oldestAll }), canAct() ? h('td') : null);
  const table = h('table', { class: 'grid', testid: 'kinds-table' }, h('thead', {}, head), h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 11, class: 'muted' }, 'No jobs.'))), h('tfoot', {}, foot));
  fill($('overview') || S.view.data, cards, h('section', { class: 'card' }, h('h2', {}, 'Throughput'), sparkline(o.throughput)),
    h('section', { class: 'card' }, h('h2', {}, 'Jobs by kind and state'), tableWrap(table)),
    scopesCard(st, new Set(paused.scopes || [])), limitsTable(o.limits || []));
  const p = $('paused');
  if (!p) return;
  const items = [...(paused.kinds || []).map((k) => 'kind:' + k), ...(paused.scopes || []).map((s) => 'scope:' + s)];
  fill(p, items.length ? h('ul', { class: 'paused', testid: 'paused-list' }, items.map((t) => h('li', {}, h('code', {}, t), ' ',
    canAct() ? btn('Resume', { class: 'small', testid: 'btn-resume-' + t }, () => act(`Resume ${t}?`, 'resume', { target: t },
      { ok: 'Resume', done: (r) => (r.changed ? 'Resumed ' : 'Was not paused: ') + t })) : null)))
    : h('p', { class: 'muted' }, 'Nothing is paused.'));
}

// Flow-control limits (set with `telha jobs limits set`): each one's
// settings, the leases it counts and how often it held work back.
function limitsTable(limits) {
  const dash = (v) => (v == null ? '—' : String(v));
  const head = h('tr', {}, ['target', 'concurrency', 'rate / s (burst)', 'weight', 'leased', 'held back now', 'throttled (cap / rate)']
    .map((t, i) => h('th', { class: i ? 'num' : '' }, t)));
  const rows = limits.map((l) => h('tr', { testid: 'limit-row' },
    h('th', { scope: 'row' }, h('code', {}, l.target)),
    h('td', { class: 'num' }, l.limit.ordered ? `${dash(l.limit.concurrency)}, ordered` : dash(l.limit.concurrency)),
    h('td', { class: 'num' }, l.limit.rate == null ? '—' : `${l.limit.rate} (${l.limit.burst})`),
    h('td', { class: 'num' }, dash(l.limit.weight)),
    h('td', { class: 'num' }, String(l.leased)),
    h('td', { class: 'num' }, l.held ? h('span', { class: 'badge' }, String(l.held)) : '0'),
    h('td', { class: 'num' }, `${l.throttled.concurrency} / ${l.throttled.rate}`)));
  return h('section', { class: 'card' }, h('h2', {}, 'Limits'),
    rows.length ? tableWrap(h('table', { class: 'grid', testid: 'limits-table' }, h('thead', {}, head), h('tbody', {}, rows)))
      : h('p', { class: 'muted' }, 'No limits. Set one with telha jobs limits set.'));
}

// ---------------------------------------------------------------- jobs browser

const jobs = {
  title: (p) => 'Jobs' + (p.state ? ' · ' + p.state : '') + (p.kind ? ' · ' + p.kind : '') + (p.tag ? ' · tag ' + p.tag : ''),
  build(root, p) {
    const state = h('select', { id: 'filter-state', testid: 'filter-state', 'aria-label': 'State' },
      h('option', { value: '' }, 'any state'), STATES.map((s) => h('option', { value: s, selected: p.state === s }, s)));
    const kind = h('input', { type: 'text', id: 'filter-kind', testid: 'filter-kind', placeholder: 'kind or family:*', 'aria-label': 'Kind', value: p.kind || '' });
    const scope = h('input', { type: 'text', id: 'filter-scope', testid: 'filter-scope', placeholder: 'scope uuid', 'aria-label': 'Scope', value: p.scope || '' });
    const tag = h('input', { type: 'text', id: 'filter-tag', testid: 'filter-tag', placeholder: 'tag', 'aria-label': 'Tag', value: p.tag || '' });
    const form = h('form', { class: 'filters', id: 'filters' },
      h('label', {}, 'State ', state), h('label', {}, 'Kind ', kind), h('label', {}, 'Scope ', scope), h('label', {}, 'Tag ', tag),
      h('button', { type: 'submit', id: 'filter-apply', testid: 'filter-apply', class: 'primary' }, 'Apply'),
      p.schedule ? h('span', { class: 'badge' }, 'schedule ' + p.schedule) : null,
      p.parent ? h('span', { class: 'badge', testid: 'filter-parent' }, 'follow-ups of ' + p.parent) : null);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const want = jobsHref({ state: state.value, kind: kind.value.trim(), scope: scope.value.trim(), tag: tag.value, schedule: p.schedule, parent: p.parent });
      if (location.hash === want) refresh(true); else location.hash = want;
    });
    const tools = h('div', { class: 'toolbar' });
    if (p.after) tools.append(h('a', { class: 'button', href: jobsHref({ ...p, after: '' }), testid: 'first-page' }, 'First page'));
    // Not with a tag: the retry filter has none (it would retry beyond the list).
    if (canAct() && !p.tag && (p.state === 'dead' || p.state === 'failed')) {
      tools.append(btn('Retry all matching', { testid: 'btn-retry-matching', class: 'warn' }, () => {
        const body = { state: p.state };
        if (p.kind) body.kind = p.kind;
        if (p.scope) body.scope = p.scope;
        const what = [p.state, p.kind && 'kind ' + p.kind, p.scope && 'scope ' + p.scope].filter(Boolean).join(', ');
        act(`Retry every job matching ${what}? (not only this page)`, 'retry', body,
          { ok: 'Retry all', done: (r) => `Retried ${r.retried} job(s)` + (r.errors ? `, ${r.errors} error(s)` : '') });
      }));
    }
    const data = h('div', { id: 'jobs' });
    root.append(h('h1', {}, 'Jobs'), form, tools, data);
    return {
      data,
      load: (q) => {
        const u = new URLSearchParams({ limit: '50' });
        for (const k of ['state', 'kind', 'scope', 'tag', 'schedule', 'parent', 'after']) if (q[k]) u.set(k, q[k]);
        return api('jobs?' + u);
      },
      paint: paintJobs,
    };
  },
};

function paintJobs(r, p) {
  const list = r.jobs || [];
  const head = h('tr', {}, ['id', 'kind', 'scope', 'state', 'attempts', 'gen', 'worker', 'since', 'last error'].map((t) => h('th', {}, t)));
  const rows = list.map((j) => h('tr', { 'data-id': j.id },
    h('td', { class: 'mono' }, h('a', { href: jobHref(j.id), class: 'job-link' }, j.id)),
    h('td', {}, h('a', { href: jobsHref({ ...p, kind: j.kind, after: '' }) }, j.kind)),
    h('td', { class: 'mono small', title: j.scope }, scopeText(j.scope)),
    h('td', {}, stateBadge(j.state), j.paused ? h('span', { class: 'badge' }, 'paused') : null),
    h('td', { class: 'num' }, `${j.attempts}/${j.max_attempts}`),
    h('td', { class: 'num' }, String(j.generation)),
    h('td', { class: 'mono' }, j.worker_id || ''),
    h('td', { class: 'nowrap' }, when(j.state_at, j.state_ts_ms)),
    h('td', { class: 'err', title: j.last_error || '' }, cut(j.last_error))));
  const table = h('table', { class: 'grid', testid: 'jobs-table', id: 'jobs-table' }, h('thead', {}, head),
    h('tbody', {}, rows.length ? rows : h('tr', {}, h('td', { colspan: 9, class: 'muted' }, 'No jobs match.'))));
  const foot = h('div', { class: 'toolbar' }, h('span', { class: 'muted' }, `${list.length} job(s) on this page`),
    r.corrupt ? h('span', { class: 'error' }, ` ${r.corrupt} corrupt record(s) skipped`) : null,
    r.next ? h('a', { class: 'button', href: jobsHref({ ...p, after: r.next }), testid: 'next-page', id: 'next-page' }, 'Next page') : null);
  fill(S.view.data, tableWrap(table), foot);
}

// ---------------------------------------------------------------- one job

function blob(b) {
  if (b == null) return '(none)';
  switch (b.encoding) {
    case 'msgpack': return JSON.stringify(b.value, null, 2);
    case 'utf8': return String(b.value);
    case 'hex': return '(bytes, hex) ' + b.value;
    case 'truncated': return `(${b.size} bytes: too large to show here; open the raw view)`;
    default: return JSON.stringify(b, null, 2);
  }
}

const job = {
  title: (p) => 'Job ' + p.id,
  build(root, p) {
    const data = h('div', { id: 'job' });
    root.append(h('p', { class: 'crumbs' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', h('span', { class: 'mono' }, p.id)), data);
    return {
      data,
      load: (q) => api('jobs/' + encodeURIComponent(q.id)),
      paint: paintJob,
      fail: (e) => fill(data, h('p', { class: 'error', testid: 'view-error' },
        e.status === 404 ? `No job ${p.id}.` : errText(e))),
    };
  },
};

function field(label, value, testid) {
  return [h('dt', {}, label), h('dd', { testid }, value == null || value === '' ? '—' : value)];
}

function paintJob(j) {
  const id = j.id;
  const path = 'jobs/' + encodeURIComponent(id);
  const actions = h('div', { class: 'toolbar actions' });
  if (canAct()) {
    if (j.state === 'dead' || j.state === 'failed') {
      actions.append(btn('Retry', { testid: 'btn-retry', id: 'btn-retry', class: 'primary' },
        () => act(`Retry job ${id}? It goes back to pending.`, path + '/retry', {}, { ok: 'Retry', done: (r) => 'Retried; now ' + ((r.job && r.job.state) || 'pending') })));
    }
    if (j.state === 'pending' || j.state === 'failed') {
      // Steering a waiting job (issue 44): the state is kept.
      if (j.state_ts_ms > Date.now()) {
        actions.append(btn('Run now', { testid: 'btn-promote', id: 'btn-promote', class: 'primary' },
          () => act(`Make job ${id} ready now?`, path + '/promote', {}, { ok: 'Run now', done: () => 'Promoted: ready now' })));
      }
      actions.append(btn('Reschedule', { testid: 'btn-reschedule', id: 'btn-reschedule' },
        () => act(`New run time for job ${id}: an RFC 3339 time (2030-01-01T03:00:00Z) or a delay from now (2h).`, path + '/reschedule', {},
          { ok: 'Reschedule', input: 'time or delay', field: (t) => (/^\d{4}-/.test(t) ? { run_at: t } : { delay: t }), done: (r) => 'Rescheduled; due ' + ((r.job && r.job.state_at) || '') })));
      actions.append(btn('Priority', { testid: 'btn-priority', id: 'btn-priority' },
        () => act(`New priority for job ${id} (now ${j.priority}): 0 (most urgent) to 255.`, path + '/priority', {},
          { ok: 'Set priority', input: 'priority', field: (t) => ({ priority: /^\d+$/.test(t) ? Number(t) : t }), done: (r) => 'Priority ' + (r.job ? r.job.priority : '') })));
    }
    if (['pending', 'failed', 'leased', 'waiting'].includes(j.state)) {
      actions.append(btn('Cancel', { testid: 'btn-cancel', id: 'btn-cancel', class: 'warn' },
        () => act(`Cancel job ${id}?` + (j.state === 'leased' ? ' Its worker is told at its next heartbeat.' : ''), path + '/cancel', {},
          { ok: 'Cancel job', danger: true, input: 'reason (optional)', done: (r) => 'Cancel: ' + r.outcome })));
    }
    if (TERMINAL.includes(j.state)) {
      actions.append(btn('Delete', { testid: 'btn-delete', id: 'btn-delete', class: 'danger' }, async () => {
        const r = await act(`Delete job ${id} for good?`, path + '/delete', {}, { ok: 'Delete', danger: true, done: () => 'Deleted ' + id });
        if (r) location.hash = '#/jobs';
      }));
    }
  }
  const sch = j.schedule;
  const dl = h('dl', { class: 'fields', testid: 'job-fields' },
    field('state', stateBadge(j.state, { testid: 'job-state', id: 'job-state' })),
    field('since', when(j.state_at, j.state_ts_ms)),
    field('kind', h('a', { href: jobsHref({ kind: j.kind }) }, j.kind), 'job-kind'),
    field('scope', h('a', { href: jobsHref({ scope: j.scope }), class: 'mono' }, j.scope), 'job-scope'),
    field('attempts', h('span', { testid: 'job-attempts' }, `${j.attempts} / ${j.max_attempts}`)),
    field('generation', String(j.generation), 'job-generation'),
    field('priority', String(j.priority), 'job-priority'),
    field('worker', j.worker_id, 'job-worker'),
    field('lease deadline', j.lease_deadline_ms != null ? when(null, j.lease_deadline_ms) : null),
    field('created', when(j.created_at, j.created_at_ms)),
    field('idempotency key', j.idempotency_key, 'job-idempotency'),
    field('job key', j.key, 'job-key'),
    field('parent', j.parent ? h('a', { href: jobHref(j.parent), class: 'mono', testid: 'job-parent' }, j.parent) : null),
    field('follow-ups', h('a', { href: jobsHref({ parent: j.id }), testid: 'job-follow-ups' }, 'jobs its completion enqueued')),
    field('children', j.fan_in ? `${j.fan_in.unfinished} of ${j.fan_in.total} unfinished (on_child_dead ${j.fan_in.on_child_dead})` : null, 'job-fan-in'),
    field('schedule', sch ? [h('a', { href: jobsHref({ schedule: sch.name }) }, sch.name), ' slot ', sch.slot || String(sch.slot_ms), sch.missed ? ' (missed)' : ''] : null),
    field('cancel requested', j.cancel_requested == null ? null : 'yes: ' + (j.cancel_requested || '(no reason)'), 'job-cancel-requested'),
    field('expires', j.expires_at_ms != null ? when(j.expires_at, j.expires_at_ms) : null),
    field('snoozes', String(j.snoozes ?? 0)),
    field('paused', j.paused ? 'yes (its kind or scope is paused)' : 'no'),
    j.progress != null ? field('progress', h('code', { testid: 'job-progress' }, j.progress.encoding === 'msgpack' ? JSON.stringify(j.progress.value) : blob(j.progress))) : null);
  const error = j.last_error ? h('section', { class: 'card errbox' }, h('h2', {}, 'Last error'), h('pre', { testid: 'job-error', id: 'job-error' }, j.last_error)) : null;
  const events = h('ol', { class: 'timeline', testid: 'job-events', id: 'job-events' },
    (j.events || []).map((e) => h('li', { class: 'ev ev-' + String(e.transition).replace(/[^a-z_]/g, '') },
      h('time', { datetime: e.at || '' }, (e.at || '').replace('T', ' ').replace(/Z$/, '')), ' ',
      h('span', { class: 'tr', testid: 'event-transition' }, e.transition), e.folded ? h('span', { class: 'muted' }, ' (folded)') : null,
      e.detail ? h('span', { class: 'detail' }, ' ', e.detail) : null)));
  const raw = (what, b) => h('section', { class: 'card' },
    h('h2', {}, what, ' ', h('span', { class: 'muted small' }, b ? `${b.encoding}` + (j[what + '_size'] != null ? `, ${j[what + '_size']} bytes` : '') : ''),
      b ? h('a', { class: 'small rawlink', href: `/api/v1/${path}/${what}`, testid: `raw-${what}`, download: `${id}.${what}` }, 'raw') : null),
    h('pre', { testid: 'job-' + what, id: 'job-' + what, class: 'code' }, blob(b)));
  fill(S.view.data, 
    h('h1', {}, 'Job ', h('span', { class: 'mono id' }, id)),
    actions,
    h('section', { class: 'card' }, dl),
    error,
    h('section', { class: 'card' }, h('h2', {}, 'Events'), events,
      j.dropped_events ? h('p', { class: 'muted' }, `${j.dropped_events} older event(s) dropped`) : null),
    raw('payload', j.payload),
    raw('result', j.result));
}

// ---------------------------------------------------------------- workers

const workers = {
  title: () => 'Workers',
  build(root) {
    const data = h('div', { id: 'workers' });
    root.append(h('h1', {}, 'Workers'), h('p', { class: 'muted' }, 'Leased jobs by the worker holding them.'), data);
    return { data, load: () => api('leases'), paint: paintWorkers, always: true };
  },
};

function paintWorkers(r) {
  const ws = r.workers || [];
  const out = ws.map((w) => h('section', { class: 'card', testid: 'worker-' + w.worker_id },
    h('h2', {}, h('span', { class: 'mono' }, w.worker_id), ' ', h('span', { class: 'muted small' }, `${w.leases.length} lease(s)`)),
    tableWrap(h('table', { class: 'grid' },
      h('thead', {}, h('tr', {}, ['job', 'kind', 'scope', 'attempts', 'gen', 'deadline'].map((t) => h('th', {}, t)))),
      h('tbody', {}, w.leases.map((l) => h('tr', {},
        h('td', { class: 'mono' }, h('a', { href: jobHref(l.id) }, l.id)),
        h('td', {}, l.kind), h('td', { class: 'mono small', title: l.scope }, scopeText(l.scope)),
        h('td', { class: 'num' }, String(l.attempts)), h('td', { class: 'num' }, String(l.generation)),
        h('td', { class: 'nowrap' + (l.lease_deadline_ms < Date.now() ? ' error' : '') }, rel(l.lease_deadline_ms),
          h('span', { class: 'muted small' }, ' ' + (l.lease_deadline || ''))))))))));
  add(clear(S.view.data), [ws.length ? out : h('p', { class: 'muted' }, 'No job is leased.'),
    r.truncated ? h('p', { class: 'error' }, 'Too many leases: the list is cut.') : null]);
}

// ---------------------------------------------------------------- schedules

const schedules = {
  title: () => 'Schedules',
  build(root) {
    const data = h('div', { id: 'schedules' });
    root.append(h('h1', {}, 'Schedules'), data);
    return { data, load: () => api('schedules'), paint: paintSchedules };
  },
};

function paintSchedules(r) {
  const all = r.schedules || [];
  const rows = all.map((s) => {
    const path = 'schedules/' + encodeURIComponent(s.name);
    return h('tr', {},
      h('td', {}, h('a', { href: jobsHref({ schedule: s.name }) }, s.name)), h('td', {}, s.kind),
      h('td', { class: 'small', testid: 'sched-tags-' + s.name, title: Object.entries(s.metadata || {}).map(([k, v]) => k + '=' + v).join('\n') },
        (s.tags || []).flatMap((t, i) => [i ? ', ' : null, h('a', { href: jobsHref({ tag: t }) }, t)])),
      h('td', { class: 'mono' }, s.spec ?? s.cron ?? ''), h('td', {}, s.timezone ?? s.tz ?? 'UTC'),
      h('td', {}, s.paused ? h('span', { class: 'badge' }, 'paused') : 'active'),
      h('td', { class: 'nowrap' }, s.next_slot_ms != null ? when(s.next_slot, s.next_slot_ms) : '—'),
      h('td', { class: 'nowrap' }, s.last_slot_ms != null ? when(null, s.last_slot_ms) : '—'),
      h('td', { class: 'mono' }, s.last_job ? h('a', { href: jobHref(s.last_job) }, cut(s.last_job, 14)) : '—'),
      h('td', { class: 'num' }, String(s.enqueued ?? 0)), h('td', { class: 'num' }, String(s.skipped ?? 0)),
      h('td', { class: 'err', title: s.last_error || '' }, cut(s.last_error)),
      canAct() ? h('td', {}, s.paused
        ? btn('Resume', { class: 'small', testid: 'btn-sched-resume-' + s.name }, () => act(`Resume schedule ${s.name}?`, path + '/resume', {}, { ok: 'Resume', done: () => 'Resumed ' + s.name }))
        : btn('Pause', { class: 'small', testid: 'btn-sched-pause-' + s.name }, () => act(`Pause schedule ${s.name}? Its slots are not fired while paused.`, path + '/pause', {}, { ok: 'Pause', done: () => 'Paused ' + s.name }))) : null);
  });
  const head = h('tr', {}, ['name', 'kind', 'tags', 'spec', 'zone', 'status', 'next slot', 'last slot', 'last job', 'enqueued', 'skipped', 'last error'].map((t) => h('th', {}, t)), canAct() ? h('th') : null);
  fill(S.view.data, all.length
    ? tableWrap(h('table', { class: 'grid', testid: 'schedules-table' }, h('thead', {}, head), h('tbody', {}, rows)))
    : h('p', { class: 'muted' }, 'No schedules.'));
}

const VIEWS = { overview, jobs, job, workers, schedules, scopes: scopesView, find: findView };

// ---------------------------------------------------------------- start

$('job-search-form').addEventListener('submit', (e) => {
  e.preventDefault();
  // Not trimmed: a key or a tag is matched exactly (find.js).
  const v = $('job-search').value;
  if (v) { location.hash = findHref({ text: v }); $('job-search').value = ''; }
});
$('logout').addEventListener('click', async () => {
  try { await api('logout', { method: 'POST', body: {} }); } catch { /* the form shows anyway */ }
  showLogin();
});
$('notice').addEventListener('click', () => { $('notice').hidden = true; });
hooks.refresh = refresh;
hooks.unauthenticated = showLogin;
window.addEventListener('hashchange', route);
document.addEventListener('visibilitychange', () => { if (!document.hidden) refresh(false); });
boot();
