//! The argument names that say which file or command a tool call touched, shared so the agent
//! summary and the aggregate read tool calls the same way.

pub(super) const PATH_KEYS: &[&str] = &[
    "path",
    "file_path",
    "file",
    "filename",
    "target_file",
    "filepath",
];
pub(super) const COMMAND_KEYS: &[&str] = &["command", "cmd", "script", "shell"];
