//! [`UniqueStates`]: which states of a unique window's job hold the window
//! (enqueue's `unique_states`, issue 44).

use std::str::FromStr;

use crate::error::{Error, Result};

/// Which states of a unique window's job hold the window.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UniqueStates {
    /// Whatever became of the job (completed, dead, cancelled, pruned):
    /// "at most once per window".
    #[default]
    Any,
    /// Only while the job is pending, leased or waiting for a retry: once
    /// it is finished, the next enqueue makes a new job.
    Active,
}

impl UniqueStates {
    /// `any` or `active`.
    pub fn name(self) -> &'static str {
        match self {
            UniqueStates::Any => "any",
            UniqueStates::Active => "active",
        }
    }
}

impl FromStr for UniqueStates {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "any" => Ok(UniqueStates::Any),
            "active" => Ok(UniqueStates::Active),
            _ => Err(Error::invalid(format!(
                "unique_states must be \"any\" or \"active\", got {s:?}"
            ))),
        }
    }
}
