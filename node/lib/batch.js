'use strict'
// The native batches taken apart (src/batch.rs): lease tokens on their way
// in, leased jobs on their way out, in a few values instead of a napi call
// per job and field.

const { typeError, token } = require('./check.js')

/** Lease tokens as the native side takes them: ids joined with ',', generations in a Float64Array. */
function tokens (jobs, name) {
  if (!Array.isArray(jobs)) throw typeError(`${name} must be an array of leased jobs`)
  const ids = new Array(jobs.length)
  const gens = new Float64Array(jobs.length)
  for (let i = 0; i < jobs.length; i++) {
    const t = token(jobs[i], `${name}[${i}]`)
    ids[i] = t.id
    gens[i] = t.generation
  }
  return { ids: ids.join(','), gens, count: jobs.length }
}

/** Numbers per job in a native `LeasedBatch`'s `nums` (batch.rs: `LeasedBatch::FIELDS`). */
const FIELDS = 8
/** Indices into `strings` per job in `refs` (batch.rs: `LeasedBatch::REFS`). */
const REFS = 4

/**
 * The `Job` objects of a native `LeasedBatch`: ids joined with ',', the
 * numbers in one Float64Array, kind / scope / workerId / payloadEncoding as
 * indices into a table of the batch's distinct strings, one payload
 * Buffer, the payloads that read as values, and the schedules of the jobs
 * a schedule enqueued, the parents of follow-up jobs, the tags and
 * metadata of tagged jobs and the keys of keyed jobs (absent when none
 * was), each with its job's index.
 */
function jobsFrom (batch) {
  const { ids: joined, nums, refs, strings, payloads, decoded, schedules, parents, tagged, keyed } = batch
  if (joined.length === 0) return []
  const ids = joined.split(',')
  const jobs = new Array(ids.length)
  let off = 0
  for (let i = 0; i < ids.length; i++) {
    const k = i * FIELDS
    const r = i * REFS
    const end = off + nums[k + 5]
    const bytes = payloads.subarray(off, end)
    off = end
    const value = decoded[i]
    jobs[i] = {
      id: ids[i],
      kind: strings[refs[r]],
      scope: strings[refs[r + 1]],
      payload: value === undefined ? bytes : value,
      payloadBytes: bytes,
      payloadEncoding: strings[refs[r + 3]],
      attempts: nums[k],
      maxAttempts: nums[k + 1],
      generation: nums[k + 2],
      deadline: nums[k + 3],
      leaseTtlMs: nums[k + 6],
      timeoutMs: Number.isNaN(nums[k + 7]) ? null : nums[k + 7],
      priority: nums[k + 4],
      workerId: strings[refs[r + 2]],
      schedule: null,
      parent: null,
      tags: [],
      metadata: {},
      key: null
    }
  }
  if (schedules) {
    for (const { at, name, slot, missed } of schedules) jobs[at].schedule = { name, slot, missed }
  }
  if (parents) {
    for (const { at, id } of parents) jobs[at].parent = id
  }
  if (tagged) {
    for (const { at, tags, metadata } of tagged) Object.assign(jobs[at], { tags, metadata })
  }
  if (keyed) {
    for (const { at, key } of keyed) jobs[at].key = key
  }
  return jobs
}

module.exports = { tokens, jobsFrom }
