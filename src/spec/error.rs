//! The one error type of the spec reader: a message that names the file, line, column and field.

use std::fmt;

use super::yaml::Pos;

/// A spec that cannot be read or does not validate.
///
/// `message` is the reference tool's text (tests elsewhere match on it); the location and the
/// field path are fleetbot's addition so an editor or a pull-request annotation can point at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecError {
    /// The file name as the user gave it.
    pub file: String,
    /// Where the offending value was written, when it is known.
    pub pos: Option<Pos>,
    /// The field path, such as `projects[1].clusters[0].gpu_nodes.count`; empty at the top.
    pub path: String,
    pub message: String,
}

impl SpecError {
    pub fn new(file: &str, pos: Option<Pos>, path: &str, message: impl Into<String>) -> Self {
        SpecError {
            file: file.to_string(),
            pos,
            path: path.to_string(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(pos) = self.pos {
            write!(f, ":{pos}")?;
        }
        if !self.path.is_empty() {
            write!(f, ": {}", self.path)?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for SpecError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_file_line_column_and_field() {
        let e = SpecError::new(
            "fleet.yaml",
            Some(Pos { line: 14, col: 7 }),
            "projects[1].clusters[0].gpu_nodes.count",
            "expected an integer, found \"2\"",
        );
        assert_eq!(
            e.to_string(),
            "fleet.yaml:14:7: projects[1].clusters[0].gpu_nodes.count: expected an integer, found \"2\""
        );
    }
}
