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
    let defaults = root
        .as_map()
        .map(parse::defaults_positions)
        .unwrap_or_default();
    parse::spec_from_node(root, file).map_err(|e| locate_inherited(&defaults, e))
}

/// Reads, type-checks and validates a spec held in memory. `file` names it in errors.
pub fn load_str(text: &str, file: &str) -> Result<FleetSpec, SpecError> {
    let spec = spec_from_str(text, file)?;
    validate(&spec)?;
    Ok(spec)
}

/// Validates a spec read by [`spec_from_str`], locating an error about an inherited value
/// where it was written.
pub fn validate(spec: &FleetSpec) -> Result<(), SpecError> {
    validate::validate_fleet(spec).map_err(|e| locate_inherited(&spec.positions.fields, e))
}

/// A value a cluster inherited from `defaults` is wrong where it was written: an error at a
/// position under `defaults` is given that `defaults.` path (it was found at a cluster's merged
/// path, which the message keeps), so the file, line and field all point at the one place to
/// fix, once for every cluster.
fn locate_inherited(fields: &model::FieldPositions, e: SpecError) -> SpecError {
    let Some(pos) = e.pos else {
        return e;
    };
    if e.path.starts_with("defaults") {
        return e;
    }
    let Some((path, _)) = fields
        .iter()
        .filter(|(k, _)| k.starts_with("defaults."))
        .find(|(_, p)| **p == pos)
    else {
        return e;
    };
    let path = path.to_string();
    let merged = if e.path.is_empty() {
        String::new()
    } else {
        format!(" (inherited by {})", e.path)
    };
    SpecError {
        path,
        message: format!("{}{merged}", e.message),
        ..e
    }
}

/// Reads, type-checks and validates a spec file. The file is capped before it is read whole.
pub fn load(path: &Path) -> Result<FleetSpec, SpecError> {
    let (text, file) = read_capped(path)?;
    load_str(&text, &file)
}

/// How [`read_capped`] words a file it could not read, as opposed to one it read and refused.
const CANNOT_READ: &str = "cannot read file: ";

/// The reason a spec could not be read at all (missing, unreadable), when that is what `e`
/// says: the CLI words it "cannot read", not "invalid spec".
pub fn unreadable_reason(e: &SpecError) -> Option<&str> {
    if e.pos.is_some() || !e.path.is_empty() {
        return None;
    }
    e.message.strip_prefix(CANNOT_READ)
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
    let io_error = |e: std::io::Error| SpecError::new(&file, None, "", format!("{CANNOT_READ}{e}"));
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
