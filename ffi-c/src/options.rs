//! `tj_options`: the store configuration, set through the core's key table.
//!
//! `tj_options_set(o, "lease_ttl", "300s")` and `tj_options_set_kind(o,
//! kind, name, text)` take every key of the table (`tj_config_key_at`) in
//! the TOML file's text syntax and go through `Config::set_text` /
//! `set_text_for_kind`: a key added to the core is settable from C with no
//! new function. The typed setters (`tj_options_set_lease_ttl_ms`, ...,
//! `options_typed.rs`) are thin wrappers over the same table, kept for ABI
//! stability.
//!
//! Each setter checks its key's type and range at once (the table's check);
//! the rules across keys (a backoff cap below its base, a per-kind key's
//! kind syntax) are checked by `tj_queue_open`, so the order of the setters
//! never matters. A value a setter refuses is also remembered: the options
//! cannot open a queue until that key is set again successfully, so a
//! refused value never passes silently as the default (setters without an
//! `err` argument report only a status).

use std::collections::BTreeMap;
use std::ffi::c_char;

use telha_jobs_core::config::{keys, Value};
use telha_jobs_core::{Config, Error};

use crate::boundary::{self, handle, handle_mut, opt_string, out, string, write, write_opt, Res};
use crate::config_keys::value_text;
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// A store configuration. Owned by the caller (`tj_options_new` /
/// `tj_options_load`, then `tj_options_free`); `tj_queue_open` copies it, so
/// it may be freed right after. Not thread-safe: do not set it from two
/// threads at once.
#[allow(non_camel_case_types)]
pub struct tj_options {
    config: Config,
    /// Messages of refused values by slot (`lease_ttl`, or the kind and
    /// the key): while any is here, `tj_queue_open` refuses these options.
    refused: BTreeMap<(Option<String>, String), String>,
}

impl tj_options {
    fn boxed(config: Config) -> *mut tj_options {
        Box::into_raw(Box::new(tj_options {
            config,
            refused: BTreeMap::new(),
        }))
    }

    /// The config to open with, or the first value a setter refused.
    pub(crate) fn config_for_open(&self, func: &str) -> Res<Config> {
        match self.refused.values().next() {
            Some(m) => Err(Failure::invalid(format!(
                "{func}: the options hold a value a setter refused ({m}); set it again"
            ))),
            None => Ok(self.config.clone()),
        }
    }

    /// Record what a set of (`kind`, `name`) did: a refused value of a real
    /// slot is remembered until that slot is set successfully. A name that
    /// is no slot (an unknown key, a global key given a kind) set nothing
    /// and has nothing to clear it with: only its status reports it, so a
    /// host may probe for keys a newer library knows.
    fn settle(&mut self, kind: Option<&str>, name: &str, r: Result<(), Error>) -> Res<()> {
        let slot = (kind.map(str::to_string), name.to_string());
        match r {
            Ok(()) => {
                self.refused.remove(&slot);
                Ok(())
            }
            Err(e) => {
                let f = Failure::from(e);
                if keys::key(name).is_ok_and(|k| kind.is_none() || k.per_kind) {
                    self.refused.insert(slot, f.message.clone());
                }
                Err(f)
            }
        }
    }

    /// Set a typed value through the table (the typed setters).
    pub(crate) fn set_value(&mut self, kind: Option<&str>, name: &str, v: Value) -> Res<()> {
        let r = match kind {
            None => self.config.set(name, v),
            Some(k) => self.config.set_for_kind(k, name, v),
        };
        self.settle(kind, name, r)
    }

    /// The internal per-kind map `[jobs.backoff_base_secs_by_kind]` (not a
    /// key of the table); its range is checked by `tj_queue_open`.
    pub(crate) fn set_backoff_base_secs(&mut self, kind: &str, secs: u64) {
        self.config
            .backoff_base_secs_by_kind
            .insert(kind.to_string(), secs);
    }
}

/// New options holding the defaults (each key's `default_value` in
/// `tj_config_key_at`: lease TTL 300 s, reaper every 30 s, 5 attempts,
/// backoff 10 s x4 up to 1 h, completed jobs kept 24 h, no fsync, 16 MiB
/// payloads, prune batch 10000). Never NULL (aborts only when memory is
/// exhausted). Free with `tj_options_free`.
#[no_mangle]
pub extern "C" fn tj_options_new() -> *mut tj_options {
    tj_options::boxed(Config::default())
}

/// The defaults, then the TOML file `path` (when NULL: the file named by
/// `$TELHA_JOBS_CONFIG`, if set), then the `TELHA_JOBS_*` environment
/// variables, validated: what a service usually wants. On success
/// `*options_out` is a new `tj_options` the caller frees.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options_out), `TJ_STATUS_INVALID_UTF8`
/// (path), `TJ_STATUS_INVALID_ARGUMENT` for an unreadable file, bad TOML, an
/// unknown key or an out-of-range value (the message names it). Reads the
/// file and the environment; do not change the environment from another
/// thread meanwhile.
///
/// # Safety
/// `path` is NULL or NUL-terminated; `options_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_load(
    path: *const c_char,
    options_out: *mut *mut tj_options,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_load";
    boundary::run(F, err, || {
        let path = opt_string(F, "path", path)?;
        let options_out = out(F, "options_out", options_out)?;
        let config = Config::load(path.map(std::path::Path::new)).map_err(Failure::from)?;
        write(options_out, tj_options::boxed(config));
        Ok(())
    })
}

/// Free options. `tj_options_free(NULL)` does nothing.
///
/// # Safety
/// `options` is NULL or a `tj_options` from this library not freed before.
#[no_mangle]
pub unsafe extern "C" fn tj_options_free(options: *mut tj_options) {
    boundary::free_box(options);
}

/// Set the key `key` (a name from `tj_config_key_at`, e.g. `"lease_ttl"`)
/// to `value`, in the TOML file's text syntax: durations as `"250ms"`,
/// `"5m"`, `"1h 30m"` or seconds (`"300"`, `"1.5"`); a retention may be
/// `"off"` (keep forever); counts and factors as numbers (`"5"`, `"2.0"`);
/// flags as `"true"`/`"false"` (also `1`/`0`, `yes`/`no`, `on`/`off`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, key, value),
/// `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` for an unknown key
/// (the message lists the valid ones), text that does not parse, or a value
/// out of the key's range (a duration over 100 years, `TJ_MAX_DURATION_MS`;
/// the message names the key). A refused value leaves the options' value as
/// it was, and `tj_queue_open` refuses these options until `key` is set
/// again successfully (an unknown key sets nothing and is not remembered:
/// test for a key with `tj_config_key_at` or by this status).
///
/// # Safety
/// `options` is NULL or a live `tj_options`; `key` and `value` are NULL or
/// NUL-terminated; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set(
    options: *mut tj_options,
    key: *const c_char,
    value: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_set";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let key = string(F, "key", key)?;
        let value = string(F, "value", value)?;
        let r = o.config.set_text(key, value);
        o.settle(None, key, r)
    })
}

/// Set the per-kind key `key` for the jobs of `kind` (an exact kind) to
/// `value`, in the syntax of `tj_options_set`. The per-kind keys are those
/// with `per_kind` in `tj_config_key_at` (`lease_ttl`, `max_attempts`,
/// `backoff_base`, `backoff_factor`, `backoff_cap`); unset ones inherit the
/// global values. A per-kind `backoff_base` `b` sets the kind's base to `b`
/// and raises its cap to at least `b`.
///
/// Errors: as `tj_options_set` (also NULL `kind`), and
/// `TJ_STATUS_INVALID_ARGUMENT` for a key that is not per kind. The kind's
/// syntax is checked by `tj_queue_open`.
///
/// # Safety
/// As `tj_options_set`; `kind` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tj_options_set_kind(
    options: *mut tj_options,
    kind: *const c_char,
    key: *const c_char,
    value: *const c_char,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_set_kind";
    boundary::run(F, err, || {
        let o = handle_mut(F, "options", options)?;
        let kind = string(F, "kind", kind)?;
        let key = string(F, "key", key)?;
        let value = string(F, "value", value)?;
        let r = o.config.set_text_for_kind(kind, key, value);
        o.settle(Some(kind), key, r)
    })
}

/// Copy `text` and its NUL into `buf` (`buf_len` bytes) and its length
/// (without the NUL) to `*len_out`; `buf` NULL with `buf_len` 0 only
/// reports the length.
fn give_text(
    func: &str,
    text: &str,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
) -> Res<()> {
    if buf.is_null() && buf_len == 0 {
        write_opt(len_out, text.len());
        return Ok(());
    }
    let buf = out(func, "buf", buf)?;
    if buf_len <= text.len() {
        return Err(Failure::invalid(format!(
            "{func}: buf_len {buf_len} is too small for the value's {} bytes and its NUL",
            text.len()
        )));
    }
    let dst = unsafe { std::slice::from_raw_parts_mut(buf.cast::<u8>(), text.len() + 1) };
    dst[..text.len()].copy_from_slice(text.as_bytes());
    dst[text.len()] = 0;
    write_opt(len_out, text.len());
    Ok(())
}

/// The value of the key `key` in these options, as text in the syntax
/// `tj_options_set` takes (`"300000ms"`, `"off"`, `"5"`, `"4"`, `"false"`),
/// so it reads back exactly what was set. Writes the text and a NUL into
/// `buf` (`buf_len` bytes) and, when `len_out` is not NULL, its length
/// without the NUL to `*len_out`. With `buf` NULL and `buf_len` 0 only the
/// length is reported (allocate `len + 1`).
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (options, key, buf with a non-zero
/// `buf_len`), `TJ_STATUS_INVALID_UTF8`, `TJ_STATUS_INVALID_ARGUMENT` for an
/// unknown key or a `buf_len` too small (nothing is written).
///
/// # Safety
/// `options` is NULL or live; `key` is NULL or NUL-terminated; `buf` is NULL
/// or holds `buf_len` writable bytes; `len_out` and `err` are NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_options_get(
    options: *const tj_options,
    key: *const c_char,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_get";
    boundary::run(F, err, || {
        let o = handle(F, "options", options)?;
        let key = string(F, "key", key)?;
        let v = o.config.get(key).map_err(Failure::from)?;
        give_text(F, &value_text(v), buf, buf_len, len_out)
    })
}

/// The value `kind` sets for the per-kind key `key`, as `tj_options_get`
/// writes it; the empty string when the kind does not set it (its jobs use
/// the global value).
///
/// Errors: as `tj_options_get` (also NULL `kind`), and
/// `TJ_STATUS_INVALID_ARGUMENT` for a key that is not per kind.
///
/// # Safety
/// As `tj_options_get`; `kind` is NULL or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn tj_options_get_kind(
    options: *const tj_options,
    kind: *const c_char,
    key: *const c_char,
    buf: *mut c_char,
    buf_len: usize,
    len_out: *mut usize,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_options_get_kind";
    boundary::run(F, err, || {
        let o = handle(F, "options", options)?;
        let kind = string(F, "kind", kind)?;
        let key = string(F, "key", key)?;
        let k = keys::key(key).map_err(Failure::from)?;
        if !k.per_kind {
            return Err(Failure::invalid(format!(
                "{F}: {key} is not a per-kind setting; the per-kind ones are {}",
                keys::per_kind_names().join(", ")
            )));
        }
        let text = o
            .config
            .kinds
            .get(kind)
            .and_then(|kc| kc.get(key))
            .map(value_text)
            .unwrap_or_default();
        give_text(F, &text, buf, buf_len, len_out)
    })
}
