//! `TELHA_JOBS_*`: each key of the table with an `env` name overrides the
//! file, with the file's text syntax.

use super::keys::{self, KEYS};
use super::{text, Config};
use crate::error::Result;

/// The variable naming the config file [`Config::load`] reads.
pub(super) const CONFIG_PATH_VAR: &str = "TELHA_JOBS_CONFIG";

impl Config {
    /// Overlays the `TELHA_JOBS_*` variables of this process (table in the
    /// module docs), so a deployment can change a setting without editing
    /// the file.
    pub fn apply_env(&mut self) -> Result<()> {
        self.apply_env_from(telha_env_vars())
    }

    /// Overlays `TELHA_JOBS_*` settings from `vars`: [`Config::apply_env`]
    /// with the environment passed in, so tests and embedders never have to
    /// mutate the process environment. Unrelated names are ignored. All or
    /// nothing: on error `self` is unchanged.
    pub fn apply_env_from<I: IntoIterator<Item = (String, String)>>(
        &mut self,
        vars: I,
    ) -> Result<()> {
        let mut c = self.clone();
        for (name, value) in vars {
            // TELHA_JOBS_CONFIG is read by `load`; anything else is not ours.
            let Some(k) = KEYS.iter().find(|k| k.env == Some(name.as_str())) else {
                continue;
            };
            let v = text::parse(k.ty, &value).ok_or_else(|| text::bad(&name, k.ty, &value))?;
            keys::typed(k, &name, v)?;
            c.assign(k.name, v)?;
        }
        *self = c;
        Ok(())
    }
}

/// The process's `TELHA_JOBS_*` variables. Non-UTF-8 values become
/// replacement characters, which no setting parses, so they are reported
/// by name instead of panicking as `std::env::vars` would.
pub(super) fn telha_env_vars() -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            name.starts_with("TELHA_JOBS_")
                .then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect()
}
