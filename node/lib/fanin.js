'use strict'
// Fan-in (issue 43): the argument checks of enqueueGroup and
// resultsOfChildren, in check.js's rule (a wrong type is a TypeError, an
// unknown option an Error, both INVALID_ARGUMENT). The `after` and
// `onChildDead` enqueue options are read by flow.js with the others; ids,
// policies, the limit's range and the cursor are checked by the native
// layer and the core. Types and docs: fanin.d.ts.

const { typeError, options, str, optStr, optNum } = require('./check.js')
const { ITEM_KEYS, addItems, enqueueOptions } = require('./flow.js')
const { injectOptions, injectItems } = require('./otel.js')

const CHILDREN_KEYS = new Set(['cursor', 'limit'])

/** A group's parent: `[kind, payload]` or `{ kind, payload, ...options }`, as `[kind, payload, options]`. */
function parentItem (p) {
  if (Array.isArray(p)) {
    if (p.length < 1 || p.length > 2) throw typeError('parent must be a [kind, payload] pair')
    return [str(p[0], 'parent[0] (kind)'), p[1], injectOptions(undefined)]
  }
  if (p !== null && typeof p === 'object') {
    options(p, 'parent', ITEM_KEYS)
    return [str(p.kind, 'parent.kind'), p.payload, injectOptions(enqueueOptions(p, 'parent'))]
  }
  throw typeError('parent must be a [kind, payload] pair or a { kind, payload, ...options } object')
}

/** `enqueueGroup`'s native arguments: the children as enqueueMany's parallel arrays, then the parent's kind, payload and options. */
function groupArgs (children, parent) {
  if (!Array.isArray(children)) {
    throw typeError('enqueueGroup takes an array of children ([kind, payload] pairs or { kind, payload, ...options } objects) and a parent')
  }
  const kids = injectItems(addItems(children, 'children', { kinds: [], payloads: [], opts: undefined }))
  return [kids.kinds, kids.payloads, kids.opts ?? null, ...parentItem(parent)]
}

/** `resultsOfChildren`'s native arguments: the parent's id (a job, a JobInfo or an id), cursor and limit. */
function childrenArgs (parent, opts) {
  const id = parent !== null && typeof parent === 'object' ? parent.id : parent
  const o = options(opts, 'resultsOfChildren options', CHILDREN_KEYS)
  return [str(id, 'parent (a job id, or a job with one)'), optStr(o.cursor, 'cursor'), optNum(o.limit, 'limit')]
}

module.exports = { groupArgs, childrenArgs }
