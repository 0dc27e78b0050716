//! `Registry`: the set of tools an agent may call, with no two sharing a name.

use super::const_check::{ConstMessage, str_eq};
use super::spec::ToolSpec;
use super::traits::ToolContract;
use crate::vocabulary::call::{ADAPTERS, Adapter, Api};
use crate::vocabulary::forbidden::ForbiddenKeys;

/// Why a registry could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two tools share a name; providers could not tell them apart.
    #[error("two tools share the name `{0}`")]
    DuplicateName(&'static str),
}

/// The tools an agent may call, by name, with the forbidden-key list their validation uses.
///
/// Build one with [`registry!`](crate::registry!) when the set is known at compile time (a
/// repeated name is then a compile error), or with [`Registry::builder`] otherwise.
///
/// ```
/// # use tool_contract::{Effect, Registry, ToolContract, ToolOutput};
/// # /// Echo a word.
/// # #[derive(serde::Deserialize, ToolContract)]
/// # #[tool_contract(output = Echoed, effect = pure, source_label = "echo", producer_revision = "1")]
/// # struct Echo { word: String }
/// # #[derive(serde::Serialize, ToolOutput)]
/// # struct Echoed { word: String }
/// let registry = tool_contract::registry![Echo];
/// let spec = registry.get("echo").unwrap();
/// assert_eq!(spec.effect(), Effect::Pure);
/// assert_eq!(spec.input_schema()["additionalProperties"], false);
///
/// let again = Registry::builder().register::<Echo>()?.register::<Echo>();
/// assert!(again.is_err());
/// # Ok::<(), tool_contract::contract::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Registry {
    tools: Vec<&'static ToolSpec>,
    forbidden: ForbiddenKeys,
    /// The adapters named with [`RegistryBuilder::adapter`]; none named, every adapter this
    /// crate ships.
    adapters: Option<Vec<Adapter>>,
}

impl Registry {
    /// An empty builder.
    #[must_use]
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The spec of the tool named `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&'static ToolSpec> {
        self.tools.iter().copied().find(|spec| spec.name() == name)
    }

    /// A builder holding this registry, to add tools, keys or adapters.
    #[must_use]
    pub fn into_builder(self) -> RegistryBuilder {
        RegistryBuilder { registry: self }
    }

    /// Every tool, in the order registered.
    pub fn tools(&self) -> impl Iterator<Item = &'static ToolSpec> + '_ {
        self.tools.iter().copied()
    }

    /// How many tools there are.
    #[must_use]
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there is none.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Whether calls read by the adapter `revision` of `api` may run and have their results
    /// written: by default, those of every adapter this crate ships ([`ADAPTERS`]); once
    /// adapters are named ([`RegistryBuilder::adapter`]), those only.
    ///
    /// ```
    /// use tool_contract::Registry;
    /// use tool_contract::providers::{anthropic, openai};
    ///
    /// let every = Registry::builder().build();
    /// assert!(every.accepts_adapter(openai::ADAPTER.api, openai::ADAPTER.revision));
    /// let only_openai = Registry::builder().adapter(openai::ADAPTER).build();
    /// assert!(!only_openai.accepts_adapter(anthropic::ADAPTER.api, anthropic::ADAPTER.revision));
    /// ```
    #[must_use]
    pub fn accepts_adapter(&self, api: Api, revision: &str) -> bool {
        let accepted = self.adapters.as_deref().unwrap_or(&ADAPTERS);
        accepted
            .iter()
            .any(|adapter| adapter.api == api && adapter.revision == revision)
    }

    /// The forbidden keys validation under this registry refuses.
    #[must_use]
    pub fn forbidden_keys(&self) -> &ForbiddenKeys {
        &self.forbidden
    }
}

/// Builds a [`Registry`] tool by tool.
#[derive(Debug, Clone, Default)]
pub struct RegistryBuilder {
    registry: Registry,
}

impl RegistryBuilder {
    /// Adds the tool `T`; fails if another tool already has its name.
    pub fn register<T: ToolContract>(self) -> Result<Self, RegistryError> {
        if self.registry.get(T::NAME).is_some() {
            return Err(RegistryError::DuplicateName(T::NAME));
        }
        Ok(self.push::<T>())
    }

    /// Adds `T` with no name check: for [`registry!`](crate::registry!), which checks the
    /// names at compile time.
    #[doc(hidden)]
    #[must_use]
    pub fn push<T: ToolContract>(mut self) -> Self {
        self.registry.tools.push(T::spec());
        self
    }

    /// Forbids one more word (compared as [`ForbiddenKeys`] says) in the keys of raw input
    /// and free-form values.
    #[must_use]
    pub fn forbid_key(mut self, name: &str) -> Self {
        self.registry.forbidden = self.registry.forbidden.with_name(name);
        self
    }

    /// Allows the key `name` on purpose in raw input and free-form values, though the
    /// forbidden lists hold it ([`ForbiddenKeys::allowing`]): for a name that only looks like
    /// a credential. A derived output field says so with `#[tool_output(allow_forbidden_key)]`.
    #[must_use]
    pub fn allow_key(mut self, name: &str) -> Self {
        self.registry.forbidden = self.registry.forbidden.allowing(name);
        self
    }

    /// Accepts calls read by `adapter` (e.g. [`Adapter::OPENAI_RESPONSES`]) and, from the
    /// first one named, only the adapters named this way: a registry that should serve one
    /// provider says so. Calls of an adapter not accepted run nothing (`BLOCKED`) and have no
    /// results written.
    #[must_use]
    pub fn adapter(mut self, adapter: Adapter) -> Self {
        let named = self.registry.adapters.get_or_insert_with(Vec::new);
        if !named.contains(&adapter) {
            named.push(adapter);
        }
        self
    }

    /// Accepts every adapter this crate ships ([`ADAPTERS`]), as a registry does until
    /// adapters are named.
    #[must_use]
    pub fn all_adapters(mut self) -> Self {
        self.registry.adapters = None;
        self
    }

    /// The registry.
    #[must_use]
    pub fn build(self) -> Registry {
        self.registry
    }
}

/// The message for the first name `names` holds twice, or an empty one. An empty name is
/// only ever a contract that did not compile (the derive refuses `name = ""`, and a type's
/// own name is never empty): its errors are said already, so it is passed over.
#[must_use]
pub const fn duplicate_tool_name(names: &[&str]) -> ConstMessage {
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if !names[i].is_empty() && str_eq(names[i], names[j]) {
                return ConstMessage::new()
                    .push("two tools in this registry share the name `")
                    .push(names[i])
                    .push("`; give one of them `#[tool_contract(name = \"...\")]`");
            }
            j += 1;
        }
        i += 1;
    }
    ConstMessage::new()
}

/// Builds a [`Registry`] from contract types; two tools with one name do not compile.
///
/// ```compile_fail
/// # use tool_contract::{ToolContract, ToolOutput};
/// # #[derive(serde::Serialize, ToolOutput)]
/// # struct Done { ok: bool }
/// /// One.
/// #[derive(serde::Deserialize, ToolContract)]
/// #[tool_contract(output = Done, effect = pure, source_label = "a", producer_revision = "1",
///                 name = "same")]
/// struct A { x: bool }
/// /// Two.
/// #[derive(serde::Deserialize, ToolContract)]
/// #[tool_contract(output = Done, effect = pure, source_label = "b", producer_revision = "1",
///                 name = "same")]
/// struct B { x: bool }
///
/// let registry = tool_contract::registry![A, B];
/// ```
#[macro_export]
macro_rules! registry {
    ($($tool:ty),+ $(,)?) => {{
        const _: () = {
            let message = $crate::__private::duplicate_tool_name(
                &[$(<$tool as $crate::ToolContract>::NAME),+],
            );
            if !message.is_empty() {
                ::core::panic!("{}", message.as_str());
            }
        };
        $crate::Registry::builder()$(.push::<$tool>())+.build()
    }};
}
