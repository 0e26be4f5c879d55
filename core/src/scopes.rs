//! The per-scope part of `stats`, paged: which scopes a [`StatsQuery`]
//! asks for ([`ScopeOrder`], a limit, a cursor, a name prefix), and the
//! in-memory per-scope counts it is answered from.
//!
//! The counts live in one `BTreeMap` ordered by scope (`counts.rs`), so the
//! name order is a real cursor: a page is a range read from the cursor (at
//! most [`crate::limits::SCOPE_SCAN_BUDGET`] entries examined, then a short
//! page with a cursor). A count order (the most pending, leased or dead
//! first) reads an index ordered by `(count, scope)` (`ranking.rs`), brought
//! up to date at the query from the scopes that changed since the last one:
//! O(changed · log scopes + limit). With a prefix, a count order is one pass
//! over the prefix's range with a heap of `limit` entries.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::ids::Scope;
use crate::state::{State, StateCounts};

#[cfg(feature = "rocksdb")]
mod counts;
#[cfg(feature = "rocksdb")]
mod ranking;
#[cfg(feature = "rocksdb")]
pub(crate) use counts::ScopeCounts;

/// How `stats` picks and orders the scopes it returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum ScopeOrder {
    /// Most pending jobs first (ties by scope): the busiest tenants. The
    /// default.
    #[default]
    Pending,
    /// Most leased jobs first (ties by scope).
    Leased,
    /// Most dead jobs first (ties by scope).
    Dead,
    /// By scope id, ascending: the order to walk every scope in.
    Name,
}

impl ScopeOrder {
    /// Every order, as the front ends list them.
    pub const ALL: [ScopeOrder; 4] = [
        ScopeOrder::Pending,
        ScopeOrder::Leased,
        ScopeOrder::Dead,
        ScopeOrder::Name,
    ];

    /// `"pending"`, `"leased"`, `"dead"` or `"name"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeOrder::Pending => "pending",
            ScopeOrder::Leased => "leased",
            ScopeOrder::Dead => "dead",
            ScopeOrder::Name => "name",
        }
    }

    /// The state a count order ranks by; `None` for the name order.
    pub fn state(self) -> Option<State> {
        match self {
            ScopeOrder::Pending => Some(State::Pending),
            ScopeOrder::Leased => Some(State::Leased),
            ScopeOrder::Dead => Some(State::Dead),
            ScopeOrder::Name => None,
        }
    }
}

impl fmt::Display for ScopeOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ScopeOrder {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        ScopeOrder::ALL
            .into_iter()
            .find(|o| o.as_str() == s)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "unknown scope order {s:?} (orders: pending, leased, dead, name)"
                ))
            })
    }
}

/// The default number of scopes `stats` returns.
pub const STATS_SCOPE_LIMIT_DEFAULT: usize = 100;

/// What `stats` returns per scope. The totals and per-kind counts are always
/// whole; the per-scope counts are one page of at most `scope_limit` scopes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsQuery {
    /// Which scopes, in which order (default: the most pending first).
    pub scope_order: ScopeOrder,
    /// At most this many scopes (default 100, at most
    /// [`MAX_SCOPE_LIMIT`](crate::limits::MAX_SCOPE_LIMIT)); 0 returns none
    /// and costs nothing.
    pub scope_limit: usize,
    /// The previous page's [`Stats::scopes_next`](crate::Stats): the page
    /// after it, in the same order.
    pub scopes_after: Option<String>,
    /// Only scopes whose id (canonical lowercase text,
    /// `xxxxxxxx-xxxx-…`) starts with this: hex digits and dashes.
    pub scope_prefix: Option<String>,
    /// Fill [`Stats::oldest_ready_ms`](crate::Stats) (default: no). Exact,
    /// from the band heads and never a scan, but O(bands): a walk of every
    /// scope with ready work (about 40–60 ms at 100,000 such scopes on a
    /// loaded 2-core machine), so a page polled every few seconds leaves
    /// it out and `telha jobs stats` asks for it.
    pub oldest_ready: bool,
}

impl Default for StatsQuery {
    fn default() -> Self {
        StatsQuery {
            scope_order: ScopeOrder::default(),
            scope_limit: STATS_SCOPE_LIMIT_DEFAULT,
            scopes_after: None,
            scope_prefix: None,
            oldest_ready: false,
        }
    }
}

/// One page of per-scope counts.
#[cfg(feature = "rocksdb")]
pub(crate) struct ScopePage {
    pub scopes: BTreeMap<Scope, StateCounts>,
    pub next: Option<String>,
}

/// A position in a count order: `(count descending, scope ascending)`, so
/// a smaller key ranks first.
type RankKey = (Reverse<i64>, Scope);

fn parse_cursor(order: ScopeOrder, c: &str) -> Result<(i64, Scope)> {
    let bad = || {
        Error::invalid(format!(
            "scopes_after {c:?} is not a cursor of the {order} order"
        ))
    };
    match order.state() {
        None => Ok((0, c.parse().map_err(|_| bad())?)),
        Some(_) => {
            let (n, s) = c.split_once(':').ok_or_else(bad)?;
            Ok((n.parse().map_err(|_| bad())?, s.parse().map_err(|_| bad())?))
        }
    }
}

fn cursor(order: ScopeOrder, count: i64, s: &Scope) -> String {
    match order.state() {
        None => s.to_string(),
        Some(_) => format!("{count}:{s}"),
    }
}

/// The lowest and highest scope whose text starts with `prefix`.
fn prefix_range(prefix: &str) -> Result<(Scope, Scope)> {
    const LO: &str = "00000000-0000-0000-0000-000000000000";
    const HI: &str = "ffffffff-ffff-ffff-ffff-ffffffffffff";
    let p = prefix.to_ascii_lowercase();
    let fits = p.len() <= LO.len()
        && p.bytes().zip(LO.bytes()).all(|(c, at)| match at {
            b'-' => c == b'-',
            _ => c.is_ascii_hexdigit(),
        });
    if !fits {
        return Err(Error::invalid(format!(
            "scope_prefix {prefix:?} is not the start of a scope id \
             (hex digits, dashes where a UUID has them)"
        )));
    }
    let lo = format!("{p}{}", &LO[p.len()..]).parse()?;
    let hi = format!("{p}{}", &HI[p.len()..]).parse()?;
    Ok((lo, hi))
}

/// `by_scope` in a page's order: for a count order, most first (ties by
/// scope); for the name order, by scope.
pub fn ranked(
    order: ScopeOrder,
    by_scope: &BTreeMap<Scope, StateCounts>,
) -> Vec<(Scope, StateCounts)> {
    let mut v: Vec<(Scope, StateCounts)> = by_scope.iter().map(|(s, c)| (*s, *c)).collect();
    if let Some(state) = order.state() {
        v.sort_by_key(|(s, c)| (Reverse(c.get(state)), *s));
    }
    v
}
