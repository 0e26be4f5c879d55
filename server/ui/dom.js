// telha-jobs operator page, part 1 of 3: state, DOM helpers, notices, the
// confirmation modal and the API client (app.js has the login, the router
// and the views). Job data only ever reaches the DOM through textContent /
// text nodes / setAttribute (never innerHTML).

const STATES = ['pending', 'leased', 'failed', 'completed', 'dead', 'cancelled', 'waiting'];
const TERMINAL = ['completed', 'dead', 'cancelled'];
const POLL_MS = 2000;

const S = {
  info: null,        // GET /api/v1/info
  csrf: null,        // kept in memory only
  view: null,        // { name, params, root, load, paint, last }
  timer: null,
  busy: false,
  modal: false,
  locked: true,      // the login form is showing
  seq: 0,
};

// ---------------------------------------------------------------- DOM helpers

function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  setProps(el, props);
  add(el, kids);
  return el;
}

function setProps(el, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.setAttribute('class', v);
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'testid') el.setAttribute('data-testid', v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

function add(el, kids) {
  for (const c of kids.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
function svg(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  add(el, kids);
  return el;
}

const $ = (id) => document.getElementById(id);
const clear = (el) => { el.replaceChildren(); return el; };
const fill = (el, ...kids) => add(clear(el), kids);
const canAct = () => S.info && !S.info.read_only;
const jobHref = (id) => '#/job/' + encodeURIComponent(id);

function jobsHref(f) {
  const q = new URLSearchParams();
  for (const k of ['state', 'kind', 'scope', 'tag', 'schedule', 'parent', 'after']) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return '#/jobs' + (s ? '?' + s : '');
}

function btn(label, props, onclick) {
  return h('button', { type: 'button', ...props, onclick }, label);
}

function tableWrap(table) {
  return h('div', { class: 'table-wrap' }, table);
}

function cut(s, n = 80) {
  if (s == null) return '';
  s = String(s);
  return s.length > n ? s.slice(0, n - 1) + '…' : s;
}

function rel(ms, now = Date.now()) {
  if (ms == null) return '';
  const d = Math.round((ms - now) / 1000);
  const a = Math.abs(d);
  let t;
  if (a < 90) t = a + 's';
  else if (a < 5400) t = Math.round(a / 60) + 'm';
  else if (a < 172800) t = Math.round(a / 3600) + 'h';
  else t = Math.round(a / 86400) + 'd';
  return d >= 0 ? 'in ' + t : t + ' ago';
}

function when(iso, ms) {
  if (!iso && ms == null) return '—';
  const abs = iso || new Date(ms).toISOString();
  const text = abs.replace('T', ' ').replace(/\.\d+/, '').replace(/Z$/, ' UTC');
  return h('span', { title: abs }, text, ms != null ? h('span', { class: 'muted' }, ' (' + rel(ms) + ')') : null);
}

const NIL = '00000000-0000-0000-0000-000000000000';
const scopeText = (s) => (s === NIL ? 'system' : cut(s, 9));

function stateBadge(state, props) {
  return h('span', { class: 'state st-' + String(state).replace(/[^a-z]/g, ''), ...props }, state);
}

// ---------------------------------------------------------------- notices and the modal

let noticeTimer = null;
function notice(text, kind = 'ok') {
  const n = $('notice');
  n.textContent = text;
  n.className = 'notice ' + kind;
  n.hidden = false;
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { n.hidden = true; }, kind === 'err' ? 10000 : 6000);
}

function errText(e) {
  return e && e.code ? e.code + ': ' + e.message : String(e && e.message || e);
}

// A confirmation built in the DOM (no window.confirm). Resolves to null when
// cancelled, else to the text of the optional input ('' without one).
function ask(message, { ok = 'Confirm', danger = false, input = null } = {}) {
  return new Promise((resolve) => {
    S.modal = true;
    const field = input ? h('input', { type: 'text', id: 'confirm-input', 'aria-label': input, placeholder: input }) : null;
    const prev = document.activeElement;
    const done = (v) => {
      S.modal = false;
      overlay.remove();
      document.removeEventListener('keydown', onKey, true);
      if (prev && prev.focus) prev.focus();
      resolve(v);
    };
    const onKey = (e) => { if (e.key === 'Escape') { e.preventDefault(); done(null); } };
    const okBtn = btn(ok, { class: danger ? 'danger' : 'primary', testid: 'confirm-ok', id: 'confirm-ok' },
      () => done(field ? field.value : ''));
    const box = h('div', { class: 'modal', role: 'dialog', 'aria-modal': 'true', 'aria-labelledby': 'confirm-msg', testid: 'confirm' },
      h('p', { id: 'confirm-msg' }, message),
      field,
      h('div', { class: 'actions' },
        btn('Cancel', { testid: 'confirm-cancel', id: 'confirm-cancel' }, () => done(null)),
        okBtn));
    const overlay = h('div', { class: 'overlay', onclick: (e) => { if (e.target === overlay) done(null); } }, box);
    document.addEventListener('keydown', onKey, true);
    document.body.append(overlay);
    (field || okBtn).focus();
  });
}

// ---------------------------------------------------------------- API

class ApiError extends Error {
  constructor(code, message, status) { super(message); this.code = code; this.status = status; }
}

async function api(path, { method = 'GET', body } = {}) {
  const opts = { method, headers: {}, credentials: 'same-origin', cache: 'no-store', signal: AbortSignal.timeout(20000) };
  if (method !== 'GET') {
    opts.headers['Content-Type'] = 'application/json';
    if (S.csrf) opts.headers['X-CSRF-Token'] = S.csrf;
    opts.body = JSON.stringify(body || {});
  }
  let r;
  try {
    r = await fetch('/api/v1/' + path, opts);
  } catch (e) {
    setConn(false);
    throw new ApiError('UNAVAILABLE', 'cannot reach the server', 0);
  }
  setConn(true);
  const txt = await r.text();
  let data = null;
  try { data = txt ? JSON.parse(txt) : null; } catch { data = null; }
  if (!r.ok) {
    const e = (data && data.error) || {};
    if (r.status === 401 && path !== 'login') hooks.unauthenticated();
    throw new ApiError(e.code || 'HTTP_' + r.status, e.message || r.statusText || 'request failed', r.status);
  }
  return data;
}

function setConn(up) {
  const c = $('conn');
  c.textContent = up ? '' : 'server unreachable, retrying…';
  c.className = up ? 'conn' : 'conn down';
}

// What app.js plugs in: a refresh of the current view, and the login form.
const hooks = { refresh: async () => {}, unauthenticated: () => {} };

// Confirm, POST, report, refresh. Returns the answer or null.
async function act(message, path, body, { ok = 'Confirm', danger = false, input = null, field = null, done } = {}) {
  const extra = await ask(message, { ok, danger, input });
  if (extra === null) return null;
  // The typed text goes in the body: as `reason`, or as what `field`
  // makes of it (an object of fields).
  if (input && field) body = { ...body, ...field(extra.trim()) };
  else if (input && extra) body = { ...body, reason: extra };
  try {
    const r = await api(path, { method: 'POST', body });
    notice(done ? done(r) : 'Done');
    await hooks.refresh(true);
    return r;
  } catch (e) {
    notice(errText(e), 'err');
    await hooks.refresh(true);
    return null;
  }
}

export {
  STATES,
  TERMINAL,
  POLL_MS,
  S,
  h,
  setProps,
  add,
  SVGNS,
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
  NIL,
  scopeText,
  stateBadge,
  notice,
  errText,
  ask,
  ApiError,
  api,
  setConn,
  hooks,
  act,
};
