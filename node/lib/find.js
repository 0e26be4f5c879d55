'use strict'
// Queue.find (issue 42): the argument checks (check.js's rule: a wrong type
// is a TypeError, an unknown option an Error, both INVALID_ARGUMENT; the
// text's rules and the limit's range are the core's) and the answer's
// shape: absent jobs and the end of the tag page are null, as documented
// (napi leaves a None out). Types and docs: telha.d.ts.

const { options, str, optStr, optNum } = require('./check.js')

const FIND_KEYS = new Set(['scope', 'limit'])

async function find (nativeQueue, text, opts) {
  const o = options(opts, 'find options', FIND_KEYS)
  const r = await nativeQueue.find(str(text, 'text'), optStr(o.scope, 'scope'), optNum(o.limit, 'limit'))
  r.byId ??= null
  r.byKey ??= null
  r.byTag.next ??= null
  return r
}

module.exports = { find }
