//! The rules across attributes and types, one `check_*` function each. Every error goes into
//! the `Ctxt`, at the smallest token that is wrong.

use std::collections::HashMap;

use quote::ToTokens;
use syn::ext::IdentExt;

use crate::ast::{Contract, Field, Output, OutputData};
use crate::attr::Limits;
use crate::ctxt::Ctxt;
use crate::model::{CheckedContract, CheckedOperation, Revisions};
use crate::symbol::{APPROVAL, EFFECT, OPERATION, OUTPUT, RECONCILE};
use crate::ty::{FieldType, is_sources_list};
use crate::value::{Effect, Format, Operation};

/// Checks every rule of a contract, and gives the checked model when its required keys and
/// description are all there (when one is not, an error says so).
pub fn check_contract<'a>(cx: &Ctxt, contract: &'a Contract<'a>) -> Option<CheckedContract<'a>> {
    check_required_keys(cx, contract);
    check_description(cx, contract);
    check_write_declarations(cx, contract);
    let operation = check_operation(cx, contract);
    let window = check_window(cx, contract, operation.as_ref());
    check_output_type(cx, contract);
    check_limits(cx, &contract.attrs.limits);
    check_fields(cx, &contract.fields, false);
    let attrs = &contract.attrs;
    Some(CheckedContract {
        ident: &contract.original.ident,
        name: contract.tool_name(),
        description: contract.doc.as_deref()?,
        output: attrs.output.as_ref()?,
        effect: attrs.effect.as_ref()?.value,
        source_label: attrs.source_label.as_ref(),
        producer_revision: attrs.producer_revision.as_ref(),
        approval: attrs.approval.as_ref().map(|approval| approval.value),
        operation,
        window,
        reconcile: attrs.reconcile.as_ref().map(|reconcile| &reconcile.value),
        source_tier: attrs.source_tier.as_ref().map(|tier| tier.value),
        additive: attrs.additive.is_some(),
        revisions: Revisions {
            input: attrs.input_revision.as_ref(),
            output: attrs.output_revision.as_ref(),
            effect: attrs.effect_revision.as_ref(),
            handler: attrs.handler_revision.as_ref(),
            policy: attrs.policy_revision.as_ref(),
        },
        limits: &attrs.limits,
        fields: &contract.fields,
    })
}

pub fn check_output(cx: &Ctxt, output: &Output) {
    check_limits(cx, &output.limits);
    check_grounded_output(cx, output);
    match &output.data {
        OutputData::Struct(fields) => check_fields(cx, fields, true),
        OutputData::Enum(variants) => {
            // Two variants with one string would make the string ambiguous:
            // `#[serde(rename = "paid")] Settled` beside `Paid` under `rename_all = "lowercase"`.
            let mut seen = HashMap::new();
            for variant in variants {
                if let Some(first) = seen.insert(variant.value.as_str(), variant.ident) {
                    cx.error_spanned_by(
                        &variant.value_tokens,
                        format!(
                            "`{}` serializes as \"{}\", like `{first}`; give each variant its own string",
                            variant.ident, variant.value
                        ),
                    );
                }
            }
        }
    }
}

/// A grounded type holds its sources in one `Vec<GroundingSource>` field, which validation
/// requires to be non-empty: `#[tool_output(grounded)] struct Advisor { name: String,
/// sources: Vec<GroundingSource> }`. A type with no such field cannot be grounded.
fn check_grounded_output(cx: &Ctxt, output: &Output) {
    let fields = match &output.data {
        OutputData::Struct(fields) => fields.as_slice(),
        OutputData::Enum(_) => {
            if let Some(grounded) = &output.grounded {
                cx.error_spanned_by(
                    grounded,
                    "`grounded` needs a struct that holds its sources; an enum is a bare \
                     string and cannot carry any",
                );
            }
            return;
        }
    };
    let mut lists = fields
        .iter()
        .filter(|field| is_sources_list(&field.original.ty));
    let first = lists.next();
    for extra in lists {
        cx.error_spanned_by(
            &extra.original.ty,
            "an output type holds its sources in one `Vec<GroundingSource>` field; merge \
             them into one list",
        );
    }
    if let (Some(grounded), None) = (&output.grounded, first) {
        cx.error_spanned_by(
            grounded,
            "`grounded` needs a field that holds the sources, and this type has none: add \
             `sources: Vec<tool_contract::evidence::GroundingSource>`",
        );
    }
}

/// Every contract names its output and effect: `#[tool_contract(output = OrderView, effect =
/// read_only)]`. (The source label and producer revision have defaults: the tool's name, and
/// the declaring crate's name and version.)
fn check_required_keys(cx: &Ctxt, contract: &Contract) {
    let attrs = &contract.attrs;
    let absent = |key: &str| !attrs.given.iter().any(|given| given == key);
    let missing = [
        (
            absent(OUTPUT),
            "output = ...",
            "name the type the tool returns",
        ),
        (
            absent(EFFECT),
            "effect = ...",
            "one of pure, read_only, idempotent_write, non_idempotent_write",
        ),
    ];
    for (is_missing, key, hint) in missing {
        if !is_missing {
            continue;
        }
        let message = format!("`#[tool_contract({key})]` is required on the struct: {hint}");
        match &attrs.original {
            Some(attr) => cx.error_spanned_by(attr, message),
            None => cx.error_spanned_by(&contract.original.ident, message),
        }
    }
}

/// The struct's doc comment is the description the model reads to choose the tool.
fn check_description(cx: &Ctxt, contract: &Contract) {
    if contract.doc.is_none() {
        cx.error_spanned_by(
            &contract.original.ident,
            "add a doc comment to the struct: it is the tool's description, which the model reads",
        );
    }
}

/// Writes declare approval; a non-idempotent write also declares how an unknown outcome is
/// reconciled (`reconcile = GetRefundStatus` or `reconcile = manual`). Reads declare neither.
fn check_write_declarations(cx: &Ctxt, contract: &Contract) {
    let attrs = &contract.attrs;
    let Some(effect) = &attrs.effect else {
        return;
    };
    if effect.value.is_write() && !attrs.given.iter().any(|key| key == APPROVAL) {
        cx.error_spanned_by(
            &effect.tokens,
            "a write must declare who approves it: `approval = by_caller`, \
             `approval = by_another` or `approval = not_required`",
        );
    }
    if let Some(additive) = attrs.additive.as_ref().filter(|_| !effect.value.is_write()) {
        cx.error_spanned_by(
            &additive.tokens,
            "`additive` says a write only adds (MCP's `destructiveHint: false`); this tool \
             does not change state",
        );
    }
    if let Some(approval) = attrs.approval.as_ref().filter(|_| !effect.value.is_write()) {
        cx.error_spanned_by(
            &approval.tokens,
            "`approval` applies to writes only; this tool does not change state",
        );
    }
    // A `reconcile` with a bad value was reported where it stands, not as missing too.
    let reconcile_given = attrs.given.iter().any(|key| key == RECONCILE);
    match (effect.value, &attrs.reconcile) {
        (Effect::NonIdempotentWrite, None) if !reconcile_given => cx.error_spanned_by(
            &effect.tokens,
            "a `non_idempotent_write` must declare how an unknown outcome is reconciled: \
             `reconcile = StatusTool` (a read_only contract that queries the status) or \
             `reconcile = manual`",
        ),
        (Effect::NonIdempotentWrite, _) | (_, None) => {}
        (_, Some(reconcile)) => cx.error_spanned_by(
            &reconcile.tokens,
            "`reconcile` applies to `non_idempotent_write` only; other effects are safe to retry",
        ),
    }
}

/// A contract's output is one object that derives `ToolOutput`, so that the model result
/// describes it and its limits apply: `output = Books`, never `output = Vec<Book>` or
/// `output = String`. A list is a field of an output struct, with its item limit.
fn check_output_type(cx: &Ctxt, contract: &Contract) {
    let Some(output) = &contract.attrs.output else {
        return;
    };
    if let Some(message) = not_an_object_output(output) {
        cx.error_spanned_by(output, message);
    }
}

/// Why `ty`, written as a contract's output, cannot be one; `None` for a named type (which
/// must then derive `ToolOutput`, as the compiler checks).
pub fn not_an_object_output(ty: &syn::Type) -> Option<String> {
    let shown = shown_type(ty);
    match FieldType::of(ty, false) {
        FieldType::Nested => None,
        FieldType::Vec(_) | FieldType::Unsupported(..) if list_item(ty).is_some() => {
            let item = list_item(ty).map_or_else(|| "Item".to_owned(), shown_type);
            Some(format!(
                "a contract's output is one object, not a list: wrap it in an output struct \
                 with its item limit, `#[derive(serde::Serialize, tool_contract::ToolOutput)] \
                 struct {item}List {{ #[tool_output(max_items = 100)] items: Vec<{item}> }}`, \
                 and say `output = {item}List`"
            ))
        }
        FieldType::Option(_) => Some(format!(
            "a contract's output is one object, not `{shown}`: a tool that finds nothing \
             fails with `FailureKind::NotFound`, or its output struct holds an `Option` field"
        )),
        _ => Some(format!(
            "a contract's output is one object, not `{shown}`: wrap it in a struct that \
             derives `ToolOutput`, e.g. `struct Answer {{ value: {shown} }}`"
        )),
    }
}

/// The item type of a list written as `Vec<T>`, `VecDeque<T>`, `[T; N]`, `[T]` or `&[T]`.
fn list_item(ty: &syn::Type) -> Option<&syn::Type> {
    match ty {
        syn::Type::Array(array) => Some(&array.elem),
        syn::Type::Slice(slice) => Some(&slice.elem),
        syn::Type::Reference(reference) => list_item(&reference.elem),
        syn::Type::Path(path) => {
            let last = path.path.segments.last()?;
            let listy = ["Vec", "VecDeque", "LinkedList", "HashSet", "BTreeSet"];
            if !listy.contains(&last.ident.to_string().as_str()) {
                return None;
            }
            match &last.arguments {
                syn::PathArguments::AngleBracketed(arguments) => {
                    arguments.args.iter().find_map(|argument| match argument {
                        syn::GenericArgument::Type(item) => Some(item),
                        _ => None,
                    })
                }
                _ => None,
            }
        }
        _ => None,
    }
}

/// A write says what makes two of its calls the same operation, which the ledger runs once:
/// `operation = [member_id, isbn]`, `per_call`, `key_rule` or `same_arguments`. There is no
/// default, because each guess drops a real action somewhere (borrow, return, borrow again
/// is two borrows with the same arguments). Reads declare none: each is its own. The fields
/// named are input fields, each once: `operation = [order_ref]` beside `order_ref: String`.
fn check_operation(cx: &Ctxt, contract: &Contract) -> Option<CheckedOperation> {
    let attrs = &contract.attrs;
    let effect = attrs.effect.as_ref()?;
    let given = attrs.given.iter().any(|key| key == OPERATION);
    let Some(operation) = &attrs.operation else {
        if effect.value.is_write() && !given {
            cx.error_spanned_by(
                &effect.tokens,
                "a write must say what makes two of its calls the same operation, which \
                 runs once: `operation = [field, ...]` (these input fields: the same values \
                 are one operation), `operation = per_call` (each model call is one; its \
                 retry runs once), `operation = key_rule` (the application's key, given to \
                 `DispatcherBuilder::operation_key`), or `operation = same_arguments` \
                 (identical arguments are one operation for the ledger's retention, so a \
                 real action repeated with the same arguments is replayed, not run)",
            );
        }
        return None;
    };
    if !effect.value.is_write() {
        cx.error_spanned_by(
            &operation.tokens,
            "`operation` applies to writes only; each call of a read is its own",
        );
        return None;
    }
    Some(match &operation.value {
        Operation::PerCall => CheckedOperation::PerCall,
        Operation::KeyRule => CheckedOperation::KeyRule,
        Operation::SameArguments => CheckedOperation::SameArguments,
        Operation::Fields(named) => {
            if named.is_empty() {
                cx.error_spanned_by(
                    &operation.tokens,
                    "name at least one input field, or choose `per_call`, `key_rule` or \
                     `same_arguments`",
                );
            }
            let mut keys: Vec<String> = Vec::new();
            for ident in named {
                let name = ident.unraw();
                let field = contract
                    .fields
                    .iter()
                    .find(|field| field.ident.unraw() == name);
                match field {
                    None => cx.error_spanned_by(
                        ident,
                        format!(
                            "`{name}` is not a field of `{}`; an operation is named by input fields",
                            contract.original.ident
                        ),
                    ),
                    Some(field) if keys.contains(&field.key) => {
                        cx.error_spanned_by(ident, format!("`{name}` is named twice"));
                    }
                    Some(field) => keys.push(field.key.clone()),
                }
            }
            CheckedOperation::Fields(keys)
        }
    })
}

/// `within = "30d"` bounds how long an operation named by its fields or the application's key
/// stays one (without it: for good). `per_call` and `same_arguments` keep the ledger's
/// retention, so a window there would promise what the rule does not keep:
/// `operation = [order_ref], within = "30d"`.
fn check_window(
    cx: &Ctxt,
    contract: &Contract,
    operation: Option<&CheckedOperation>,
) -> Option<u64> {
    let within = contract.attrs.within.as_ref()?;
    match operation {
        Some(CheckedOperation::Fields(_) | CheckedOperation::KeyRule) => Some(within.value),
        Some(CheckedOperation::PerCall | CheckedOperation::SameArguments) => {
            cx.error_spanned_by(
                &within.tokens,
                "`within` bounds an operation named by its fields or key (`operation = \
                 [field, ...]` or `key_rule`), kept for good without it; `per_call` and \
                 `same_arguments` keep the ledger's retention",
            );
            None
        }
        // The missing or misplaced `operation` is reported where it is.
        None => None,
    }
}

/// The deepest nesting a contract may allow: free-form values are read recursively, and this
/// keeps the stack small on any thread (256 levels stay far below a 2 MiB stack).
const MAX_DEPTH_LIMIT: usize = 256;

/// `max_depth = 0` would refuse every object and `max_bytes = 0` every document; a depth over
/// 256 would let hostile input run the reader's stack deep.
fn check_limits(cx: &Ctxt, limits: &Limits) {
    for limit in [&limits.max_depth, &limits.max_bytes].into_iter().flatten() {
        if limit.value == 0 {
            cx.error_spanned_by(&limit.tokens, "must be at least 1");
        }
    }
    if let Some(depth) = limits
        .max_depth
        .as_ref()
        .filter(|d| d.value > MAX_DEPTH_LIMIT)
    {
        cx.error_spanned_by(
            &depth.tokens,
            format!("`max_depth` may be at most {MAX_DEPTH_LIMIT}"),
        );
    }
}

fn check_fields(cx: &Ctxt, fields: &[Field], output: bool) {
    let mut keys: HashMap<&str, &syn::Ident> = HashMap::new();
    for field in fields {
        if let Some(first) = keys.insert(field.key.as_str(), field.ident) {
            cx.error_spanned_by(
                &field.key_tokens,
                format!(
                    "`{}` has the JSON key \"{}\", like `{first}`; give each field its own key",
                    field.ident, field.key
                ),
            );
        }
        if let Some((ty, why)) = field.ty.unsupported() {
            let shown = shown_type(ty);
            cx.error_spanned_by(ty, format!("unsupported field type `{shown}`: {why}"));
            continue;
        }
        check_rules(cx, field);
        check_free_form(cx, field);
        check_serde_with(cx, field, output);
        if output {
            check_bound_type(cx, field);
        }
        check_forbidden_key(cx, field, output);
    }
}

/// A key the runtime's default lists forbid, unless allowed on purpose: an output field's
/// would show the model a secret, an input field's would ask the model for one. The lists are
/// read on the ASCII form the runtime reads a key beyond ASCII as: `access_token`, `api_key`,
/// `card_number`, `cvv`, `stripe_key`.
fn check_forbidden_key(cx: &Ctxt, field: &Field, output: bool) {
    if field.rules.allow_forbidden_key || !crate::forbidden::is_forbidden(&field.key) {
        return;
    }
    let message = if output {
        format!(
            "output field key \"{}\" is forbidden: credentials, payment and one-time secrets \
             and control fields (tokens, passwords, keys, card numbers, PINs, call and \
             operation ids, digests) must never reach the model; rename the field, leave the \
             value out, or, if the name only contains such a word (`token_count`), mark it \
             `#[tool_output(allow_forbidden_key)]`",
            field.key
        )
    } else {
        format!(
            "input field key \"{}\" is forbidden: a model must never be asked to send a \
             secret (credentials, payment and one-time secrets, keys, call and operation \
             ids); take it from the application's own state or the call's context, or, if the \
             name only contains such a word (`token_budget`), mark it \
             `#[tool_contract(allow_forbidden_key)]`",
            field.key
        )
    };
    cx.error_spanned_by(&field.key_tokens, message);
}

/// Each rule applies to the type under every `Option` and `Vec`: `max_len` to a String,
/// `minimum` to a number, `max_items` to a Vec. `#[tool_contract(max_len = 3)] n: u32` is
/// a mistake.
fn check_rules(cx: &Ctxt, field: &Field) {
    let rules = &field.rules;
    let inner = field.ty.innermost();
    let is_string = matches!(inner, FieldType::String);
    let is_number = matches!(inner, FieldType::Int | FieldType::Float);
    let name = field.ident;

    for (rule, key) in [(&rules.max_len, "max_len"), (&rules.min_len, "min_len")] {
        if let Some(rule) = rule.as_ref().filter(|_| !is_string) {
            cx.error_spanned_by(
                &rule.tokens,
                format!("`{key}` applies to strings, and `{name}` is not a String"),
            );
        }
    }
    if let Some(pattern) = &rules.pattern {
        if !is_string {
            cx.error_spanned_by(
                pattern,
                format!("`pattern` applies to strings, and `{name}` is not a String"),
            );
        } else if let Err(error) = regex_syntax::Parser::new().parse(&pattern.value()) {
            let error = error.to_string();
            let reason = error.lines().last().unwrap_or("invalid pattern").trim();
            cx.error_spanned_by(pattern, format!("invalid `pattern`: {reason}"));
        }
        if rules.format.is_some() {
            cx.error_spanned_by(pattern, "give `pattern` or `format`, not both");
        }
    }
    if let Some(format) = &rules.format {
        let fits = match format.value {
            Format::Rfc3339 | Format::Rfc3339Utc => {
                matches!(inner, FieldType::String | FieldType::DateTime)
            }
            Format::HttpsUrl => is_string,
        };
        if !fits {
            cx.error_spanned_by(
                &format.tokens,
                format!("this `format` does not apply to the type of `{name}`"),
            );
        }
    }
    if let Some(max_items) = rules.max_items.as_ref().filter(|_| !field.ty.has_vec()) {
        cx.error_spanned_by(
            &max_items.tokens,
            format!("`max_items` applies to `Vec<T>`, and `{name}` is not one"),
        );
    }
    for (rule, key) in [(&rules.minimum, "minimum"), (&rules.maximum, "maximum")] {
        if let Some(rule) = rule.as_ref().filter(|_| !is_number) {
            cx.error_spanned_by(
                &rule.tokens,
                format!("`{key}` applies to numbers, and `{name}` is not one"),
            );
        }
    }
    if let (Some(min), Some(max)) = (&rules.min_len, &rules.max_len)
        && min.value > max.value
    {
        cx.error_spanned_by(&min.tokens, "`min_len` is greater than `max_len`");
    }
    if let (Some(min), Some(max)) = (&rules.minimum, &rules.maximum)
        && min.value > max.value
    {
        cx.error_spanned_by(&min.tokens, "`minimum` is greater than `maximum`");
    }
    check_grounded_field(cx, field);
    check_synthetic(cx, field);
}

/// `#[tool_output(grounded)]` on a field: the field is the sources (`Vec<GroundingSource>`,
/// then non-empty), or holds entities that carry them (a struct with such a field, alone or
/// under `Option`/`Vec`; checked at compile time where the field's type is known).
fn check_grounded_field(cx: &Ctxt, field: &Field) {
    let Some(grounded) = &field.rules.grounded else {
        return;
    };
    if is_sources_list(&field.original.ty) || matches!(field.ty.innermost(), FieldType::Nested) {
        return;
    }
    cx.error_spanned_by(
        grounded,
        format!(
            "`grounded` needs a field that can hold sources: `Vec<GroundingSource>`, or a \
             struct with such a field; `{}` can hold none",
            field.ident
        ),
    );
}

/// `reject_synthetic(...)` runs on strings; `strip_synthetic(...)` must have somewhere to drop
/// the value to: `Option<String>` becomes null, an item of `Vec<String>` goes.
fn check_synthetic(cx: &Ctxt, field: &Field) {
    let Some(synthetic) = &field.rules.synthetic else {
        return;
    };
    let name = field.ident;
    if !matches!(field.ty.innermost(), FieldType::String) {
        cx.error_spanned_by(
            &synthetic.tokens,
            format!("synthetic-data detectors read strings, and `{name}` is not a String"),
        );
    } else if synthetic.value.strip && !matches!(field.ty, FieldType::Option(_) | FieldType::Vec(_))
    {
        cx.error_spanned_by(
            &synthetic.tokens,
            format!(
                "`strip_synthetic` removes the value, and `{name}` must have one: make it \
                 `Option<String>` (stripped to null) or `Vec<String>` (the item goes), or use \
                 `reject_synthetic`"
            ),
        );
    }
}

/// A free-form `serde_json::Value` is accepted only with explicit limits:
/// `#[tool_output(free_form(max_depth = 4, max_bytes = 4096))] extra: serde_json::Value`.
fn check_free_form(cx: &Ctxt, field: &Field) {
    let is_json = matches!(field.ty.innermost(), FieldType::Json);
    if let Some(free_form) = &field.rules.free_form
        && free_form.value.max_depth > MAX_DEPTH_LIMIT
    {
        cx.error_spanned_by(
            &free_form.tokens,
            format!("`free_form(max_depth = ...)` may be at most {MAX_DEPTH_LIMIT}"),
        );
    }
    match (&field.rules.free_form, is_json) {
        (None, true) => cx.error_spanned_by(
            &field.original.ty,
            "a `serde_json::Value` field needs explicit limits: \
             `free_form(max_depth = N, max_bytes = N)` in the field's attribute",
        ),
        (Some(free_form), false) => cx.error_spanned_by(
            &free_form.tokens,
            "`free_form` applies to `serde_json::Value` fields only",
        ),
        _ => {}
    }
}

/// `#[serde(with = ...)]` could give a field any JSON shape; it is accepted only where it sets
/// the RFC 3339 form of a `time::OffsetDateTime`, which an output field needs:
/// `#[serde(with = "time::serde::rfc3339")] observed_at: OffsetDateTime`.
fn check_serde_with(cx: &Ctxt, field: &Field, output: bool) {
    let is_time = matches!(field.ty.innermost(), FieldType::DateTime);
    match (&field.serde.with, is_time) {
        (Some(with), false) => cx.error_spanned_by(
            with,
            "`#[serde(with = ...)]` is only supported on `time::OffsetDateTime` fields, \
             where it sets the RFC 3339 form",
        ),
        (None, true) if output => cx.error_spanned_by(
            &field.original.ty,
            "an `OffsetDateTime` output field must serialize as RFC 3339: add \
             `#[serde(with = \"time::serde::rfc3339\")]` (`time::serde::rfc3339::option` \
             for `Option<OffsetDateTime>`)",
        ),
        _ => {}
    }
}

/// `bound = order_ref` compares the output value with the input's: it needs a String, bool or
/// integer on this side (the input side is checked where the contract meets its output).
fn check_bound_type(cx: &Ctxt, field: &Field) {
    if let Some(bound) = &field.rules.bound
        && field.ty.bound_kind().is_none()
    {
        cx.error_spanned_by(
            bound,
            format!(
                "`bound` needs a String, bool or integer field, and `{}` is none of these",
                field.ident
            ),
        );
    }
}

/// `ty` as written, without the spaces token printing puts between its parts, but for the one
/// after a lifetime (`&'a str`).
fn shown_type(ty: &syn::Type) -> String {
    let text = ty.to_token_stream().to_string();
    let mut shown = String::with_capacity(text.len());
    let mut in_lifetime = false;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' {
            let word_follows = chars
                .peek()
                .is_some_and(|&next| next.is_alphanumeric() || next == '_');
            if in_lifetime && word_follows {
                shown.push(' ');
            }
            in_lifetime = false;
            continue;
        }
        if c == '\'' {
            in_lifetime = true;
        } else if !(c.is_alphanumeric() || c == '_') {
            in_lifetime = false;
        }
        shown.push(c);
    }
    shown
}
