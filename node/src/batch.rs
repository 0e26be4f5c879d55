//! Batches on their way to and from JS in a few values instead of a napi
//! call per job and field: leased jobs ([`LeasedBatch`]) and the answers of
//! `enqueueMany` ([`EnqueuedBatch`]). lib/telha.js takes them apart.

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{sys, ValueType};
use napi_derive::napi;
use telha_jobs::payload::Value;

use crate::job::{count, time};
use crate::payload::{value_to_js, Bytes};

/// The ids of an `enqueueMany` joined with `,`, and per job whether it was
/// created (1), an idempotency key matched an existing job (0), or a
/// debounce updated the key's pending job (2).
#[napi(object, object_from_js = false)]
pub struct EnqueuedBatch {
    pub ids: String,
    #[napi(ts_type = "Uint8Array")]
    pub created: Copied<u8>,
}

impl EnqueuedBatch {
    /// Build it (call off the JS thread).
    pub fn from_core(done: Vec<telha_jobs::Enqueued>) -> Self {
        use std::fmt::Write;
        let mut ids = String::with_capacity(done.len() * 37);
        for (i, e) in done.iter().enumerate() {
            if i > 0 {
                ids.push(',');
            }
            let _ = write!(ids, "{}", e.id);
        }
        EnqueuedBatch {
            ids,
            created: Copied(
                done.iter()
                    .map(|e| if e.debounced { 2 } else { u8::from(e.created) })
                    .collect(),
            ),
        }
    }
}

/// Leased jobs on their way to JS in a few values instead of a dozen napi
/// calls per job, all built off the JS thread: the ids joined with `,`;
/// the numeric fields in one `Float64Array`, [`LeasedBatch::FIELDS`] per job
/// (attempts, maxAttempts, generation, deadline, priority, payload length,
/// leaseTtlMs, timeoutMs or NaN for none); the text fields (kind, scope,
/// workerId, payloadEncoding) as indices into `strings`, [`LeasedBatch::REFS`] per job, the batch's
/// distinct values (usually four); every payload in one `Buffer`; and the
/// payloads read as values by index (holes where a payload reads as its
/// bytes), and the schedules of the jobs a schedule enqueued and the parents
/// of follow-up jobs, each with its job's index (absent when none was).
/// lib/telha.js assembles the `Job` objects.
#[napi(object, object_from_js = false)]
pub struct LeasedBatch {
    pub ids: String,
    #[napi(ts_type = "Float64Array")]
    pub nums: Copied<f64>,
    #[napi(ts_type = "Uint32Array")]
    pub refs: Copied<u32>,
    pub strings: Vec<String>,
    #[napi(ts_type = "Buffer")]
    pub payloads: Bytes,
    #[napi(ts_type = "unknown[]")]
    pub decoded: Decoded,
    pub schedules: Option<Vec<LeasedSchedule>>,
    /// The parents of the follow-up jobs in the batch (absent when none is).
    pub parents: Option<Vec<LeasedParent>>,
    /// The tags and metadata of the jobs that have any (absent when none has).
    pub tagged: Option<Vec<LeasedTags>>,
    /// The job keys of the jobs that have one (absent when none has).
    pub keyed: Option<Vec<LeasedKey>>,
}

/// The job key of job `at` of a [`LeasedBatch`] (its `Job.key`).
#[napi(object, object_from_js = false)]
pub struct LeasedKey {
    /// The job's index in the batch.
    pub at: u32,
    pub key: String,
}

/// The tags and metadata of job `at` of a [`LeasedBatch`].
#[napi(object, object_from_js = false)]
pub struct LeasedTags {
    /// The job's index in the batch.
    pub at: u32,
    pub tags: Vec<String>,
    #[napi(ts_type = "Record<string, string>")]
    pub metadata: std::collections::HashMap<String, String>,
}

/// The parent of job `at` of a [`LeasedBatch`] (its `Job.parent`).
#[napi(object, object_from_js = false)]
pub struct LeasedParent {
    /// The job's index in the batch.
    pub at: u32,
    /// The parent job's id.
    pub id: String,
}

/// The schedule of job `at` of a [`LeasedBatch`] (its `Job.schedule`).
#[napi(object, object_from_js = false)]
pub struct LeasedSchedule {
    /// The job's index in the batch.
    pub at: u32,
    pub name: String,
    pub slot: f64,
    pub missed: f64,
}

impl LeasedBatch {
    /// Numbers per job in `nums`.
    pub const FIELDS: usize = 8;
    /// Indices into `strings` per job in `refs`.
    pub const REFS: usize = 4;

    /// Build the batch (call off the JS thread).
    pub fn from_core(jobs: Vec<telha_jobs::Job>) -> Self {
        use std::fmt::Write;
        let mut ids = String::with_capacity(jobs.len() * 37);
        let mut nums = Vec::with_capacity(jobs.len() * Self::FIELDS);
        let mut refs = Vec::with_capacity(jobs.len() * Self::REFS);
        let mut strings: Vec<String> = Vec::new();
        let mut payloads = Vec::with_capacity(jobs.iter().map(|j| j.payload.len()).sum());
        let mut decoded = Vec::with_capacity(jobs.len());
        let mut schedules: Option<Vec<LeasedSchedule>> = None;
        let mut parents: Option<Vec<LeasedParent>> = None;
        let mut tagged: Option<Vec<LeasedTags>> = None;
        let mut keyed: Option<Vec<LeasedKey>> = None;
        let mut scope = String::new();
        for (i, j) in jobs.into_iter().enumerate() {
            if i > 0 {
                ids.push(',');
            }
            let _ = write!(ids, "{}", j.id);
            nums.extend_from_slice(&[
                j.attempts as f64,
                j.max_attempts as f64,
                count(j.generation),
                time(j.deadline),
                j.priority as f64,
                j.payload.len() as f64,
                count(j.lease_ttl_ms),
                j.timeout_ms.map_or(f64::NAN, count),
            ]);
            scope.clear();
            let _ = write!(scope, "{}", j.scope);
            let encoding = j.payload_encoding.as_str();
            for s in [
                j.kind.as_str(),
                scope.as_str(),
                j.worker_id.as_str(),
                encoding,
            ] {
                // A batch has few distinct values: a linear search beats hashing.
                let at = match strings.iter().position(|t| t == s) {
                    Some(at) => at,
                    None => {
                        strings.push(s.to_string());
                        strings.len() - 1
                    }
                };
                refs.push(at as u32);
            }
            if let Some(r) = j.schedule {
                schedules.get_or_insert_with(Vec::new).push(LeasedSchedule {
                    at: i as u32,
                    name: r.name,
                    slot: time(r.slot),
                    missed: count(r.missed),
                });
            }
            if let Some(p) = j.parent {
                parents.get_or_insert_with(Vec::new).push(LeasedParent {
                    at: i as u32,
                    id: p.to_string(),
                });
            }
            if let Some(key) = j.key {
                keyed
                    .get_or_insert_with(Vec::new)
                    .push(LeasedKey { at: i as u32, key });
            }
            if !j.tags.is_empty() || !j.metadata.is_empty() {
                tagged.get_or_insert_with(Vec::new).push(LeasedTags {
                    at: i as u32,
                    tags: j.tags,
                    metadata: j.metadata.into_iter().collect(),
                });
            }
            decoded.push(telha_jobs::payload::read(&j.payload, j.payload_encoding));
            payloads.extend_from_slice(&j.payload);
        }
        LeasedBatch {
            ids,
            nums: Copied(nums),
            refs: Copied(refs),
            strings,
            payloads: Bytes(payloads),
            decoded: Decoded(decoded),
            schedules,
            parents,
            tagged,
            keyed,
        }
    }
}

/// Numbers on their way to JS as a typed array over a fresh copy (cheaper
/// than napi's external array buffers, which register a finalizer each).
pub struct Copied<T>(pub Vec<T>);

/// The element types [`Copied`] crosses as.
pub trait Element: Copy {
    const KIND: sys::napi_typedarray_type;
    const NAME: &'static str;
}

impl Element for f64 {
    const KIND: sys::napi_typedarray_type = sys::TypedarrayType::float64_array;
    const NAME: &'static str = "Float64Array";
}

impl Element for u8 {
    const KIND: sys::napi_typedarray_type = sys::TypedarrayType::uint8_array;
    const NAME: &'static str = "Uint8Array";
}

impl Element for u32 {
    const KIND: sys::napi_typedarray_type = sys::TypedarrayType::uint32_array;
    const NAME: &'static str = "Uint32Array";
}

impl<T: Element> TypeName for Copied<T> {
    fn type_name() -> &'static str {
        T::NAME
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl<T: Element> ToNapiValue for Copied<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let bytes = std::mem::size_of_val(val.0.as_slice());
        let mut data = std::ptr::null_mut();
        let mut buffer = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_arraybuffer(env, bytes, &mut data, &mut buffer) },
            "creating an ArrayBuffer"
        )?;
        if bytes > 0 {
            // SAFETY: napi allocated `bytes` writable bytes at `data`.
            unsafe {
                std::ptr::copy_nonoverlapping(val.0.as_ptr().cast::<u8>(), data.cast(), bytes)
            };
        }
        let mut out = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_typedarray(env, T::KIND, val.0.len(), buffer, 0, &mut out) },
            "creating a typed array"
        )?;
        Ok(out)
    }
}

/// Payloads read as values, by index; `None` leaves a hole.
pub struct Decoded(Vec<Option<Value>>);

impl TypeName for Decoded {
    fn type_name() -> &'static str {
        "unknown[]"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Decoded {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        let mut arr = std::ptr::null_mut();
        napi::check_status!(
            unsafe { sys::napi_create_array_with_length(env, val.0.len(), &mut arr) },
            "creating the payload values"
        )?;
        for (i, v) in val.0.into_iter().enumerate() {
            if let Some(v) = v {
                let e = unsafe { value_to_js(env, v) }?;
                napi::check_status!(
                    unsafe { sys::napi_set_element(env, arr, i as u32, e) },
                    "setting a payload value"
                )?;
            }
        }
        Ok(arr)
    }
}
