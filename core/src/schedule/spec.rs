//! Schedule specs: when a schedule's slots fall.
//!
//! Two forms:
//!
//! - **cron**: 5 fields (`minute hour day-of-month month day-of-week`) or 6
//!   with seconds first, plus the `@daily`-style nicknames, evaluated in an
//!   IANA time zone (UTC when none is named). Parsed and evaluated by
//!   [croner] on [jiff]'s time zones (the IANA database is bundled into the
//!   build, so every machine reads a spec the same way). Daylight-saving
//!   rules follow Vixie cron: a fixed-time slot that falls in a spring-forward
//!   gap fires once right after the gap, one in a fall-back overlap fires
//!   once (its first pass); wildcard and step fields fire as the wall clock
//!   passes them.
//! - **every**: `every 5m`, `every 1h30m` (humantime units; at least 1 s),
//!   slots at `anchor + k × interval` (the anchor defaults to the Unix
//!   epoch), so a restart never shifts them.
//!
//! Instants are milliseconds since the Unix epoch; slots fall on whole
//! seconds for cron specs and on the anchor's grid for intervals.

use std::time::Duration;

use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;
use jiff::tz::TimeZone;
use jiff::Timestamp;

use crate::error::{Error, Result};
use crate::limits::MAX_INSTANT_MS;

/// The shortest interval an `every` spec takes.
pub const MIN_INTERVAL: Duration = Duration::from_secs(1);

/// The most fire times [`next_times`] answers at once.
pub const MAX_NEXT_TIMES: usize = 1000;

/// The longest spec text.
pub const MAX_SPEC_LEN: usize = 256;

/// A parsed spec, ready to say when its slots fall.
#[derive(Debug, Clone)]
pub enum Spec {
    /// A cron pattern in a time zone.
    Cron {
        /// The parsed pattern.
        cron: Box<Cron>,
        /// Where it is evaluated.
        tz: TimeZone,
    },
    /// A fixed interval on a grid.
    Every {
        /// The interval, in milliseconds (≥ 1,000).
        every_ms: u64,
        /// A slot instant: the grid is `anchor + k × every_ms`.
        anchor: u64,
    },
}

impl Spec {
    /// Parse `text` with its time zone (cron only; `None` is UTC) and
    /// anchor (intervals only; `None` is the Unix epoch).
    /// `InvalidArgument` naming what is wrong: an unparsable pattern, an
    /// unknown zone, an interval under 1 s, a zone given to an interval or an
    /// anchor to a cron spec, a pattern that never fires.
    pub fn parse(text: &str, timezone: Option<&str>, anchor: Option<u64>) -> Result<Spec> {
        let t = text.trim();
        if t.is_empty() {
            return Err(Error::invalid("schedule spec is empty"));
        }
        if t.len() > MAX_SPEC_LEN {
            return Err(Error::invalid(format!(
                "schedule spec is {} bytes, over the limit of {MAX_SPEC_LEN}",
                t.len()
            )));
        }
        if let Some(rest) = every_text(t) {
            if let Some(tz) = timezone {
                return Err(Error::invalid(format!(
                    "schedule spec {t:?} is an interval: a time zone ({tz:?}) applies to cron specs only"
                )));
            }
            let d = humantime::parse_duration(rest.trim()).map_err(|e| {
                Error::invalid(format!(
                    "schedule spec {t:?}: {:?} is not a duration ({e}); write e.g. \"every 5m\"",
                    rest.trim()
                ))
            })?;
            if d < MIN_INTERVAL {
                return Err(Error::invalid(format!(
                    "schedule spec {t:?}: the interval must be at least 1s, got {d:?}"
                )));
            }
            let every_ms = u64::try_from(d.as_millis())
                .ok()
                .filter(|ms| *ms <= MAX_INSTANT_MS)
                .ok_or_else(|| {
                    Error::invalid(format!("schedule spec {t:?}: the interval is too long"))
                })?;
            let anchor = crate::limits::check_instant("anchor", anchor.unwrap_or(0))?;
            return Ok(Spec::Every { every_ms, anchor });
        }
        if anchor.is_some() {
            return Err(Error::invalid(format!(
                "schedule spec {t:?} is a cron pattern: an anchor applies to intervals only"
            )));
        }
        let cron = CronParser::builder()
            .seconds(Seconds::Optional)
            .year(Year::Disallowed)
            .build()
            .parse(t)
            .map_err(|e| {
                Error::invalid(format!("schedule spec {t:?} is not a cron pattern: {e}"))
            })?;
        let tz = match timezone {
            None => TimeZone::UTC,
            Some(name) => time_zone(name)?,
        };
        let spec = Spec::Cron {
            cron: Box::new(cron),
            tz,
        };
        Ok(spec)
    }

    /// The first slot strictly after `t_ms`, or `None` when there is none
    /// before the latest supported instant (year 9999; cron searches end in
    /// the year 5000).
    pub fn next_after(&self, t_ms: u64) -> Option<u64> {
        match self {
            Spec::Every { every_ms, anchor } => {
                let next = if t_ms < *anchor {
                    // The grid runs backwards from the anchor too.
                    let back = (anchor - t_ms).div_ceil(*every_ms).saturating_sub(1);
                    anchor - back * every_ms
                } else {
                    let k = (t_ms - anchor) / every_ms + 1;
                    anchor.checked_add(k.checked_mul(*every_ms)?)?
                };
                let next = if next <= t_ms {
                    next.checked_add(*every_ms)?
                } else {
                    next
                };
                (next <= MAX_INSTANT_MS).then_some(next)
            }
            Spec::Cron { cron, tz } => {
                // Slots are whole seconds: from the second `t_ms` falls in.
                let secs = i64::try_from(t_ms / 1000).ok()?;
                let start = Timestamp::from_second(secs).ok()?.to_zoned(tz.clone());
                let next = cron.find_next_occurrence(&start, false).ok()?;
                let ms = u64::try_from(next.timestamp().as_millisecond()).ok()?;
                (ms > t_ms && ms <= MAX_INSTANT_MS).then_some(ms)
            }
        }
    }

    /// The latest slot at or before `t_ms`, if any since `after` (exclusive).
    pub fn latest_at_or_before(&self, after: u64, t_ms: u64) -> Option<u64> {
        match self {
            Spec::Every { every_ms, anchor } => {
                if t_ms < *anchor {
                    let back = (anchor - t_ms).div_ceil(*every_ms);
                    let s = anchor.checked_sub(back.checked_mul(*every_ms)?)?;
                    return (s > after).then_some(s);
                }
                let s = anchor + (t_ms - anchor) / every_ms * every_ms;
                (s > after).then_some(s)
            }
            Spec::Cron { cron, tz } => {
                let secs = i64::try_from(t_ms / 1000).ok()?;
                let start = Timestamp::from_second(secs).ok()?.to_zoned(tz.clone());
                let prev = cron.find_previous_occurrence(&start, true).ok()?;
                let ms = u64::try_from(prev.timestamp().as_millisecond()).ok()?;
                (ms > after && ms <= t_ms).then_some(ms)
            }
        }
    }

    /// How many slots fall in `(after, until]`, counting at most `cap`
    /// (an interval's count is exact arithmetic; a cron spec's is walked).
    pub fn count_between(&self, after: u64, until: u64, cap: u64) -> u64 {
        if until <= after {
            return 0;
        }
        match self {
            Spec::Every { .. } => {
                let Some(first) = self.next_after(after) else {
                    return 0;
                };
                let Some(last) = self.latest_at_or_before(after, until) else {
                    return 0;
                };
                let Spec::Every { every_ms, .. } = self else {
                    unreachable!()
                };
                if last < first {
                    0
                } else {
                    ((last - first) / every_ms + 1).min(cap)
                }
            }
            Spec::Cron { .. } => {
                let mut n = 0;
                let mut t = after;
                while n < cap {
                    match self.next_after(t) {
                        Some(s) if s <= until => {
                            n += 1;
                            t = s;
                        }
                        _ => break,
                    }
                }
                n
            }
        }
    }
}

/// `every 5m` (or `@every 5m`): the duration text after the word.
fn every_text(t: &str) -> Option<&str> {
    let lower = t.get(..6).map(str::to_ascii_lowercase);
    match lower.as_deref() {
        Some("every ") => Some(&t[6..]),
        Some("@every") if t[6..].starts_with(char::is_whitespace) => Some(&t[6..]),
        _ => None,
    }
}

/// The IANA time zone `name` from the bundled database; `InvalidArgument`
/// for a name it does not hold.
pub fn time_zone(name: &str) -> Result<TimeZone> {
    if name.is_empty() || name.len() > 64 {
        return Err(Error::invalid(format!(
            "time zone {name:?} is not an IANA time zone name (e.g. \"Europe/Lisbon\")"
        )));
    }
    TimeZone::get(name).map_err(|_| {
        Error::invalid(format!(
            "unknown time zone {name:?}: not in the IANA time zone database (e.g. \"Europe/Lisbon\", \"UTC\")"
        ))
    })
}

/// The next `n` (at most [`MAX_NEXT_TIMES`]) fire times of a spec after
/// `after_ms`: how to check a spec before saving it. Errors as
/// [`Spec::parse`]; fewer than `n` when the spec stops firing.
pub fn next_times(
    spec: &str,
    timezone: Option<&str>,
    anchor: Option<u64>,
    after_ms: u64,
    n: usize,
) -> Result<Vec<u64>> {
    if n > MAX_NEXT_TIMES {
        return Err(Error::invalid(format!(
            "at most {MAX_NEXT_TIMES} fire times at once, asked for {n}"
        )));
    }
    crate::limits::check_instant("after", after_ms)?;
    let s = Spec::parse(spec, timezone, anchor)?;
    let mut out = Vec::with_capacity(n);
    let mut t = after_ms;
    while out.len() < n {
        match s.next_after(t) {
            Some(x) => {
                out.push(x);
                t = x;
            }
            None => break,
        }
    }
    Ok(out)
}

/// Whether `text` is an interval spec (`every …`).
pub fn is_interval(text: &str) -> bool {
    every_text(text.trim()).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: u64 = 3_600_000;

    fn ms(z: &str) -> u64 {
        let t: Timestamp = z.parse().unwrap();
        t.as_millisecond() as u64
    }

    #[test]
    fn five_and_six_fields() {
        let s = Spec::parse("0 3 * * *", None, None).unwrap();
        assert_eq!(
            s.next_after(ms("2026-01-01T03:00:00Z")),
            Some(ms("2026-01-02T03:00:00Z"))
        );
        assert_eq!(
            s.next_after(ms("2026-01-01T02:59:59.999Z")),
            Some(ms("2026-01-01T03:00:00Z"))
        );
        let s = Spec::parse("*/10 * * * * *", None, None).unwrap();
        assert_eq!(
            s.next_after(ms("2026-01-01T00:00:00.500Z")),
            Some(ms("2026-01-01T00:00:10Z"))
        );
        // Monday is 1 (Vixie), Sunday 0 or 7.
        let s = Spec::parse("0 9 * * 1", None, None).unwrap();
        assert_eq!(
            s.next_after(ms("2026-01-01T00:00:00Z")),
            Some(ms("2026-01-05T09:00:00Z"))
        );
    }

    #[test]
    fn intervals_sit_on_the_anchor_grid() {
        let s = Spec::parse("every 5m", None, None).unwrap();
        assert_eq!(s.next_after(0), Some(300_000));
        assert_eq!(s.next_after(299_999), Some(300_000));
        assert_eq!(s.next_after(300_000), Some(600_000));
        let s = Spec::parse("every 1h", None, Some(H / 4)).unwrap();
        assert_eq!(s.next_after(0), Some(H / 4));
        assert_eq!(s.next_after(H / 4), Some(H + H / 4));
        assert_eq!(s.latest_at_or_before(0, 2 * H), Some(H + H / 4));
        assert_eq!(s.count_between(0, 3 * H, u64::MAX), 3);
        assert_eq!(s.count_between(H / 4, 3 * H, u64::MAX), 2);
    }

    #[test]
    fn bad_specs_are_typed_errors() {
        for (spec, tz) in [
            ("", None),
            ("every 0s", None),
            ("every 500ms", None),
            ("every soon", None),
            ("61 * * * *", None),
            ("* * *", None),
            ("* * * * * * *", None),
            ("0 3 * * *", Some("Mars/Olympus")),
            ("every 5m", Some("UTC")),
        ] {
            let e = Spec::parse(spec, tz, None).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidArgument, "{spec:?}: {e}");
        }
        assert!(Spec::parse("0 3 * * *", None, Some(5)).is_err());
        assert!(next_times("* * * * *", None, None, 0, MAX_NEXT_TIMES + 1).is_err());
    }

    #[test]
    fn spring_forward_and_fall_back_fire_a_daily_0230_once() {
        // Europe/Lisbon: 2026-03-29 01:00 → 02:00 (no 01:30); Europe/Berlin:
        // 2026-03-29 02:00 → 03:00 (no 02:30), 2026-10-25 03:00 → 02:00.
        let t = next_times(
            "30 2 * * *",
            Some("Europe/Berlin"),
            None,
            ms("2026-03-27T12:00:00Z"),
            4,
        )
        .unwrap();
        // 28th 02:30 CET = 01:30Z; 29th: the gap, once at 03:00 CEST = 01:00Z;
        // 30th 02:30 CEST = 00:30Z.
        assert_eq!(
            t,
            vec![
                ms("2026-03-28T01:30:00Z"),
                ms("2026-03-29T01:00:00Z"),
                ms("2026-03-30T00:30:00Z"),
                ms("2026-03-31T00:30:00Z"),
            ]
        );
        let t = next_times(
            "30 2 * * *",
            Some("Europe/Berlin"),
            None,
            ms("2026-10-24T12:00:00Z"),
            3,
        )
        .unwrap();
        // 25th: 02:30 happens twice (00:30Z CEST, 01:30Z CET): once, the first.
        assert_eq!(
            t,
            vec![
                ms("2026-10-25T00:30:00Z"),
                ms("2026-10-26T01:30:00Z"),
                ms("2026-10-27T01:30:00Z"),
            ]
        );
    }
}
