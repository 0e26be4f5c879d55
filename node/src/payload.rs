//! JS values <-> the cross-language payload convention
//! (`telha_jobs::payload`: a version byte, then one msgpack value).
//!
//! In: a `Buffer` / `Uint8Array` is stored untouched and recorded as
//! [`Encoding::Bytes`]; any other plain value (object, array, string,
//! number, bigint, boolean, null) becomes an `rmpv::Value`, is encoded by
//! the core and recorded as [`Encoding::Value`]. Out: `payload::read`
//! decides: bytes come back as a `Buffer` (even when they happen to look
//! like the convention), values as values, and rows written before
//! encodings were recorded ([`Encoding::Unknown`]) as before: a value when
//! the bytes follow the convention, else a `Buffer`. Conversions read and
//! build JS values, so they run on the JS thread; the msgpack work itself
//! is done by the core.

use std::ffi::c_char;
use std::ptr;

use napi::bindgen_prelude::{ToNapiValue, TypeName};
use napi::{sys, ValueType};
use telha_jobs::payload::{self, Value, MAX_DEPTH};
use telha_jobs::Encoding;

use crate::errors::Failure;

use crate::args::MAX_SAFE;

/// The bytes to store for a JS payload or result, and how they were made.
/// `undefined` and `null` are the convention's nil; bytes pass through
/// untouched.
///
/// # Safety
/// `env` and `v` must be live handles of the current JS thread.
/// `what` names the value in error messages (built only when needed).
pub unsafe fn bytes_from_js(
    env: sys::napi_env,
    v: sys::napi_value,
    what: impl FnOnce() -> String,
) -> Result<(Vec<u8>, Encoding), Failure> {
    if let Some(b) = unsafe { byte_view(env, v) } {
        return Ok((b.to_vec(), Encoding::Bytes));
    }
    let protos = Protos::new();
    let value = unsafe { value_from_js(env, v, 0, &what(), &protos) }?;
    let bytes = payload::encode(&value).map_err(Failure::Core)?;
    Ok((bytes, Encoding::Value))
}

/// The stored bytes of a `null` (or `undefined`) result: the convention's nil.
pub fn nil() -> Vec<u8> {
    // Encoding nil cannot fail; the fallback is its known encoding.
    payload::encode(&Value::Nil).unwrap_or_else(|_| vec![payload::PAYLOAD_MSGPACK_V1, 0xc0])
}

/// The bytes of a `Buffer` or `Uint8Array` (borrowed from JS), else `None`.
unsafe fn byte_view<'a>(env: sys::napi_env, v: sys::napi_value) -> Option<&'a [u8]> {
    let mut is = false;
    if unsafe { sys::napi_is_buffer(env, v, &mut is) } == sys::Status::napi_ok && is {
        let mut data = ptr::null_mut();
        let mut len = 0usize;
        if unsafe { sys::napi_get_buffer_info(env, v, &mut data, &mut len) } != sys::Status::napi_ok
        {
            return None;
        }
        return Some(slice(data.cast(), len));
    }
    let mut is = false;
    if unsafe { sys::napi_is_typedarray(env, v, &mut is) } == sys::Status::napi_ok && is {
        let mut ty = 0;
        let mut len = 0usize;
        let mut data = ptr::null_mut();
        let mut ab = ptr::null_mut();
        let mut off = 0usize;
        if unsafe {
            sys::napi_get_typedarray_info(env, v, &mut ty, &mut len, &mut data, &mut ab, &mut off)
        } != sys::Status::napi_ok
            || ty != sys::TypedarrayType::uint8_array
        {
            return None;
        }
        return Some(slice(data.cast(), len));
    }
    None
}

fn slice<'a>(data: *const u8, len: usize) -> &'a [u8] {
    if len == 0 || data.is_null() {
        &[]
    } else {
        // SAFETY: napi handed us `len` bytes at `data`, alive while the JS
        // value is (the caller copies them before returning to JS).
        unsafe { std::slice::from_raw_parts(data, len) }
    }
}

/// `Object.prototype`, to tell plain objects from class instances; read on
/// first need (scalars and arrays never need it).
struct Protos {
    object: std::cell::Cell<Option<sys::napi_value>>,
}

impl Protos {
    fn new() -> Self {
        Protos {
            object: std::cell::Cell::new(None),
        }
    }

    unsafe fn object(&self, env: sys::napi_env) -> Result<sys::napi_value, Failure> {
        if let Some(o) = self.object.get() {
            return Ok(o);
        }
        let o = unsafe { Self::read(env) }?;
        self.object.set(Some(o));
        Ok(o)
    }

    unsafe fn read(env: sys::napi_env) -> Result<sys::napi_value, Failure> {
        let mut global = ptr::null_mut();
        let mut object = ptr::null_mut();
        let mut proto = ptr::null_mut();
        let ok = unsafe {
            sys::napi_get_global(env, &mut global) == sys::Status::napi_ok
                && sys::napi_get_named_property(env, global, c"Object".as_ptr(), &mut object)
                    == sys::Status::napi_ok
                && sys::napi_get_named_property(env, object, c"prototype".as_ptr(), &mut proto)
                    == sys::Status::napi_ok
        };
        if !ok {
            return Err(Failure::Invalid("cannot read Object.prototype".into()));
        }
        Ok(proto)
    }
}

fn type_of(env: sys::napi_env, v: sys::napi_value) -> ValueType {
    let mut t = 0;
    // SAFETY: live handles (see callers).
    if unsafe { sys::napi_typeof(env, v, &mut t) } != sys::Status::napi_ok {
        return ValueType::Unknown;
    }
    ValueType::from(t)
}

/// Read a JS string (any JS string is valid UTF-16; lone surrogates become U+FFFD).
pub(crate) unsafe fn string_from_js(env: sys::napi_env, v: sys::napi_value) -> Option<String> {
    let mut len = 0usize;
    if unsafe { sys::napi_get_value_string_utf8(env, v, ptr::null_mut(), 0, &mut len) }
        != sys::Status::napi_ok
    {
        return None;
    }
    let mut buf = vec![0u8; len + 1];
    let mut written = 0usize;
    if unsafe {
        sys::napi_get_value_string_utf8(
            env,
            v,
            buf.as_mut_ptr() as *mut c_char,
            buf.len(),
            &mut written,
        )
    } != sys::Status::napi_ok
    {
        return None;
    }
    buf.truncate(written);
    String::from_utf8(buf).ok()
}

unsafe fn value_from_js(
    env: sys::napi_env,
    v: sys::napi_value,
    depth: usize,
    at: &str,
    protos: &Protos,
) -> Result<Value, Failure> {
    if depth > MAX_DEPTH {
        return Err(Failure::Invalid(format!(
            "{at}: nested deeper than {MAX_DEPTH} levels (a cycle?)"
        )));
    }
    match type_of(env, v) {
        ValueType::Undefined | ValueType::Null => Ok(Value::Nil),
        ValueType::Boolean => {
            let mut b = false;
            unsafe { sys::napi_get_value_bool(env, v, &mut b) };
            Ok(Value::Boolean(b))
        }
        ValueType::Number => {
            let mut f = 0f64;
            unsafe { sys::napi_get_value_double(env, v, &mut f) };
            // Whole numbers travel as msgpack integers, so Python reads an int.
            if f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_SAFE as f64 {
                Ok(Value::from(f as i64))
            } else {
                Ok(Value::F64(f))
            }
        }
        ValueType::BigInt => {
            let (mut i, mut lossless) = (0i64, false);
            unsafe { sys::napi_get_value_bigint_int64(env, v, &mut i, &mut lossless) };
            if lossless {
                return Ok(Value::from(i));
            }
            let (mut u, mut lossless) = (0u64, false);
            unsafe { sys::napi_get_value_bigint_uint64(env, v, &mut u, &mut lossless) };
            if lossless {
                return Ok(Value::from(u));
            }
            Err(Failure::Invalid(format!(
                "{at}: a BigInt outside the 64-bit range cannot be encoded"
            )))
        }
        ValueType::String => unsafe { string_from_js(env, v) }
            .map(Value::from)
            .ok_or_else(|| Failure::Invalid(format!("{at}: unreadable string"))),
        ValueType::Object => unsafe { object_from_js(env, v, depth, at, protos) },
        other => Err(Failure::Type(format!(
            "{at}: a {} cannot be encoded; pass a Buffer, or plain objects, arrays, strings, \
             numbers, bigints, booleans and null",
            type_name(other)
        ))),
    }
}

fn type_name(t: ValueType) -> &'static str {
    match t {
        ValueType::Symbol => "symbol",
        ValueType::Function => "function",
        ValueType::External => "native external",
        _ => "value of this type",
    }
}

unsafe fn object_from_js(
    env: sys::napi_env,
    v: sys::napi_value,
    depth: usize,
    at: &str,
    protos: &Protos,
) -> Result<Value, Failure> {
    if let Some(b) = unsafe { byte_view(env, v) } {
        return Ok(Value::Binary(b.to_vec()));
    }
    let read_err = || Failure::Invalid(format!("{at}: cannot read a property"));
    let mut is_array = false;
    unsafe { sys::napi_is_array(env, v, &mut is_array) };
    if is_array {
        let mut len = 0u32;
        unsafe { sys::napi_get_array_length(env, v, &mut len) };
        let mut out = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut e = ptr::null_mut();
            if unsafe { sys::napi_get_element(env, v, i, &mut e) } != sys::Status::napi_ok {
                return Err(read_err());
            }
            out.push(unsafe { value_from_js(env, e, depth + 1, &format!("{at}[{i}]"), protos) }?);
        }
        return Ok(Value::Array(out));
    }
    // Plain objects only: their prototype is Object.prototype or null.
    let mut proto = ptr::null_mut();
    unsafe { sys::napi_get_prototype(env, v, &mut proto) };
    let mut plain = type_of(env, proto) == ValueType::Null;
    if !plain {
        let object = unsafe { protos.object(env) }?;
        unsafe { sys::napi_strict_equals(env, proto, object, &mut plain) };
    }
    if !plain {
        return Err(Failure::Type(format!(
            "{at}: only plain objects are encoded (not a Date, Map, Set, typed array \
             other than Uint8Array, or class instance); convert it first or pass a Buffer"
        )));
    }
    let mut names = ptr::null_mut();
    if unsafe { sys::napi_get_property_names(env, v, &mut names) } != sys::Status::napi_ok {
        return Err(read_err());
    }
    let mut len = 0u32;
    unsafe { sys::napi_get_array_length(env, names, &mut len) };
    let mut out = Vec::with_capacity(len as usize);
    for i in 0..len {
        let mut k = ptr::null_mut();
        let mut e = ptr::null_mut();
        if unsafe { sys::napi_get_element(env, names, i, &mut k) } != sys::Status::napi_ok
            || unsafe { sys::napi_get_property(env, v, k, &mut e) } != sys::Status::napi_ok
        {
            return Err(read_err());
        }
        // Property names come back as strings (numbers converted).
        let mut ks = ptr::null_mut();
        unsafe { sys::napi_coerce_to_string(env, k, &mut ks) };
        let key = unsafe { string_from_js(env, ks) }.ok_or_else(read_err)?;
        let val = unsafe { value_from_js(env, e, depth + 1, &format!("{at}.{key}"), protos) }?;
        out.push((Value::from(key), val));
    }
    Ok(Value::Map(out))
}

/// A stored payload or result on its way to JS: what `payload::read` says
/// for its bytes and encoding, a value (decoded off the JS thread) or the
/// bytes as a `Buffer`.
pub struct Payload {
    value: Option<Value>,
    bytes: Vec<u8>,
}

impl Payload {
    /// Read `bytes` written with `encoding` now (call it off the JS thread).
    pub fn new(bytes: Vec<u8>, encoding: Encoding) -> Self {
        Payload {
            value: payload::read(&bytes, encoding),
            bytes,
        }
    }
}

/// A plain value on its way to JS (settings, defaults).
pub struct Plain(pub Value);

impl TypeName for Plain {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Plain {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        unsafe { value_to_js(env, val.0) }
    }
}

impl TypeName for Payload {
    fn type_name() -> &'static str {
        "unknown"
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Payload {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.value {
            Some(v) => unsafe { value_to_js(env, v) },
            None => unsafe { bytes_to_js(env, &val.bytes) },
        }
    }
}

macro_rules! check {
    ($e:expr) => {
        napi::check_status!($e, "building a payload value")?
    };
}

/// Build the JS value of `v`: maps become plain objects, binary a `Buffer`,
/// integers a number when exact, else a `BigInt`.
pub(crate) unsafe fn value_to_js(env: sys::napi_env, v: Value) -> napi::Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    match v {
        Value::Nil => check!(unsafe { sys::napi_get_null(env, &mut out) }),
        Value::Boolean(b) => return unsafe { bool::to_napi_value(env, b) },
        Value::Integer(i) => {
            // `unsigned_abs`: `abs` of i64::MIN overflows (a panic here).
            if let Some(n) = i.as_i64().filter(|n| n.unsigned_abs() <= MAX_SAFE) {
                return unsafe { f64::to_napi_value(env, n as f64) };
            } else if let Some(n) = i.as_i64() {
                check!(unsafe { sys::napi_create_bigint_int64(env, n, &mut out) });
            } else {
                let n = i.as_u64().unwrap_or(u64::MAX);
                check!(unsafe { sys::napi_create_bigint_uint64(env, n, &mut out) });
            }
        }
        Value::F32(f) => return unsafe { f64::to_napi_value(env, f as f64) },
        Value::F64(f) => return unsafe { f64::to_napi_value(env, f) },
        Value::String(s) => {
            return if s.is_str() {
                unsafe { String::to_napi_value(env, s.into_str().unwrap_or_default()) }
            } else {
                // Not UTF-8 (written by some other msgpack producer): the bytes.
                unsafe { bytes_to_js(env, s.as_bytes()) }
            };
        }
        Value::Binary(b) => return unsafe { bytes_to_js(env, &b) },
        Value::Ext(_, b) => return unsafe { bytes_to_js(env, &b) },
        Value::Array(items) => {
            check!(unsafe { sys::napi_create_array_with_length(env, items.len(), &mut out) });
            for (i, item) in items.into_iter().enumerate() {
                let e = unsafe { value_to_js(env, item) }?;
                check!(unsafe { sys::napi_set_element(env, out, i as u32, e) });
            }
        }
        Value::Map(entries) => {
            check!(unsafe { sys::napi_create_object(env, &mut out) });
            for (k, item) in entries {
                let key = match k {
                    Value::String(s) => s.into_str().unwrap_or_default(),
                    other => other.to_string(),
                };
                let k = unsafe { String::to_napi_value(env, key) }?;
                let e = unsafe { value_to_js(env, item) }?;
                check!(unsafe { sys::napi_set_property(env, out, k, e) });
            }
        }
    }
    Ok(out)
}

/// A `Buffer` holding a copy of `b`. A copy into V8's heap is cheaper than an
/// external buffer (no finalizer to register) for the small payloads jobs carry.
///
/// # Safety
/// `env` must be the live env of the current JS thread.
pub unsafe fn bytes_to_js(env: sys::napi_env, b: &[u8]) -> napi::Result<sys::napi_value> {
    let mut out = ptr::null_mut();
    let mut data = ptr::null_mut();
    napi::check_status!(
        unsafe {
            sys::napi_create_buffer_copy(env, b.len(), b.as_ptr().cast(), &mut data, &mut out)
        },
        "creating a Buffer"
    )?;
    Ok(out)
}

/// Bytes on their way to JS, as a `Buffer` (see [`bytes_to_js`]).
pub struct Bytes(pub Vec<u8>);

impl TypeName for Bytes {
    fn type_name() -> &'static str {
        "Buffer"
    }
    fn value_type() -> ValueType {
        ValueType::Object
    }
}

impl ToNapiValue for Bytes {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        unsafe { bytes_to_js(env, &val.0) }
    }
}

/// An optional value on its way to JS: the value, or `null` (where a plain
/// `Option` field of an object would be left out, reading `undefined`).
pub struct OrNull<T>(pub Option<T>);

impl<T: TypeName> TypeName for OrNull<T> {
    fn type_name() -> &'static str {
        T::type_name()
    }
    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl<T: ToNapiValue> ToNapiValue for OrNull<T> {
    unsafe fn to_napi_value(env: sys::napi_env, val: Self) -> napi::Result<sys::napi_value> {
        match val.0 {
            Some(v) => unsafe { T::to_napi_value(env, v) },
            None => {
                let mut out = ptr::null_mut();
                check!(unsafe { sys::napi_get_null(env, &mut out) });
                Ok(out)
            }
        }
    }
}
