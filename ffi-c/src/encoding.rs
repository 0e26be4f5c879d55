//! `tj_encoding`: how a payload or result was made, recorded beside it so
//! the Python and Node bindings hand back exactly what they were given. C
//! always sees the raw bytes; it may record an encoding (enqueue options,
//! `tj_queue_complete_with_encoding`) and read one back (job, job info).

use std::ffi::c_char;

use telha_jobs_core::Encoding;

use crate::boundary::Res;
use crate::error::Failure;

/// How the bytes of a payload or result were made. The numbers equal the
/// core's stored codes and never change.
#[allow(non_camel_case_types)]
#[repr(u32)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum tj_encoding {
    /// Not recorded (C's default, and rows written before encodings were):
    /// the bindings read by looking, so bytes that follow the convention
    /// decode as a value.
    TJ_ENCODING_UNKNOWN = 0,
    /// The caller's own bytes: the bindings always hand them back as bytes
    /// (a Python `bytes`, a Node `Buffer`).
    TJ_ENCODING_BYTES = 1,
    /// One value of the cross-language convention (`0x01` + msgpack): the
    /// bindings decode it.
    TJ_ENCODING_VALUE = 2,
}

impl From<Encoding> for tj_encoding {
    fn from(e: Encoding) -> Self {
        match e {
            Encoding::Bytes => tj_encoding::TJ_ENCODING_BYTES,
            Encoding::Value => tj_encoding::TJ_ENCODING_VALUE,
            // Encoding is non_exhaustive: one this library does not know
            // reads as unknown (look at the bytes), as the core reads it.
            _ => tj_encoding::TJ_ENCODING_UNKNOWN,
        }
    }
}

/// The core encoding for a number from C; `InvalidArgument` naming `func`
/// for a number that is not a `tj_encoding`.
pub(crate) fn encoding_from_u32(func: &str, v: u32) -> Res<Encoding> {
    match v {
        0 => Ok(Encoding::Unknown),
        1 => Ok(Encoding::Bytes),
        2 => Ok(Encoding::Value),
        _ => Err(Failure::invalid(format!(
            "{func}: encoding {v} is not a tj_encoding (0 unknown, 1 bytes, 2 value)"
        ))),
    }
}

/// The lowercase name of `encoding` (`"unknown"`, `"bytes"`, `"value"`), or
/// `"unknown"` for a number that is not a `tj_encoding`. Static storage:
/// never free it. Thread-safe; never fails.
#[no_mangle]
pub extern "C" fn tj_encoding_name(encoding: u32) -> *const c_char {
    match encoding {
        1 => c"bytes",
        2 => c"value",
        _ => c"unknown",
    }
    .as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_encoding_keeps_the_cores_number_and_name() {
        for e in [Encoding::Unknown, Encoding::Bytes, Encoding::Value] {
            let c = tj_encoding::from(e) as u32;
            assert_eq!(c, u32::from(e.code()));
            assert_eq!(encoding_from_u32("t", c).unwrap(), e);
            let name = unsafe { std::ffi::CStr::from_ptr(tj_encoding_name(c)) };
            assert_eq!(name.to_str().unwrap(), e.as_str());
        }
        assert!(encoding_from_u32("t", 3).is_err());
    }
}
