//! An object type's declared fields as its generated reader meets them: the two key orders
//! tried by their bytes first, then every key the general way, then what is missing.
//!
//! This is the part of a generated object reader that is the same for every type, kept here so
//! that rustc checks and compiles it once, not once per derived type: a derive emits only the
//! tables ([`FieldKeys`]) and one `match` arm per field.

use super::reader::{ObjectCursor, PathMark, Reader, Stop};

/// A declared key as the fast path matches it: its canonical JSON string with its colon
/// (`"key":`), the index of its field, and the key itself.
pub type KeyEntry = (&'static [u8], usize, &'static str);

/// The declared keys of an object type: what its generated reader matches keys against.
#[derive(Debug)]
pub struct FieldKeys {
    /// The keys in the declared order, which serde's writer of the type follows.
    declared: &'static [KeyEntry],
    /// The keys in the canonical order (RFC 8785, and maps sorted by name such as
    /// serde_json's).
    canonical: &'static [KeyEntry],
}

impl FieldKeys {
    /// The keys of a type's fields in `declared` order and in `canonical` order (each of the
    /// two holds every field once).
    #[must_use]
    pub const fn new(declared: &'static [KeyEntry], canonical: &'static [KeyEntry]) -> Self {
        FieldKeys {
            declared,
            canonical,
        }
    }
}

/// An open object being read field by field.
#[derive(Debug)]
pub struct FieldsCursor {
    object: ObjectCursor,
    keys: &'static FieldKeys,
    /// The order keys are tried in by their bytes: the declared one, then the canonical one
    /// if the first key is not the declared first, then none (from the first key out of
    /// order on, keys are read the general way).
    order: &'static [KeyEntry],
    in_order: usize,
    canonical_tried: bool,
    /// The path at the object: a field's value is read, and checked, with its key on the path
    /// until the next field is asked for.
    at_object: PathMark,
}

impl<'de> Reader<'de, '_> {
    /// Opens the object of `keys`' type that should come next; `None` (after a report) if
    /// another value does.
    #[inline]
    pub fn begin_fields(&mut self, keys: &'static FieldKeys) -> Result<Option<FieldsCursor>, Stop> {
        let at_object = self.path_mark();
        Ok(self.begin_object()?.map(|object| FieldsCursor {
            object,
            keys,
            order: keys.declared,
            in_order: 0,
            canonical_tried: false,
            at_object,
        }))
    }

    /// The index of the next field to read, positioned at its value and with its key on the
    /// path; `None` at the object's end. Unknown and duplicate keys are reported and skipped
    /// on the way. `seen` holds, by field index, whether that field was read: this marks each
    /// one it returns.
    ///
    /// In line in every optimized reader, as the code it replaces was: called once per
    /// field, its fast path is a few comparisons. Not forced in line in a debug build, where
    /// that would only add to every derived type's compile time.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    pub fn next_field(
        &mut self,
        fields: &mut FieldsCursor,
        seen: &mut [bool],
    ) -> Result<Option<usize>, Stop> {
        self.leave(fields.at_object);
        loop {
            match fields.order.get(fields.in_order) {
                Some(&(key_colon, index, key))
                    if self.next_key_is(&mut fields.object, key_colon) =>
                {
                    fields.in_order += 1;
                    return Ok(Some(self.entered(seen, index, key)));
                }
                Some(_) if fields.in_order == 0 && !fields.canonical_tried => {
                    fields.order = fields.keys.canonical;
                    fields.canonical_tried = true;
                }
                None if fields.in_order == fields.keys.declared.len()
                    && self.end_object_is(&mut fields.object) =>
                {
                    return Ok(None);
                }
                _ => {
                    fields.order = &[];
                    return self.next_field_by_name(&mut fields.object, fields.keys, seen);
                }
            }
        }
    }

    /// [`next_field`](Self::next_field) from a key the orders did not foresee on: each key
    /// read and looked up by its text. (Given the cursor's parts, not the cursor, so that the
    /// rest of it can stay in registers.)
    #[inline(never)]
    fn next_field_by_name(
        &mut self,
        object: &mut ObjectCursor,
        keys: &'static FieldKeys,
        seen: &mut [bool],
    ) -> Result<Option<usize>, Stop> {
        while let Some(key) = self.next_key(object)? {
            let declared = keys
                .declared
                .iter()
                .find(|&&(_, _, declared)| declared == &*key);
            match declared {
                Some(&(_, index, declared_key)) if !seen.get(index).copied().unwrap_or(true) => {
                    return Ok(Some(self.entered(seen, index, declared_key)));
                }
                Some(_) => self.duplicate_key(&key)?,
                None => self.unknown_key(&key)?,
            }
        }
        Ok(None)
    }

    /// Reports, in declared order, each field of `keys`' type that `seen` says was not read.
    #[inline]
    pub fn missing_fields(&mut self, keys: &'static FieldKeys, seen: &[bool]) -> Result<(), Stop> {
        if seen.iter().all(|seen| *seen) {
            return Ok(());
        }
        self.report_missing(keys, seen)
    }

    #[cold]
    fn report_missing(&mut self, keys: &'static FieldKeys, seen: &[bool]) -> Result<(), Stop> {
        for &(_, index, key) in keys.declared {
            if !seen.get(index).copied().unwrap_or(true) {
                self.missing_key(key)?;
            }
        }
        Ok(())
    }

    /// `index`, marked seen, with its field's `key` put on the path.
    #[cfg_attr(not(debug_assertions), inline(always))]
    #[cfg_attr(debug_assertions, inline)]
    fn entered(&mut self, seen: &mut [bool], index: usize, key: &'static str) -> usize {
        if let Some(seen) = seen.get_mut(index) {
            *seen = true;
        }
        let _ = self.enter_key(key);
        index
    }
}
