//! Which scopes a call needs: a read the read scope, a write the write scope, unless the
//! application names a tool's own; more when an argument-dependent rule holds; and which
//! scopes imply others (MCP asks servers to honour scope hierarchies).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use crate::contract::{Registry, ToolSpec};
use crate::vocabulary::ForbiddenKeys;

/// A rule over a tool's typed input, erased to its arguments' bytes.
pub(super) type ScopeRule = Arc<dyn Fn(&[u8], &ForbiddenKeys) -> bool + Send + Sync>;

/// The scopes each call needs.
#[derive(Clone)]
pub(super) struct ScopePolicy {
    pub(super) read: String,
    pub(super) write: String,
    /// A tool's own scopes, in place of the read or write scope.
    pub(super) per_tool: HashMap<String, Vec<String>>,
    /// Scopes a tool's call needs besides, when their rule holds of its arguments.
    pub(super) when: HashMap<String, Vec<(String, ScopeRule)>>,
    /// What each scope implies besides itself.
    pub(super) implies: BTreeMap<String, BTreeSet<String>>,
}

impl Default for ScopePolicy {
    fn default() -> Self {
        ScopePolicy {
            read: "tools:read".to_owned(),
            write: "tools:write".to_owned(),
            per_tool: HashMap::new(),
            when: HashMap::new(),
            implies: BTreeMap::new(),
        }
    }
}

impl ScopePolicy {
    /// What every call of `spec` needs, whatever its arguments.
    pub(super) fn base(&self, spec: &ToolSpec) -> Vec<&str> {
        match self.per_tool.get(spec.name()) {
            Some(own) => own.iter().map(String::as_str).collect(),
            None if spec.effect().is_write() => vec![self.write.as_str()],
            None => vec![self.read.as_str()],
        }
    }

    /// What this call of `spec` needs: its base scopes and those of every rule that holds of
    /// `arguments`. A rule over arguments that do not read as its tool's input holds: it
    /// fails toward asking, and the dispatcher refuses those arguments anyway.
    pub(super) fn required(
        &self,
        spec: &ToolSpec,
        arguments: &[u8],
        forbidden: &ForbiddenKeys,
    ) -> Vec<&str> {
        let mut needed = self.base(spec);
        for (scope, rule) in self.when.get(spec.name()).into_iter().flatten() {
            if !needed.contains(&scope.as_str()) && rule(arguments, forbidden) {
                needed.push(scope);
            }
        }
        needed
    }

    /// Whether `granted`, with what its scopes imply, holds every scope of `needed`.
    pub(super) fn grants(&self, granted: &BTreeSet<String>, needed: &[&str]) -> bool {
        if needed.iter().all(|scope| granted.contains(*scope)) {
            return true;
        }
        let held = self.closure(granted);
        needed.iter().all(|scope| held.contains(*scope))
    }

    /// The scopes a client asks for to use the registry at all: every tool's base scopes, as
    /// `scopes_supported` and a `401`'s challenge name them.
    pub(super) fn supported(&self, registry: &Registry) -> Vec<String> {
        let mut supported = Vec::new();
        for spec in registry.tools() {
            for scope in self.base(spec) {
                if !supported.iter().any(|known| known == scope) {
                    supported.push(scope.to_owned());
                }
            }
        }
        supported
    }

    /// `granted` and everything its scopes imply, transitively.
    fn closure(&self, granted: &BTreeSet<String>) -> BTreeSet<String> {
        let mut held = granted.clone();
        let mut todo: Vec<String> = granted.iter().cloned().collect();
        while let Some(scope) = todo.pop() {
            for implied in self.implies.get(&scope).into_iter().flatten() {
                if held.insert(implied.clone()) {
                    todo.push(implied.clone());
                }
            }
        }
        held
    }
}

/// Whether `scope` is a scope token as RFC 6749 (section 3.3) defines one: printable ASCII
/// without space, `"` or `\`, so that it goes into a challenge's quoted string as it is.
pub(super) fn is_scope_token(scope: &str) -> bool {
    !scope.is_empty()
        && scope
            .bytes()
            .all(|byte| matches!(byte, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn granted(scopes: &[&str]) -> BTreeSet<String> {
        scopes.iter().map(|scope| (*scope).to_owned()).collect()
    }

    #[test]
    fn a_broader_scope_grants_what_it_implies_transitively() {
        let mut policy = ScopePolicy::default();
        policy
            .implies
            .insert("admin".to_owned(), granted(&["tools:write"]));
        policy
            .implies
            .insert("tools:write".to_owned(), granted(&["tools:read"]));
        assert!(policy.grants(&granted(&["admin"]), &["tools:read", "tools:write"]));
        assert!(!policy.grants(&granted(&["tools:read"]), &["tools:write"]));
        assert!(policy.grants(&granted(&[]), &[]));
    }

    #[test]
    fn scope_tokens_are_printable_ascii_without_quote_backslash_or_space() {
        assert!(is_scope_token("refunds:large"));
        assert!(!is_scope_token(""));
        assert!(!is_scope_token("a b"));
        assert!(!is_scope_token("a\"b"));
        assert!(!is_scope_token("a\\b"));
        assert!(!is_scope_token("é"));
    }
}
