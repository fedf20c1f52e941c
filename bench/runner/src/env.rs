//! The environment the measured processes run in.

use std::ffi::OsStr;
use std::process::Command;

/// A command for `program` with `env` set and every other `MIMALLOC_*` variable of the caller
/// removed, so that a stray setting in the caller's shell cannot skew a column. Everything a
/// driver runs under (directly or under valgrind) starts here.
pub fn command(program: impl AsRef<OsStr>, env: &[(String, String)]) -> Command {
    let mut command = Command::new(program);
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("MIMALLOC_") {
            command.env_remove(key);
        }
    }
    command.envs(env.iter().map(|(k, v)| (k, v)));
    command
}
