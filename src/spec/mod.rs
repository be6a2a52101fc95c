//! Fleet specs (`apiVersion: npa.fleet/v0.0.1`): read, merge, type-check and validate.
//!
//! Reading is two steps, as in the reference: [`spec_from_str`] builds the model (defaults
//! merged, names resolved, every field strictly typed) and [`FleetSpec`] validation checks it.
//! [`load`] and [`load_str`] do both, which is what every command uses.

pub mod error;
pub mod identity;
pub mod model;
pub mod names;
pub mod parse;
pub mod profile;
pub mod select;
pub mod soperator;
pub mod validate;
pub mod warning;
pub mod yaml;

use std::path::Path;

pub use error::SpecError;
pub use model::*;
pub use warning::{SpecWarning, SpecWarnings};

/// Reads and type-checks a spec without validating it (the reference's `spec_from_mapping`).
pub fn spec_from_str(text: &str, file: &str) -> Result<FleetSpec, SpecError> {
    let root = yaml::parse(text, yaml::Limits::default())
        .map_err(|e| SpecError::new(file, Some(e.pos), "", e.message))?;
    parse::spec_from_node(&root, file)
}

/// Reads, type-checks and validates a spec held in memory. `file` names it in errors.
pub fn load_str(text: &str, file: &str) -> Result<FleetSpec, SpecError> {
    let spec = spec_from_str(text, file)?;
    validate::validate_fleet(&spec)?;
    Ok(spec)
}

/// Reads, type-checks and validates a spec file. The file is capped before it is read whole.
pub fn load(path: &Path) -> Result<FleetSpec, SpecError> {
    let (text, file) = read_capped(path)?;
    load_str(&text, &file)
}

/// A spec file's text and the name errors call it by, read within the reader's limit
/// (`-` is standard input).
pub fn read_capped(path: &Path) -> Result<(String, String), SpecError> {
    // `-` is standard input, as for every command-line tool that reads a file.
    let stdin = path == Path::new("-");
    let file = if stdin {
        "<stdin>".to_string()
    } else {
        path.display().to_string()
    };
    let limit = yaml::Limits::default().max_bytes as u64;
    let io_error =
        |e: std::io::Error| SpecError::new(&file, None, "", format!("cannot read file: {e}"));
    let source: Box<dyn std::io::Read> = if stdin {
        Box::new(std::io::stdin().lock())
    } else {
        let meta = std::fs::metadata(path).map_err(io_error)?;
        if meta.len() > limit {
            return Err(SpecError::new(
                &file,
                None,
                "",
                format!(
                    "document is {} bytes; the limit is {limit} bytes",
                    meta.len()
                ),
            ));
        }
        Box::new(std::fs::File::open(path).map_err(io_error)?)
    };
    // The cap applies to the bytes read, not only to what the metadata says: a pipe or a
    // device (`/dev/zero`) reports no length and would otherwise be read until memory runs out.
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut std::io::Read::take(source, limit + 1), &mut bytes)
        .map_err(io_error)?;
    if bytes.len() as u64 > limit {
        return Err(SpecError::new(
            &file,
            None,
            "",
            format!("document is more than {limit} bytes; the limit is {limit} bytes"),
        ));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| SpecError::new(&file, None, "", "file is not valid UTF-8"))?;
    Ok((text, file))
}
