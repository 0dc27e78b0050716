//! The checks generated validators call: the exact reader, numbers, formats, forbidden keys.

pub(crate) mod field;
pub(crate) mod forbidden;
pub(crate) mod format;
pub(crate) mod number;
pub(crate) mod reader;
