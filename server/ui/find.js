// telha-jobs operator page: the search box's results (issue 42). The
// header's box sends its text to GET /api/v1/find, which answers it as a
// job id, an idempotency key and a tag, each exactly and each from its own
// index (never a scan); this view shows every kind that matched, side by
// side. A text that is only a job id opens that job, as the box always did.

import { h, fill, jobHref, jobsHref, tableWrap, scopeText, stateBadge, when, errText, api, S } from './dom.js';

export function findHref(f) {
  const q = new URLSearchParams();
  for (const k of ['text', 'scope']) if (f[k]) q.set(k, f[k]);
  return '#/find?' + q;
}

function jobRows(list) {
  return h('tbody', {}, list.map((j) => h('tr', { 'data-id': j.id },
    h('td', { class: 'mono' }, h('a', { href: jobHref(j.id), class: 'job-link' }, j.id)),
    h('td', {}, j.kind),
    h('td', { class: 'mono small', title: j.scope }, scopeText(j.scope)),
    h('td', {}, stateBadge(j.state)),
    h('td', { class: 'small' }, (j.tags || []).join(', ')),
    h('td', { class: 'nowrap' }, when(j.state_at, j.state_ts_ms)))));
}

function section(testid, title, jobs, more) {
  const head = h('tr', {}, ['id', 'kind', 'scope', 'state', 'tags', 'since'].map((t) => h('th', {}, t)));
  const table = h('table', { class: 'grid', testid: testid + '-table' }, h('thead', {}, head), jobRows(jobs));
  return h('section', { class: 'card', testid }, h('h2', {}, title), tableWrap(table), more);
}

export const findView = {
  title: (p) => 'Find ' + (p.text || ''),
  build(root, p) {
    const text = h('input', { type: 'search', id: 'find-text', testid: 'find-text', placeholder: 'job id, idempotency key or tag', 'aria-label': 'Find', value: p.text || '', spellcheck: 'false' });
    const scope = h('input', { type: 'text', id: 'find-scope', testid: 'find-scope', placeholder: 'scope uuid (keys: the default scope)', 'aria-label': 'Scope', value: p.scope || '' });
    const form = h('form', { class: 'filters', id: 'find-form' },
      h('label', {}, 'Find ', text), h('label', {}, 'Scope ', scope),
      h('button', { type: 'submit', id: 'find-apply', testid: 'find-apply', class: 'primary' }, 'Find'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      location.hash = findHref({ text: text.value, scope: scope.value.trim() });
    });
    const data = h('div', { id: 'found' });
    root.append(h('h1', {}, 'Find'), form, data);
    return {
      data,
      load: (q) => {
        const u = new URLSearchParams({ text: q.text || '', limit: '50' });
        if (q.scope) u.set('scope', q.scope);
        return api('find?' + u);
      },
      paint: paintFound,
      fail: (e) => fill(data, h('p', { class: 'error', testid: 'view-error' }, errText(e))),
    };
  },
};

function paintFound(r, p) {
  const m = r.matched || [];
  if (m.length === 1 && m[0] === 'id' && !S.view.shown) {
    S.view.shown = true;
    location.replace(jobHref(r.by_id.id));
    return;
  }
  const parts = [];
  if (r.by_id) parts.push(section('found-id', 'Job with this id', [r.by_id]));
  if (r.by_key) parts.push(section('found-key', 'Job with this idempotency key', [r.by_key]));
  const tagged = r.by_tag || { jobs: [] };
  if (tagged.jobs.length) {
    const all = h('a', { href: jobsHref({ tag: r.text, scope: p.scope }), testid: 'found-tag-all' },
      tagged.next ? 'All jobs with this tag…' : 'As a jobs list…');
    parts.push(section('found-tag', `Jobs tagged ${r.text}`, tagged.jobs,
      h('p', { class: 'muted' }, `${tagged.jobs.length} job(s)` + (tagged.next ? ' on this page; more exist. ' : '. '), all)));
  }
  const summary = m.length ? 'Matched as: ' + m.map((k) => ({ id: 'job id', key: 'idempotency key', tag: 'tag' })[k]).join(', ')
    : `Nothing is ${JSON.stringify(r.text)}: no job has it as its id, idempotency key or tag (matched exactly).`;
  fill(S.view.data, h('p', { class: 'muted', testid: 'find-summary' }, summary), parts);
}
