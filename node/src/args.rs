//! JS arguments -> owned core values, checked at the boundary.
//!
//! Every number that crosses is range-checked here before any conversion,
//! so nothing wraps or truncates on the way in (no `as` cast on an
//! unchecked float): a duration, a time, a count, a priority or a limit
//! outside its range is a `RangeError` (code `INVALID_ARGUMENT`) naming the
//! argument and its range, the bounds coming from `telha_jobs::limits` and
//! the key table. Values of the wrong JS type are `TypeError`s. The one
//! saturation is a lease wait: `Infinity`, or anything longer than
//! [`MAX_DURATION`], waits for good (as long as the core can represent).

use std::ptr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use napi::bindgen_prelude::{Env, Unknown};
use napi::{sys, JsValue, ValueType};
use telha_jobs::config::keys::{self, KeyType};
use telha_jobs::limits::{self, MAX_BATCH, MAX_DURATION, MAX_INSTANT_MS, MAX_LIST_LIMIT};
use telha_jobs::{EnqueueOptions, JobId, KindPattern, LeaseOptions, LeaseToken, Scope};

use crate::errors::Failure;
use crate::payload::string_from_js;

/// Largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub const MAX_SAFE: u64 = (1 << 53) - 1;

/// A number as JS prints it (`1e+300`, `NaN`, `-Infinity`), for messages.
pub fn js_num(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if v.abs() >= 1e21 {
        let s = format!("{v:e}");
        match s.split_once('e') {
            Some((m, e)) if !e.starts_with('-') => format!("{m}e+{e}"),
            _ => s,
        }
    } else {
        format!("{v}")
    }
}

fn ms_of(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A duration in milliseconds, from 0 to `max`.
pub fn duration_ms(v: f64, what: &str, max: Duration) -> Result<Duration, Failure> {
    let max_ms = ms_of(max);
    if !(v >= 0.0 && v <= max_ms as f64) {
        let years = max.as_secs() / (365 * 24 * 3600);
        return Err(Failure::Range(format!(
            "{what} must be a number of milliseconds from 0 to {max_ms} ({years} years), got {}",
            js_num(v)
        )));
    }
    // Exact to the microsecond; in range, so the product fits a u64.
    Ok(Duration::from_micros((v * 1000.0).round() as u64))
}

/// A setting's duration (at most [`MAX_DURATION`]).
pub fn setting_ms(v: f64, what: &str) -> Result<Duration, Failure> {
    duration_ms(v, what, MAX_DURATION)
}

/// A time in ms since the epoch, from 0 to [`MAX_INSTANT_MS`] (fractions of
/// a millisecond are dropped).
pub fn instant_ms(v: f64, what: &str) -> Result<u64, Failure> {
    if !(v >= 0.0 && v <= MAX_INSTANT_MS as f64) {
        return Err(Failure::Range(format!(
            "{what} must be a time from 0 to {MAX_INSTANT_MS} ms since the epoch \
             (9999-12-31T23:59:59.999Z), got {}",
            js_num(v)
        )));
    }
    Ok(v.floor() as u64)
}

/// A delay from now: checked against this process's clock so that now +
/// delay stays at most [`MAX_INSTANT_MS`] (the store checks again against
/// its own clock).
pub fn delay_ms(v: f64, what: &str) -> Result<Duration, Failure> {
    let d = duration_ms(v, what, Duration::from_millis(MAX_INSTANT_MS))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(ms_of)
        .unwrap_or(0);
    limits::instant_after(what, now, d).map_err(Failure::range)?;
    Ok(d)
}

/// A lease wait: `Infinity` or anything over [`MAX_DURATION`] saturates to
/// it (waits for good); NaN and negatives are refused.
pub fn wait_ms(v: f64, what: &str) -> Result<Duration, Failure> {
    if v >= ms_of(MAX_DURATION) as f64 {
        return Ok(MAX_DURATION);
    }
    duration_ms(v, what, MAX_DURATION)
}

/// A whole number from `min` to `max` (at most 2^53 - 1, so exact).
pub fn whole(v: f64, what: &str, min: u64, max: u64) -> Result<u64, Failure> {
    let max = max.min(MAX_SAFE);
    if !(v.fract() == 0.0 && v >= min as f64 && v <= max as f64) {
        return Err(Failure::Range(format!(
            "{what} must be an integer from {min} to {max}, got {}",
            js_num(v)
        )));
    }
    Ok(v as u64)
}

/// A count of the key table's key `name` (its range from the table).
pub fn table_count(v: f64, what: &str, name: &str) -> Result<u64, Failure> {
    let k = keys::key(name)?;
    match k.ty {
        KeyType::Count { min, max } => whole(v, what, min, max),
        _ => Err(Failure::Invalid(format!("{name} is not a count"))),
    }
}

/// A job priority: 0 (most urgent) to 255.
pub fn priority(v: f64, what: &str) -> Result<u8, Failure> {
    Ok(whole(v, what, 0, u8::MAX as u64)? as u8)
}

/// How many jobs one lease call takes: 1 to [`MAX_BATCH`].
pub fn batch_max(v: f64, what: &str) -> Result<usize, Failure> {
    Ok(whole(v, what, 1, MAX_BATCH as u64)? as usize)
}

/// A `list` page size: 1 to [`MAX_LIST_LIMIT`].
pub fn list_limit(v: f64, what: &str) -> Result<usize, Failure> {
    Ok(whole(v, what, 1, MAX_LIST_LIMIT as u64)? as usize)
}

/// A JS value of the current call, read with raw napi. Its handles live as
/// long as the call's scope: make one only from a call's arguments (or
/// their properties) and drop it before the call returns.
#[derive(Clone, Copy)]
pub struct Arg {
    env: sys::napi_env,
    v: sys::napi_value,
}

impl Arg {
    /// An argument of this call.
    pub fn new(env: &Env, v: &Unknown) -> Self {
        Arg {
            env: env.raw(),
            v: v.raw(),
        }
    }

    /// A value of this call read by raw napi (an element of an argument).
    pub fn from_raw(env: &Env, v: sys::napi_value) -> Self {
        Arg { env: env.raw(), v }
    }

    /// Its JS type.
    pub fn ty(&self) -> ValueType {
        let mut t = 0;
        // SAFETY: live handles of this call (see the type's docs).
        if unsafe { sys::napi_typeof(self.env, self.v, &mut t) } != sys::Status::napi_ok {
            return ValueType::Unknown;
        }
        ValueType::from(t)
    }

    /// `undefined` or `null`.
    pub fn is_nullish(&self) -> bool {
        matches!(self.ty(), ValueType::Undefined | ValueType::Null)
    }

    /// A number; a `TypeError` naming `what` otherwise.
    pub fn number(&self, what: &str) -> Result<f64, Failure> {
        if self.ty() != ValueType::Number {
            return Err(self.wrong(what, "a number"));
        }
        let mut f = 0f64;
        // SAFETY: live handles; a number.
        unsafe { sys::napi_get_value_double(self.env, self.v, &mut f) };
        Ok(f)
    }

    /// A boolean; a `TypeError` naming `what` otherwise.
    pub fn boolean(&self, what: &str) -> Result<bool, Failure> {
        if self.ty() != ValueType::Boolean {
            return Err(self.wrong(what, "a boolean"));
        }
        let mut b = false;
        // SAFETY: live handles; a boolean.
        unsafe { sys::napi_get_value_bool(self.env, self.v, &mut b) };
        Ok(b)
    }

    /// A string; a `TypeError` naming `what` otherwise.
    pub fn string(&self, what: &str) -> Result<String, Failure> {
        if self.ty() != ValueType::String {
            return Err(self.wrong(what, "a string"));
        }
        // SAFETY: live handles; a string.
        unsafe { string_from_js(self.env, self.v) }
            .ok_or_else(|| Failure::Invalid(format!("{what}: unreadable string")))
    }

    /// The `TypeError` for a value that is not `want`.
    pub fn wrong(&self, what: &str, want: &str) -> Failure {
        let got = match self.ty() {
            ValueType::Undefined => "undefined",
            ValueType::Null => "null",
            ValueType::Boolean => "a boolean",
            ValueType::Number => "a number",
            ValueType::String => "a string",
            ValueType::Symbol => "a symbol",
            ValueType::Object if self.is_array() => "an array",
            ValueType::Object => "an object",
            ValueType::Function => "a function",
            ValueType::BigInt => "a bigint",
            _ => "a value of another type",
        };
        Failure::Type(format!("{what} must be {want}, got {got}"))
    }

    fn is_array(&self) -> bool {
        let mut is = false;
        // SAFETY: live handles.
        unsafe { sys::napi_is_array(self.env, self.v, &mut is) };
        is
    }

    /// The own enumerable string-keyed properties of an object (not an
    /// array), in order; a `TypeError` naming `what` otherwise.
    pub fn entries(&self, what: &str) -> Result<Vec<(String, Arg)>, Failure> {
        if self.ty() != ValueType::Object || self.is_array() {
            return Err(self.wrong(what, "an object"));
        }
        let read = || Failure::Invalid(format!("{what}: cannot read its properties"));
        let (env, v) = (self.env, self.v);
        let mut names = ptr::null_mut();
        // SAFETY: live handles of this call.
        let ok = unsafe {
            sys::napi_get_all_property_names(
                env,
                v,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut names,
            )
        };
        if ok != sys::Status::napi_ok {
            return Err(read());
        }
        let mut len = 0u32;
        unsafe { sys::napi_get_array_length(env, names, &mut len) };
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let (mut k, mut e) = (ptr::null_mut(), ptr::null_mut());
            if unsafe { sys::napi_get_element(env, names, i, &mut k) } != sys::Status::napi_ok
                || unsafe { sys::napi_get_property(env, v, k, &mut e) } != sys::Status::napi_ok
            {
                return Err(read());
            }
            let name = unsafe { string_from_js(env, k) }.ok_or_else(read)?;
            out.push((name, Arg { env, v: e }));
        }
        Ok(out)
    }

    /// The elements of an array; a `TypeError` naming `what` otherwise.
    pub fn items(&self, what: &str) -> Result<Vec<sys::napi_value>, Failure> {
        if !self.is_array() {
            return Err(Failure::Type(format!("{what} must be an array")));
        }
        let (env, raw) = (self.env, self.v);
        let mut len = 0u32;
        // SAFETY: live handles of this call; an array.
        unsafe { sys::napi_get_array_length(env, raw, &mut len) };
        (0..len)
            .map(|i| {
                let mut e = ptr::null_mut();
                match unsafe { sys::napi_get_element(env, raw, i, &mut e) } {
                    sys::Status::napi_ok => Ok(e),
                    _ => Err(Failure::Invalid(format!("cannot read {what}[{i}]"))),
                }
            })
            .collect()
    }
}

/// Options of one enqueue, as lib/telha.js passes them (types checked there).
#[napi_derive::napi(object)]
pub struct NativeEnqueueOptions {
    pub scope: Option<String>,
    pub priority: Option<f64>,
    pub delay_ms: Option<f64>,
    pub run_at: Option<f64>,
    pub idempotency_key: Option<String>,
    pub max_attempts: Option<f64>,
    pub expires_in_ms: Option<f64>,
    pub expires_at: Option<f64>,
    pub backoff_base_ms: Option<f64>,
    pub unique_for_ms: Option<f64>,
    pub unique_states: Option<String>,
    pub tags: Option<Vec<String>>,
    pub metadata: Option<std::collections::HashMap<String, String>>,
    pub debounce_ms: Option<f64>,
    pub debounce_max_ms: Option<f64>,
    /// Fan-in: the ids of the jobs this one waits on (issue 43).
    pub after: Option<Vec<String>>,
    /// Fan-in: `fail`, `cancel_rest` or `ignore` (with `after`).
    pub on_child_dead: Option<String>,
    /// The job's key (flow control by key, issue 43; checked by the core).
    pub key: Option<String>,
}

/// The core's options of one enqueue; `at` names them in messages
/// (`options`, `items[3]`).
pub fn enqueue_options(
    o: Option<NativeEnqueueOptions>,
    at: &str,
) -> Result<EnqueueOptions, Failure> {
    let mut e = EnqueueOptions::default();
    let Some(o) = o else {
        return Ok(e);
    };
    if let Some(s) = o.scope {
        e.scope = Some(s.parse::<Scope>()?);
    }
    if let Some(p) = o.priority {
        e.priority = Some(priority(p, &format!("{at}.priority"))?);
    }
    if let Some(d) = o.delay_ms {
        e.delay = Some(delay_ms(d, &format!("{at}.delayMs"))?);
    }
    if let Some(t) = o.run_at {
        e.run_at = Some(instant_ms(t, &format!("{at}.runAt"))?);
    }
    e.idempotency_key = o.idempotency_key;
    if let Some(n) = o.max_attempts {
        let what = format!("{at}.maxAttempts");
        e.max_attempts = Some(table_count(n, &what, "max_attempts")? as u32);
    }
    if let Some(d) = o.expires_in_ms {
        e.expires_in = Some(delay_ms(d, &format!("{at}.expiresInMs"))?);
    }
    if let Some(t) = o.expires_at {
        e.expires_at = Some(instant_ms(t, &format!("{at}.expiresAt"))?);
    }
    if let Some(d) = o.backoff_base_ms {
        e.backoff_base = Some(delay_ms(d, &format!("{at}.backoffBaseMs"))?);
    }
    if let Some(d) = o.unique_for_ms {
        e.unique_for = Some(delay_ms(d, &format!("{at}.uniqueForMs"))?);
    }
    if let Some(s) = o.unique_states {
        e.unique_states = Some(s.parse()?);
    }
    e.tags = o.tags.unwrap_or_default();
    e.metadata = o.metadata.unwrap_or_default().into_iter().collect();
    e.key = o.key;
    if let Some(d) = o.debounce_ms {
        e.debounce = Some(delay_ms(d, &format!("{at}.debounceMs"))?);
    }
    if let Some(d) = o.debounce_max_ms {
        e.debounce_max = Some(delay_ms(d, &format!("{at}.debounceMaxMs"))?);
    }
    if let Some(ids) = o.after {
        e.after = ids
            .iter()
            .map(|id| id.parse::<JobId>())
            .collect::<Result<_, _>>()?;
    }
    if let Some(p) = o.on_child_dead {
        e.on_child_dead = Some(p.parse()?);
    }
    Ok(e)
}

/// Which jobs a lease takes.
pub fn lease_options(
    kinds: Option<Vec<String>>,
    scopes: Option<Vec<String>>,
) -> Result<LeaseOptions, Failure> {
    let mut o = LeaseOptions::default();
    for k in kinds.unwrap_or_default() {
        o.kinds.push(k.parse::<KindPattern>()?);
    }
    for s in scopes.unwrap_or_default() {
        o.scopes.push(s.parse::<Scope>()?);
    }
    Ok(o)
}

/// A lease token from a job's id and generation.
pub fn token(id: &str, generation: f64) -> Result<LeaseToken, Failure> {
    let generation = whole(generation, "the lease's generation", 0, MAX_SAFE)?;
    Ok(LeaseToken {
        id: id.parse::<JobId>()?,
        generation,
    })
}

/// Lease tokens sent as two values instead of 2n: the ids joined with `,`
/// and the generations as a `Float64Array` (one napi call each, not one
/// per element: JS-thread time is what batch calls spend most).
pub fn tokens(ids: &str, generations: &[f64]) -> Result<Vec<LeaseToken>, Failure> {
    if ids.is_empty() && generations.is_empty() {
        return Ok(Vec::new());
    }
    let parts: Vec<&str> = ids.split(',').collect();
    if parts.len() != generations.len() {
        return Err(Failure::Invalid(format!(
            "malformed lease tokens: {} ids for {} generations (an id with a comma?)",
            parts.len(),
            generations.len()
        )));
    }
    parts
        .into_iter()
        .zip(generations)
        .map(|(id, g)| token(id, *g))
        .collect()
}
