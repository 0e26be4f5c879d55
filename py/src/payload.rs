//! Python values <-> `telha_jobs::payload::Value`, the cross-language
//! payload convention (version byte + msgpack). The encoding itself is the
//! core's (`payload::encode` / `payload::decode`); this file only maps types.

use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyMemoryView, PyString, PyTuple,
};
use telha_jobs::payload::{self, Value, MAX_DEPTH};

use crate::errors::{invalid, type_error, IntoPyResult};

/// The bytes to store for a payload or result argument: `bytes`,
/// `bytearray` and `memoryview` as they are; any other supported value
/// encoded by the convention.
pub fn to_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(b.as_bytes().to_vec());
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(b.to_vec());
    }
    if obj.is_instance_of::<PyMemoryView>() {
        return Ok(obj
            .call_method0("tobytes")?
            .cast::<PyBytes>()?
            .as_bytes()
            .to_vec());
    }
    let v = to_value(obj, what, 0)?;
    payload::encode(&v).py_err(obj.py())
}

/// What a reader sees for stored bytes: the decoded value when they follow
/// the convention, else the bytes themselves.
pub fn from_bytes(py: Python<'_>, bytes: &[u8]) -> PyResult<Py<PyAny>> {
    match payload::decode(bytes) {
        Some(v) => from_value(py, &v),
        None => Ok(PyBytes::new(py, bytes).into_any().unbind()),
    }
}

/// A Python value as a convention value. Dicts need `str` keys; anything
/// outside dict / list / tuple / str / int / float / bool / None / bytes is
/// a `TypeError` naming its type.
pub fn to_value(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    let py = obj.py();
    if depth > MAX_DEPTH {
        return Err(invalid(
            py,
            format!("{what} nests deeper than {MAX_DEPTH} levels"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Nil);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Boolean(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::from(i));
        }
        if let Ok(u) = obj.extract::<u64>() {
            return Ok(Value::from(u));
        }
        return Err(invalid(
            py,
            format!("{what}: integer {obj} does not fit in 64 bits (msgpack's range)"),
        ));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::F64(f.value()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::from(s.to_cow()?.as_ref()));
    }
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Value::Binary(b.as_bytes().to_vec()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Value::Binary(b.to_vec()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut m = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(ks) = k.cast::<PyString>() else {
                return Err(type_error(format!(
                    "{what}: dict keys must be str, got {}",
                    type_name(&k)
                )));
            };
            m.push((
                Value::from(ks.to_cow()?.as_ref()),
                to_value(&v, what, depth + 1)?,
            ));
        }
        return Ok(Value::Map(m));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| to_value(&v, what, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|v| to_value(&v, what, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    Err(type_error(format!(
        "{what}: cannot encode a {} value; use bytes, or dict / list / tuple / str / int / \
         float / bool / None",
        type_name(obj)
    )))
}

/// A convention value as a Python value (maps become dicts, arrays lists,
/// binary bytes; a string that is not UTF-8 becomes bytes).
pub fn from_value(py: Python<'_>, v: &Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Nil => py.None(),
        Value::Boolean(b) => PyBool::new(py, *b).to_owned().into_any().unbind(),
        Value::Integer(i) => {
            if let Some(n) = i.as_i64() {
                n.into_pyobject(py)?.into_any().unbind()
            } else {
                i.as_u64()
                    .unwrap_or(u64::MAX)
                    .into_pyobject(py)?
                    .into_any()
                    .unbind()
            }
        }
        Value::F32(f) => (*f as f64).into_pyobject(py)?.into_any().unbind(),
        Value::F64(f) => f.into_pyobject(py)?.into_any().unbind(),
        Value::String(s) => match s.as_str() {
            Some(s) => PyString::new(py, s).into_any().unbind(),
            None => PyBytes::new(py, s.as_bytes()).into_any().unbind(),
        },
        Value::Binary(b) => PyBytes::new(py, b).into_any().unbind(),
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| from_value(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        Value::Map(m) => {
            let d = PyDict::new(py);
            for (k, x) in m {
                d.set_item(from_value(py, k)?, from_value(py, x)?)?;
            }
            d.into_any().unbind()
        }
        Value::Ext(_, data) => PyBytes::new(py, data).into_any().unbind(),
    })
}

/// `type(obj).__name__`, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}
