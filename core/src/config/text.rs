//! The value syntax shared by the TOML file, the environment and the C
//! setters: durations as humantime text (`"250ms"`, `"5m"`, `"1h 30m"`) or
//! seconds (`"300"`, `"1.5"`), retentions that may be off, flags, numbers.

use std::time::Duration;

use super::keys::{KeyType, Value};
use crate::error::Error;

pub(super) const DURATION_HINT: &str =
    "a duration such as \"250ms\", \"5m\" or \"1h 30m\", or a number of seconds";
pub(super) const RETENTION_HINT: &str = "a duration such as \"24h\" or a number of seconds, \
     or false/\"off\"/\"none\" for none (a retention keeps forever, a limit does not apply)";
const FLAG_HINT: &str = "one of 1, 0, true, false, yes, no, on, off";

/// A duration written as text: whole or fractional seconds, else humantime.
pub(super) fn duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = s.parse::<f64>() {
        // Negative, NaN, infinite or too large: not a duration.
        return Duration::try_from_secs_f64(secs).ok();
    }
    humantime::parse_duration(s).ok()
}

/// A retention: a duration, or one of the words that mean "keep forever".
pub(super) fn retention(s: &str) -> Option<Option<Duration>> {
    match s.trim().to_ascii_lowercase().as_str() {
        "false" | "off" | "none" => Some(None),
        _ => duration(s).map(Some),
    }
}

pub(super) fn flag(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// A value of type `ty` written as text; `None` when it does not parse
/// (ranges are checked by the key, not here).
pub fn parse(ty: KeyType, s: &str) -> Option<Value> {
    Some(match ty {
        KeyType::Duration { .. } => Value::Duration(duration(s)?),
        KeyType::Retention => retention(s)?.map_or(Value::Off, Value::Duration),
        KeyType::Count { .. } => Value::Count(s.trim().parse().ok()?),
        KeyType::Factor | KeyType::Fraction => Value::Float(s.trim().parse().ok()?),
        KeyType::Flag => Value::Flag(flag(s)?),
    })
}

/// What text a key of type `ty` takes, in words.
pub(super) fn hint(ty: KeyType) -> String {
    match ty {
        KeyType::Duration { .. } => DURATION_HINT.to_string(),
        KeyType::Retention => RETENTION_HINT.to_string(),
        KeyType::Count { max, .. } => {
            let t = if max <= u32::MAX as u64 {
                "u32"
            } else {
                "usize"
            };
            format!("a non-negative integer that fits in {t}")
        }
        KeyType::Factor => "a number".to_string(),
        KeyType::Fraction => "a number from 0 to 1".to_string(),
        KeyType::Flag => FLAG_HINT.to_string(),
    }
}

/// `InvalidArgument`: `what` must be (what `ty` takes), got `value`.
pub(super) fn bad(what: &str, ty: KeyType, value: &str) -> Error {
    Error::invalid(format!("{what} must be {}, got {value:?}", hint(ty)))
}

/// A duration for messages.
pub(super) fn fmt(d: Duration) -> humantime::FormattedDuration {
    humantime::format_duration(d)
}
