//! JSON core, the bottom layer: RFC 8785 canonical JSON, the byte scanner, exact numbers and
//! the named string formats. It imports nothing else of the crate.

pub mod canonical;
pub(crate) mod depth;
pub(crate) mod encoding;
pub(crate) mod format;
pub(crate) mod names;
pub(crate) mod number;
pub(crate) mod scan;
pub(crate) mod visible;

pub use depth::MAX_NESTING;
pub use format::Format;
pub use number::MAX_SAFE_INTEGER;
