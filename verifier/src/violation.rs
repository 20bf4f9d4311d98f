use serde::{Deserialize, Serialize};
use std::fmt;

/// One broken rule in a document: which rule (a stable id such as
/// `task.pins.allowed_paths.non_empty`), where (a JSON pointer such as
/// `/pins/allowed_paths`, or a file name), the line when known, and a message.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Violation {
    pub rule: String,
    pub path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
    pub message: String,
}

impl Violation {
    pub fn new(rule: &str, path: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            rule: rule.to_owned(),
            path: path.into(),
            line: None,
            message: message.into(),
        }
    }

    #[must_use]
    pub fn at_line(mut self, line: u32) -> Self {
        self.line = Some(line);
        self
    }
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.rule, self.path)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.message)
    }
}
