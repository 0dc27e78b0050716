//! Size and depth limits on encoded documents and free-form values.

use serde::Serialize;

/// Limits on a free-form `serde_json::Value` field, required by its opt-in attribute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeFormLimits {
    /// Deepest nesting of containers inside the value (a scalar is depth 0).
    pub max_depth: usize,
    /// Largest encoded size of the value, in bytes.
    pub max_bytes: usize,
}

/// Size and depth limits on one encoded document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    /// Largest encoded size, in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of objects and arrays (the top-level object is depth 1).
    pub max_depth: usize,
}

impl Limits {
    /// The limits used where a contract declares none: 1 MiB and 32 levels.
    pub const DEFAULT: Limits = Limits {
        max_bytes: 1 << 20,
        max_depth: 32,
    };
}
