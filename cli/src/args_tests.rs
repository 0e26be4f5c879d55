//! The command line's own checks (args.rs).

use super::*;
use clap::CommandFactory;

#[test]
fn the_command_line_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn the_limit_is_the_cores_list_limit_and_its_help_says_so() {
    let max = MAX_LIST_LIMIT.to_string();
    let over = (MAX_LIST_LIMIT + 1).to_string();
    assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", &max]).is_ok());
    assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", &over]).is_err());
    assert!(Cli::try_parse_from(["telha", "jobs", "ls", "--limit", "0"]).is_err());
    let mut cmd = Cli::command();
    let ls = cmd
        .find_subcommand_mut("jobs")
        .and_then(|j| j.find_subcommand_mut("ls"))
        .expect("jobs ls");
    let help = ls
        .get_arguments()
        .find(|a| a.get_id() == "limit")
        .and_then(|a| a.get_help())
        .map(ToString::to_string)
        .unwrap_or_default();
    assert!(help.contains(&format!("1 to {max}")), "{help}");
}
