//! The core's table of settable keys (`telha_jobs::config::keys::KEYS`),
//! readable from C: `tj_config_key_count` and `tj_config_key_at`. Every
//! key listed is settable with `tj_options_set` (and, when per kind, with
//! `tj_options_set_kind`), so a key added to the core needs no new C
//! function.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use telha_jobs_core::config::{keys, KeyType, Value};

use crate::boundary::{self, cstring, out, write};
use crate::error::{tj_error, Failure};
use crate::status::tj_status;

/// One settable key. Every string is static (never free it, valid for the
/// life of the process); `env` is NULL for a key without a variable.
#[allow(non_camel_case_types)]
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct tj_config_key {
    /// The name `tj_options_set` takes, snake_case (`"lease_ttl"`).
    pub name: *const c_char,
    /// Where the value lives in the TOML file, under `[jobs]` (`"backoff.base"`).
    pub toml: *const c_char,
    /// The `TELHA_JOBS_*` variable that overrides it, or NULL.
    pub env: *const c_char,
    /// What it holds: `"duration"` (text such as `"250ms"`, `"5m"`, or
    /// seconds), `"retention"` (a duration, or `"off"` to keep forever),
    /// `"count"` (a whole number in `count_min..=count_max`), `"factor"` (a
    /// number >= 1.0), `"fraction"` (a number from 0 to 1) or `"flag"`
    /// (`"true"`/`"false"`).
    pub value_type: *const c_char,
    /// The unit, for people: `"duration"`, `"attempts"`, `"bytes"`, ...
    pub unit: *const c_char,
    /// The default, in the text syntax `tj_options_set` takes.
    pub default_value: *const c_char,
    /// Also settable per kind (`tj_options_set_kind`).
    pub per_kind: bool,
    /// For a `"count"`: the smallest value allowed (else 0).
    pub count_min: u64,
    /// For a `"count"`: the largest value allowed (else 0).
    pub count_max: u64,
    /// One line saying what it does.
    pub doc: *const c_char,
}

// The table's strings as C strings, made once; the pointers handed out
// point into this static and stay valid for the life of the process.
struct Row {
    name: CString,
    toml: CString,
    env: Option<CString>,
    value_type: &'static std::ffi::CStr,
    unit: CString,
    default_value: CString,
    per_kind: bool,
    count: (u64, u64),
    doc: CString,
}

fn rows() -> &'static [Row] {
    static ROWS: OnceLock<Vec<Row>> = OnceLock::new();
    ROWS.get_or_init(|| {
        keys::KEYS
            .iter()
            .map(|k| Row {
                name: cstring(k.name),
                toml: cstring(k.toml),
                env: k.env.map(cstring),
                value_type: type_name(k.ty),
                unit: cstring(k.unit),
                default_value: cstring(k.default),
                per_kind: k.per_kind,
                count: match k.ty {
                    KeyType::Count { min, max } => (min, max),
                    _ => (0, 0),
                },
                doc: cstring(k.doc),
            })
            .collect()
    })
}

/// The word for a key type, as `tj_config_key.value_type` says it.
fn type_name(ty: KeyType) -> &'static std::ffi::CStr {
    match ty {
        KeyType::Duration { .. } => c"duration",
        KeyType::Retention => c"retention",
        KeyType::Count { .. } => c"count",
        KeyType::Factor => c"factor",
        KeyType::Fraction => c"fraction",
        KeyType::Flag => c"flag",
        // KeyType is non_exhaustive: a type this library does not know yet.
        _ => c"unknown",
    }
}

/// A value as text in the syntax `tj_options_set` takes, so it reads back
/// exactly: whole milliseconds as `"4321ms"`, finer durations in `"ns"`,
/// `"off"`, numbers, `"true"` / `"false"`.
pub(crate) fn value_text(v: Value) -> String {
    match v {
        Value::Duration(d) if d.subsec_nanos() % 1_000_000 == 0 => format!("{}ms", d.as_millis()),
        Value::Duration(d) => format!("{}ns", d.as_nanos()),
        Value::Off => "off".to_string(),
        Value::Count(n) => n.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Flag(b) => b.to_string(),
    }
}

/// How many settable keys there are (`tj_config_key_at` takes 0 up to this,
/// exclusive). Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn tj_config_key_count() -> usize {
    boundary::run_infallible(0, || rows().len())
}

/// Key `index` of the table (0 up to `tj_config_key_count()`), written to
/// `*key_out`. The strings in it are static.
///
/// Errors: `TJ_STATUS_NULL_ARGUMENT` (key_out), `TJ_STATUS_INVALID_ARGUMENT`
/// when `index >= tj_config_key_count()`. Thread-safe; never blocks.
///
/// # Safety
/// `key_out` is NULL or writable; `err` is NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn tj_config_key_at(
    index: usize,
    key_out: *mut tj_config_key,
    err: *mut *mut tj_error,
) -> tj_status {
    const F: &str = "tj_config_key_at";
    boundary::run(F, err, || {
        let key_out = out(F, "key_out", key_out)?;
        let rows = rows();
        let r = rows.get(index).ok_or_else(|| {
            Failure::invalid(format!(
                "{F}: index {index} is past the {} keys",
                rows.len()
            ))
        })?;
        write(
            key_out,
            tj_config_key {
                name: r.name.as_ptr(),
                toml: r.toml.as_ptr(),
                env: r.env.as_ref().map_or(std::ptr::null(), |e| e.as_ptr()),
                value_type: r.value_type.as_ptr(),
                unit: r.unit.as_ptr(),
                default_value: r.default_value.as_ptr(),
                per_kind: r.per_kind,
                count_min: r.count.0,
                count_max: r.count.1,
                doc: r.doc.as_ptr(),
            },
        );
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn values_render_in_the_text_syntax_and_parse_back_to_themselves() {
        let mut c = telha_jobs_core::Config::default();
        for (name, v) in [
            ("lease_ttl", Value::Duration(Duration::from_millis(4321))),
            (
                "lease_ttl",
                Value::Duration(Duration::from_nanos(1_000_500_001)),
            ),
            ("completed_retention", Value::Off),
            ("max_attempts", Value::Count(7)),
            ("backoff_factor", Value::Float(1.75)),
            ("backoff_factor", Value::Float(4.0)),
            ("sync_writes", Value::Flag(true)),
        ] {
            c.set_text(name, &value_text(v)).unwrap();
            assert_eq!(c.get(name).unwrap(), v, "{name}: {}", value_text(v));
        }
    }

    #[test]
    fn the_table_is_the_cores() {
        assert_eq!(tj_config_key_count(), keys::KEYS.len());
        for (i, k) in keys::KEYS.iter().enumerate() {
            let mut out = std::mem::MaybeUninit::<tj_config_key>::uninit();
            let s = unsafe { tj_config_key_at(i, out.as_mut_ptr(), std::ptr::null_mut()) };
            assert_eq!(s, tj_status::TJ_STATUS_OK);
            let got = unsafe { out.assume_init() };
            let name = unsafe { std::ffi::CStr::from_ptr(got.name) };
            assert_eq!(name.to_str().unwrap(), k.name);
            assert_ne!(type_name(k.ty), c"unknown", "{}", k.name);
        }
    }
}
