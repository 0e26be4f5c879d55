// telha-jobs operator page, part 3 of 3: jobs per scope (tenant). The
// overview shows the scopes with the most pending jobs (the server sends
// only those); the scopes view pages through every scope by cursor, in id
// order or the most pending / leased / dead first, filtered by an id prefix.

import { STATES, h, fill, jobsHref, tableWrap, NIL, api, S } from './dom.js';

const ORDERS = ['name', 'pending', 'leased', 'dead'];

export function scopesHref(f) {
  const q = new URLSearchParams();
  for (const k of ['order', 'prefix', 'after']) if (f[k]) q.set(k, f[k]);
  const s = q.toString();
  return '#/scopes' + (s ? '?' + s : '');
}

const sum = (c) => c.total ?? STATES.reduce((a, s) => a + (c[s] || 0), 0);

function scopeRow(sc, c, pausedScopes) {
  const cell = (state, n) => h('td', { class: 'num' },
    h('a', { href: jobsHref(state === 'total' ? { scope: sc } : { scope: sc, state }), testid: `scope-count-${sc}-${state}`, class: n ? '' : 'zero' }, String(n ?? 0)));
  return h('tr', { 'data-scope': sc },
    h('th', { scope: 'row', class: 'mono' }, h('a', { href: jobsHref({ scope: sc }) }, sc === NIL ? 'default' : sc),
      pausedScopes.has(sc) ? h('span', { class: 'badge' }, 'paused') : null),
    STATES.map((s) => cell(s, c[s])), cell('total', sum(c)));
}

function grid(testid, rows) {
  const head = h('tr', {}, h('th', {}, 'scope'), STATES.map((s) => h('th', { class: 'num' }, s)), h('th', { class: 'num' }, 'total'));
  return tableWrap(h('table', { class: 'grid', testid }, h('thead', {}, head), h('tbody', {}, rows)));
}

// The overview's card: the page of scopes the overview carries, in its
// order (the most pending first), and a link to all of them.
export function scopesCard(st, pausedScopes) {
  const byScope = st.by_scope || {};
  const scopes = Object.keys(byScope);
  if (!scopes.length) return null;
  const rows = scopes.map((sc) => scopeRow(sc, byScope[sc], pausedScopes));
  const link = h('a', { href: scopesHref({ order: 'pending' }), testid: 'all-scopes' }, 'All scopes…');
  const note = st.scopes_next
    ? h('p', { class: 'muted', testid: 'scopes-more' }, `The ${scopes.length} scopes with the most pending jobs; more exist. `, link)
    : h('p', { class: 'muted' }, link);
  return h('section', { class: 'card' }, h('h2', {}, 'Jobs by scope and state'), grid('scopes-table', rows), note);
}

export const scopesView = {
  title: () => 'Scopes',
  build(root, p) {
    const order = h('select', { id: 'scope-order', testid: 'scope-order', 'aria-label': 'Order' },
      ORDERS.map((o) => h('option', { value: o, selected: (p.order || 'name') === o }, o === 'name' ? 'by id' : 'most ' + o)));
    const prefix = h('input', { type: 'search', id: 'scope-search', testid: 'scope-search', placeholder: 'scope id starts with…', 'aria-label': 'Scope id prefix', value: p.prefix || '', spellcheck: 'false' });
    const form = h('form', { class: 'filters', id: 'scope-filters' },
      h('label', {}, 'Order ', order), h('label', {}, 'Search ', prefix),
      h('button', { type: 'submit', id: 'scope-apply', testid: 'scope-apply', class: 'primary' }, 'Apply'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      location.hash = scopesHref({ order: order.value, prefix: prefix.value.trim().toLowerCase() });
    });
    const data = h('div', { id: 'scopes' });
    root.append(h('h1', {}, 'Scopes'), form, data);
    return {
      data,
      load: (q) => {
        const u = new URLSearchParams({ limit: '50', order: q.order || 'name' });
        for (const k of ['prefix', 'after']) if (q[k]) u.set(k, q[k]);
        return api('scopes?' + u);
      },
      paint: paintScopes,
    };
  },
};

function paintScopes(r, p) {
  const list = r.scopes || [];
  const paused = new Set(r.paused || []);
  const rows = list.length ? list.map((x) => scopeRow(x.scope, x.counts, paused))
    : h('tr', {}, h('td', { colspan: 8, class: 'muted' }, 'No scope matches.'));
  const foot = h('div', { class: 'toolbar' }, h('span', { class: 'muted', testid: 'scopes-count' }, `${list.length} scope(s) on this page`),
    p.after ? h('a', { class: 'button', href: scopesHref({ ...p, after: '' }), testid: 'scopes-first' }, 'First page') : null,
    r.next ? h('a', { class: 'button', href: scopesHref({ ...p, after: r.next }), testid: 'scopes-next', id: 'scopes-next' }, 'Next page') : null);
  fill(S.view.data, grid('scope-list', rows), foot);
}
