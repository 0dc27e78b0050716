//! The stand-in the derive names when a contract's output type cannot be accepted.

use super::reader::{Reader, Stop};
use super::rules::Rules;
use super::shape::Shape;
use super::traits::{ContractField, ReadField};
use super::traits::{OwnedOutput, ToolOutput};
use crate::vocabulary::limits::Limits;

/// Stands in for an output type the derive could not accept, so that a mistake in a contract
/// shows as that one error and not as errors everywhere the contract is used.
#[derive(Debug)]
pub enum InvalidOutput {}

impl serde::Serialize for InvalidOutput {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        match *self {}
    }
}

impl ContractField for InvalidOutput {
    type __Check<I: crate::contract::ToolContract> = crate::contract::bound::NoBounds;

    fn __shape() -> Shape {
        Shape::FreeForm
    }

    fn __write_canonical(&self, _: &mut Vec<u8>) {
        match *self {}
    }
}

impl<'de> ReadField<'de> for InvalidOutput {
    fn __read(_: &mut Reader<'de, '_>, _: &Rules) -> Result<Option<Self>, Stop> {
        Ok(None)
    }
}

impl ToolOutput for InvalidOutput {
    const LIMITS: Limits = Limits::DEFAULT;
}

impl OwnedOutput for InvalidOutput {}
