//! Flow control: what [`crate::Queue::set_limit`] takes and
//! [`crate::Queue::limits`] answers.
//!
//! A limit names a target (a kind or family, a scope, every scope, or a
//! kind within a scope or within every scope) and holds any of: a
//! concurrency cap (at most N leased at once), a rate (at most R leases a
//! second, a token bucket with a burst) and, for scope targets, a weight
//! (a scope of weight 3 gets three leases for each one of a weight-1
//! scope while both have work). One process owns the store, so the caps
//! and rates are exact, not best effort.

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::kind::KindPattern;

/// The most a concurrency cap, a rate (per second) or a burst may be.
pub const MAX_LIMIT: u32 = 1_000_000;
/// The largest scope weight.
pub const MAX_WEIGHT: u32 = 1000;

/// What a limit applies to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LimitTarget {
    /// Every job of a kind (`embed`) or family (`ingest:*`), across scopes:
    /// `kind:<pattern>`.
    Kind(KindPattern),
    /// Every job of one scope: `scope:<uuid>`.
    Scope(Scope),
    /// Each scope on its own (a per-tenant default): `scope:*`. A scope
    /// with its own `scope:<uuid>` limit obeys both.
    EachScope,
    /// The jobs of a kind or family within one scope:
    /// `scope:<uuid>/kind:<pattern>`.
    ScopeKind(Scope, KindPattern),
    /// The jobs of a kind or family within each scope on its own:
    /// `scope:*/kind:<pattern>`.
    EachScopeKind(KindPattern),
    /// The jobs enqueued with one job key (issue 43), in each scope on
    /// its own (keys are per scope, like idempotency keys): `key:<k>`.
    Key(String),
    /// Each job key on its own (within its scope): `key:*`. A key with
    /// its own `key:<k>` limit obeys both.
    EachKey,
}

impl LimitTarget {
    /// The durable name, and what the CLI, `stats` and the metrics show.
    pub fn label(&self) -> String {
        match self {
            LimitTarget::Kind(p) => format!("kind:{p}"),
            LimitTarget::Scope(s) => format!("scope:{s}"),
            LimitTarget::EachScope => "scope:*".into(),
            LimitTarget::ScopeKind(s, p) => format!("scope:{s}/kind:{p}"),
            LimitTarget::EachScopeKind(p) => format!("scope:*/kind:{p}"),
            LimitTarget::Key(k) => format!("key:{k}"),
            LimitTarget::EachKey => "key:*".into(),
        }
    }

    /// Read [`LimitTarget::label`] back.
    pub fn parse(s: &str) -> Result<LimitTarget> {
        let bad = || {
            Error::invalid(format!(
                "limit target {s:?} must be kind:<kind or family:*>, scope:<uuid>, scope:*, \
                 scope:<uuid>/kind:<pattern>, scope:*/kind:<pattern>, key:<job key> or key:*"
            ))
        };
        if let Some(k) = s.strip_prefix("kind:") {
            return Ok(LimitTarget::Kind(k.parse()?));
        }
        if let Some(k) = s.strip_prefix("key:") {
            if k == "*" {
                return Ok(LimitTarget::EachKey);
            }
            validate_key(k)?;
            return Ok(LimitTarget::Key(k.to_string()));
        }
        let Some(rest) = s.strip_prefix("scope:") else {
            return Err(bad());
        };
        let (scope, kind) = match rest.split_once('/') {
            Some((sc, k)) => (sc, Some(k.strip_prefix("kind:").ok_or_else(bad)?)),
            None => (rest, None),
        };
        let kind = kind.map(str::parse::<KindPattern>).transpose()?;
        Ok(match (scope, kind) {
            ("*", None) => LimitTarget::EachScope,
            ("*", Some(k)) => LimitTarget::EachScopeKind(k),
            (sc, None) => LimitTarget::Scope(sc.parse()?),
            (sc, Some(k)) => LimitTarget::ScopeKind(sc.parse()?, k),
        })
    }

    /// Whether the target concerns every job of a scope (not a kind in it).
    pub fn is_scope_wide(&self) -> bool {
        matches!(self, LimitTarget::Scope(_) | LimitTarget::EachScope)
    }

    /// Whether the target counts jobs by their job key (`key:<k>`, `key:*`).
    pub fn is_key(&self) -> bool {
        matches!(self, LimitTarget::Key(_) | LimitTarget::EachKey)
    }
}

/// The longest job key, in bytes.
pub const MAX_KEY_LEN: usize = 128;

/// Check a job key (enqueue's `key`, a `key:<k>` target): 1 to
/// [`MAX_KEY_LEN`] bytes of UTF-8 without control characters, else
/// `InvalidArgument` naming the limit.
pub fn validate_key(k: &str) -> Result<()> {
    if k.is_empty() || k.len() > MAX_KEY_LEN {
        let mut shown = k.to_string();
        crate::store::codec::truncate_utf8(&mut shown, 80);
        return Err(Error::invalid(format!(
            "a job key must be 1 to {MAX_KEY_LEN} bytes, got {} bytes: {shown:?}",
            k.len()
        )));
    }
    if let Some(c) = k.chars().find(|c| c.is_control()) {
        return Err(Error::invalid(format!(
            "job key {k:?} holds the control character U+{:04X}; control characters are not allowed",
            c as u32
        )));
    }
    Ok(())
}

impl std::fmt::Display for LimitTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.label())
    }
}

impl std::str::FromStr for LimitTarget {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        LimitTarget::parse(s)
    }
}

/// The settings of one limit; at least one is set.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Limit {
    /// At most this many leased at once: 1 to [`MAX_LIMIT`]. (To stop a
    /// target altogether, pause it.)
    pub concurrency: Option<u32>,
    /// At most this many leases per second, on average: over 0, at most
    /// [`MAX_LIMIT`] (0.5 is one lease every two seconds).
    pub rate: Option<f64>,
    /// How many leases may go at once after a quiet spell (the bucket's
    /// size): 1 to [`MAX_LIMIT`], only with `rate`; default the rate
    /// rounded up (at least 1).
    pub burst: Option<u32>,
    /// The scope's share of leases while others have work too: 1 to
    /// [`MAX_WEIGHT`]; only on `scope:<uuid>` and `scope:*` (default 1).
    pub weight: Option<u32>,
    /// FIFO per key: a key's jobs are leased strictly in enqueue order,
    /// one at a time (a job being retried holds its key until it ends).
    /// Only on `key:<k>` and `key:*`, and only with a concurrency of 1.
    pub ordered: bool,
}

impl Limit {
    /// A concurrency cap of `n`.
    pub fn concurrency(n: u32) -> Self {
        Limit {
            concurrency: Some(n),
            ..Limit::default()
        }
    }

    /// A rate of `per_second` with a burst of `burst`.
    pub fn rate(per_second: f64, burst: u32) -> Self {
        Limit {
            rate: Some(per_second),
            burst: Some(burst),
            ..Limit::default()
        }
    }

    /// FIFO per key: concurrency 1, in enqueue order (see [`Limit::ordered`]).
    pub fn ordered() -> Self {
        Limit {
            concurrency: Some(1),
            ordered: true,
            ..Limit::default()
        }
    }

    /// A scope weight.
    pub fn weight(w: u32) -> Self {
        Limit {
            weight: Some(w),
            ..Limit::default()
        }
    }

    /// The bucket size in effect (`burst`, else the rate rounded up).
    pub fn effective_burst(&self) -> Option<u32> {
        let r = self.rate?;
        Some(self.burst.unwrap_or_else(|| (r.ceil() as u32).max(1)))
    }

    /// `InvalidArgument` naming the setting that is out of range or does
    /// not fit `target`.
    pub fn validate(&self, target: &LimitTarget) -> Result<()> {
        let t = target.label();
        if self.concurrency.is_none() && self.rate.is_none() && self.weight.is_none() {
            return Err(Error::invalid(format!(
                "limit for {t} sets nothing: give a concurrency, a rate or a weight"
            )));
        }
        if let Some(c) = self.concurrency {
            if c == 0 || c > MAX_LIMIT {
                return Err(Error::invalid(format!(
                    "concurrency for {t} must be 1 to {MAX_LIMIT}, got {c} (pause a target to stop it)"
                )));
            }
        }
        if let Some(r) = self.rate {
            if !r.is_finite() || r <= 0.0 || r > MAX_LIMIT as f64 {
                return Err(Error::invalid(format!(
                    "rate for {t} must be over 0 and at most {MAX_LIMIT} per second, got {r}"
                )));
            }
        }
        match (self.burst, self.rate) {
            (Some(_), None) => return Err(Error::invalid(format!("burst for {t} needs a rate"))),
            (Some(b), Some(_)) if b == 0 || b > MAX_LIMIT => {
                return Err(Error::invalid(format!(
                    "burst for {t} must be 1 to {MAX_LIMIT}, got {b}"
                )))
            }
            _ => {}
        }
        if self.ordered && (!target.is_key() || self.concurrency != Some(1)) {
            return Err(Error::invalid(format!(
                "ordered needs a key target (key:<k> or key:*) and a concurrency of 1; \
                 {t} has concurrency {:?}",
                self.concurrency
            )));
        }
        if let Some(w) = self.weight {
            if !target.is_scope_wide() {
                return Err(Error::invalid(format!(
                    "a weight applies to scope:<uuid> or scope:*, not {t}"
                )));
            }
            if w == 0 || w > MAX_WEIGHT {
                return Err(Error::invalid(format!(
                    "weight for {t} must be 1 to {MAX_WEIGHT}, got {w}"
                )));
            }
        }
        Ok(())
    }

    /// The durable form (the `meta` row's value): a version byte, then
    /// presence flags (bit 4: `ordered`) and the four fields, little-endian.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(22);
        out.push(1);
        let flags = u8::from(self.concurrency.is_some())
            | u8::from(self.rate.is_some()) << 1
            | u8::from(self.burst.is_some()) << 2
            | u8::from(self.weight.is_some()) << 3
            | u8::from(self.ordered) << 4;
        out.push(flags);
        out.extend_from_slice(&self.concurrency.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.rate.unwrap_or(0.0).to_le_bytes());
        out.extend_from_slice(&self.burst.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&self.weight.unwrap_or(0).to_le_bytes());
        out
    }

    /// Read [`Limit::encode`] back (`Corruption` for anything else).
    pub(crate) fn decode(b: &[u8]) -> Result<Limit> {
        if b.len() != 22 || b[0] != 1 {
            return Err(Error::Corruption(format!(
                "limit entry of {} bytes (version {:?}) does not decode",
                b.len(),
                b.first()
            )));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
        let flags = b[1];
        let rate = f64::from_le_bytes(b[6..14].try_into().expect("8 bytes"));
        Ok(Limit {
            concurrency: (flags & 1 != 0).then(|| u32_at(2)),
            rate: (flags & 2 != 0).then_some(rate),
            burst: (flags & 4 != 0).then(|| u32_at(14)),
            weight: (flags & 8 != 0).then(|| u32_at(18)),
            ordered: flags & 16 != 0,
        })
    }
}

/// One limit and how it is used now, from [`crate::Queue::limits`].
#[derive(Debug, Clone, PartialEq)]
pub struct LimitStatus {
    /// What it applies to.
    pub target: LimitTarget,
    /// Its settings.
    pub limit: Limit,
    /// Jobs leased now that it counts (for `scope:*` targets, summed over
    /// the scopes).
    pub leased: u64,
    /// How many of its instances are at their cap or out of tokens now:
    /// 0 or 1, or for `scope:*` targets the number of scopes held back.
    pub held: u64,
    /// How often a lease took its last free slot (or a lease was refused
    /// for lack of one) since open: work was held back by the cap.
    pub throttled_concurrency: u64,
    /// How often a lease took its last token (or was refused for lack of
    /// one) since open: work was held back by the rate.
    pub throttled_rate: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_read_back_from_their_labels() {
        let s: Scope = "0190c0de-0000-7000-8000-0000000000b1".parse().unwrap();
        for t in [
            LimitTarget::Kind("embed".parse().unwrap()),
            LimitTarget::Kind("ingest:*".parse().unwrap()),
            LimitTarget::Scope(s),
            LimitTarget::EachScope,
            LimitTarget::ScopeKind(s, "embed".parse().unwrap()),
            LimitTarget::EachScopeKind("img:*".parse().unwrap()),
            LimitTarget::Key("customer-4711".into()),
            LimitTarget::EachKey,
        ] {
            assert_eq!(LimitTarget::parse(&t.label()).unwrap(), t);
        }
        for bad in [
            "",
            "kind:",
            "scope:",
            "scope:nope",
            "scope:*/embed",
            "tenant:x",
            "kind:A",
            "key:",
            "key:a\u{7}b",
        ] {
            assert!(LimitTarget::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn limits_round_trip_and_validate() {
        let l = Limit {
            concurrency: Some(8),
            rate: Some(50.5),
            burst: Some(10),
            weight: None,
            ordered: false,
        };
        let o = Limit::ordered();
        assert_eq!(Limit::decode(&o.encode()).unwrap(), o);
        assert!(o.validate(&LimitTarget::EachKey).is_ok());
        assert!(o
            .validate(&LimitTarget::Kind("embed".parse().unwrap()))
            .is_err());
        let two = Limit {
            concurrency: Some(2),
            ..Limit::ordered()
        };
        assert!(two.validate(&LimitTarget::EachKey).is_err());
        assert!(validate_key(&"k".repeat(128)).is_ok());
        assert!(validate_key(&"k".repeat(129)).is_err());
        assert!(validate_key("").is_err());
        assert_eq!(Limit::decode(&l.encode()).unwrap(), l);
        assert!(Limit::decode(&[1, 0]).is_err());
        let k = LimitTarget::Kind("embed".parse().unwrap());
        assert!(l.validate(&k).is_ok());
        assert!(Limit::default().validate(&k).is_err());
        assert!(Limit::concurrency(0).validate(&k).is_err());
        assert!(Limit::weight(2).validate(&k).is_err());
        assert!(Limit::weight(2).validate(&LimitTarget::EachScope).is_ok());
        assert!(Limit::rate(f64::NAN, 1).validate(&k).is_err());
        assert!(Limit::rate(0.0, 1).validate(&k).is_err());
        let burst_only = Limit {
            burst: Some(3),
            ..Limit::concurrency(1)
        };
        assert!(burst_only.validate(&k).is_err());
        assert_eq!(Limit::rate(2.5, 0).effective_burst(), Some(0));
        let r = Limit {
            rate: Some(2.5),
            ..Limit::default()
        };
        assert_eq!(r.effective_burst(), Some(3));
    }
}
