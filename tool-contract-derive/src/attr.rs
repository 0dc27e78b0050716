//! Every `#[tool_contract(...)]`, `#[tool_output(...)]` and relevant `#[serde(...)]` attribute,
//! parsed with `parse_nested_meta`.
//!
//! Parsers return no `Result`: each error goes into the `Ctxt` and parsing goes on, so the user
//! sees every bad attribute in one build.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::{Attribute, Ident, LitInt, LitStr, Token};

use crate::case::RenameRule;
use crate::ctxt::Ctxt;
use crate::symbol::*;
use crate::value::{
    Approval, BuiltinDetector, Detector, Effect, Format, Operation, Reconcile, SourceTier,
    Synthetic,
};

/// A value set at most once, remembering the tokens that set it.
struct Attr<'c, T> {
    cx: &'c Ctxt,
    /// The attribute the key sits in (`tool_contract`, `serde`, `free_form`, …).
    within: &'static str,
    name: &'static str,
    value: Option<(TokenStream, T)>,
}

impl<'c, T> Attr<'c, T> {
    fn none(cx: &'c Ctxt, within: &'static str, name: &'static str) -> Self {
        Attr {
            cx,
            within,
            name,
            value: None,
        }
    }

    fn set<A: ToTokens>(&mut self, tokens: A, value: T) {
        let tokens = tokens.into_token_stream();
        if self.value.is_some() {
            let message = format!(
                "duplicate `#[{}({})]` key; give it once",
                self.within, self.name
            );
            self.cx.error_spanned_by(tokens, message);
        } else {
            self.value = Some((tokens, value));
        }
    }

    fn get(self) -> Option<T> {
        self.value.map(|(_, value)| value)
    }

    fn get_with_tokens(self) -> Option<Spanned<T>> {
        self.value.map(|(tokens, value)| Spanned { tokens, value })
    }
}

/// A parsed value with the tokens it came from, for errors that point at it.
#[derive(Clone)]
pub struct Spanned<T> {
    pub tokens: TokenStream,
    pub value: T,
}

#[derive(Clone, Copy)]
pub struct FreeForm {
    pub max_depth: usize,
    pub max_bytes: usize,
}

/// `max_bytes` and `max_depth` on a contract or an output type.
#[derive(Default)]
pub struct Limits {
    pub max_bytes: Option<Spanned<usize>>,
    pub max_depth: Option<Spanned<usize>>,
}

/// `#[tool_contract(...)]` on the struct.
pub struct ContractAttrs {
    /// The first `#[tool_contract]` attribute, where "missing key" errors point.
    pub original: Option<Attribute>,
    /// Every key given, valid or not: a key with a bad value is not also "missing".
    pub given: Vec<String>,
    pub output: Option<syn::Type>,
    pub effect: Option<Spanned<Effect>>,
    pub source_label: Option<LitStr>,
    pub producer_revision: Option<LitStr>,
    pub name: Option<LitStr>,
    pub approval: Option<Spanned<Approval>>,
    pub reconcile: Option<Spanned<Reconcile>>,
    pub operation: Option<Spanned<Operation>>,
    /// `within = "30d"`: how long an operation stays one, in seconds.
    pub within: Option<Spanned<u64>>,
    pub input_revision: Option<LitStr>,
    pub output_revision: Option<LitStr>,
    pub effect_revision: Option<LitStr>,
    pub handler_revision: Option<LitStr>,
    pub policy_revision: Option<LitStr>,
    pub source_tier: Option<Spanned<SourceTier>>,
    /// `additive`: the write only adds to what it changes.
    pub additive: Option<Spanned<()>>,
    pub limits: Limits,
}

impl ContractAttrs {
    pub fn from_ast(cx: &Ctxt, attrs: &[Attribute]) -> Self {
        let ns = Namespace::Contract.attribute();
        let mut output = Attr::none(cx, ns, OUTPUT);
        let mut effect = Attr::none(cx, ns, EFFECT);
        let mut source_label = Attr::none(cx, ns, SOURCE_LABEL);
        let mut producer_revision = Attr::none(cx, ns, PRODUCER_REVISION);
        let mut name = Attr::none(cx, ns, NAME);
        let mut approval = Attr::none(cx, ns, APPROVAL);
        let mut reconcile = Attr::none(cx, ns, RECONCILE);
        let mut operation = Attr::none(cx, ns, OPERATION);
        let mut within = Attr::none(cx, ns, WITHIN);
        let mut input_revision = Attr::none(cx, ns, INPUT_REVISION);
        let mut output_revision = Attr::none(cx, ns, OUTPUT_REVISION);
        let mut effect_revision = Attr::none(cx, ns, EFFECT_REVISION);
        let mut handler_revision = Attr::none(cx, ns, HANDLER_REVISION);
        let mut policy_revision = Attr::none(cx, ns, POLICY_REVISION);
        let mut source_tier = Attr::none(cx, ns, SOURCE_TIER);
        let mut max_bytes = Attr::none(cx, ns, MAX_BYTES);
        let mut max_depth = Attr::none(cx, ns, MAX_DEPTH);
        let mut additive = Attr::none(cx, ns, ADDITIVE);
        let mut original = None;
        let mut given = Vec::new();

        for attr in attrs.iter().filter(|attr| attr.path().is_ident(ns)) {
            original.get_or_insert_with(|| attr.clone());
            let result = attr.parse_nested_meta(|meta| {
                let path = meta.path.clone();
                given.push(path.to_token_stream().to_string());
                if path.is_ident(OUTPUT) {
                    let ty: syn::Type = meta.value()?.parse()?;
                    output.set(&path, ty);
                } else if path.is_ident(EFFECT) {
                    let ident: Ident = meta.value()?.parse()?;
                    if let Some(value) = parse_choice(cx, &ident, "effect", Effect::CHOICES) {
                        effect.set(&ident, value);
                    }
                } else if path.is_ident(APPROVAL) {
                    let ident: Ident = meta.value()?.parse()?;
                    if ident == Approval::RETIRED {
                        cx.error_spanned_by(&ident, RETIRED_APPROVAL);
                    } else if let Some(value) =
                        parse_choice(cx, &ident, "approval", Approval::CHOICES)
                    {
                        approval.set(&ident, value);
                    }
                } else if path.is_ident(SOURCE_TIER) {
                    let ident: Ident = meta.value()?.parse()?;
                    if let Some(tier) = parse_choice(cx, &ident, "source tier", SourceTier::CHOICES)
                    {
                        source_tier.set(&ident, tier);
                    }
                } else if path.is_ident(RECONCILE) {
                    let value = meta.value()?;
                    if value.peek(LitStr) {
                        // Read on, so the keys after it are checked as written.
                        let lit: LitStr = value.parse()?;
                        cx.error_spanned_by(&lit, reconcile_as_string(&lit));
                        return Ok(());
                    }
                    let target: syn::Path = value.parse()?;
                    let value = if target.is_ident("manual") {
                        Reconcile::Manual
                    } else {
                        Reconcile::Tool(target.clone())
                    };
                    reconcile.set(&target, value);
                } else if path.is_ident(OPERATION) {
                    let (tokens, value) = parse_operation(cx, meta.value()?)?;
                    if let Some(value) = value {
                        operation.set(&tokens, value);
                    }
                } else if path.is_ident(WITHIN) {
                    let lit: LitStr = meta.value()?.parse()?;
                    match parse_window(&lit.value()) {
                        Some(seconds) => within.set(&lit, seconds),
                        None => cx.error_spanned_by(&lit, WINDOW_SYNTAX),
                    }
                } else if let Some(slot) = [
                    (SOURCE_LABEL, &mut source_label),
                    (PRODUCER_REVISION, &mut producer_revision),
                    (NAME, &mut name),
                    (INPUT_REVISION, &mut input_revision),
                    (OUTPUT_REVISION, &mut output_revision),
                    (EFFECT_REVISION, &mut effect_revision),
                    (HANDLER_REVISION, &mut handler_revision),
                    (POLICY_REVISION, &mut policy_revision),
                ]
                .into_iter()
                .find_map(|(key, slot)| path.is_ident(key).then_some(slot))
                {
                    let lit: LitStr = meta.value()?.parse()?;
                    if lit.value().is_empty() {
                        cx.error_spanned_by(&lit, "must not be empty");
                    }
                    slot.set(&path, lit);
                } else if path.is_ident(ADDITIVE) {
                    if meta.input.peek(syn::Token![=]) {
                        let value: syn::Expr = meta.value()?.parse()?;
                        cx.error_spanned_by(
                            &value,
                            "`additive` is a word of its own: write `additive`, or leave it out",
                        );
                        return Ok(());
                    }
                    additive.set(&path, ());
                } else if path.is_ident(MAX_BYTES) {
                    max_bytes.set(&path, parse_usize(&meta)?);
                } else if path.is_ident(MAX_DEPTH) {
                    max_depth.set(&path, parse_usize(&meta)?);
                } else {
                    unknown_key(cx, &meta, ns, CONTRACT_KEYS)?;
                }
                Ok(())
            });
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }

        ContractAttrs {
            original,
            given,
            output: output.get(),
            effect: effect.get_with_tokens(),
            source_label: source_label.get(),
            producer_revision: producer_revision.get(),
            name: name.get(),
            approval: approval.get_with_tokens(),
            reconcile: reconcile.get_with_tokens(),
            operation: operation.get_with_tokens(),
            within: within.get_with_tokens(),
            input_revision: input_revision.get(),
            output_revision: output_revision.get(),
            effect_revision: effect_revision.get(),
            handler_revision: handler_revision.get(),
            policy_revision: policy_revision.get(),
            source_tier: source_tier.get_with_tokens(),
            additive: additive.get_with_tokens(),
            limits: Limits {
                max_bytes: max_bytes.get_with_tokens(),
                max_depth: max_depth.get_with_tokens(),
            },
        }
    }
}

/// How `within` is written.
const WINDOW_SYNTAX: &str = "`within` is how long an operation stays one: a whole number of \
     seconds, minutes, hours or days above zero, such as \"30d\", \"12h\", \"90m\" or \"45s\"";

/// `"30d"` as seconds: a whole number above zero and one unit (`s`, `m`, `h`, `d`); `None` for
/// anything else, or a window past what a `u64` of milliseconds holds.
fn parse_window(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let seconds_per = match unit {
        's' => 1,
        'm' => 60,
        'h' => 3_600,
        'd' => 86_400,
        _ => return None,
    };
    let number = &text[..text.len() - 1];
    if number.is_empty() || !number.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let seconds = number.parse::<u64>().ok()?.checked_mul(seconds_per)?;
    (seconds > 0 && seconds.checked_mul(1_000).is_some()).then_some(seconds)
}

/// `operation = [field, ...]` or one of the named rules; the tokens that said it, and the
/// rule when it is one.
fn parse_operation(cx: &Ctxt, value: ParseStream) -> syn::Result<(TokenStream, Option<Operation>)> {
    if value.peek(syn::token::Bracket) {
        let content;
        let brackets = syn::bracketed!(content in value);
        let fields = content.parse_terminated(Ident::parse_any, Token![,])?;
        let mut tokens = TokenStream::new();
        brackets.surround(&mut tokens, |inner| fields.to_tokens(inner));
        return Ok((
            tokens,
            Some(Operation::Fields(fields.into_iter().collect())),
        ));
    }
    let ident: Ident = value.parse()?;
    let rule = match ident.to_string().as_str() {
        "per_call" => Some(Operation::PerCall),
        "key_rule" => Some(Operation::KeyRule),
        "same_arguments" => Some(Operation::SameArguments),
        name => {
            cx.error_spanned_by(
                &ident,
                format!(
                    "unknown operation rule `{name}`; expected `[field, ...]`, {}{}",
                    Operation::CHOICES.join(", "),
                    did_you_mean(name, Operation::CHOICES)
                ),
            );
            None
        }
    };
    Ok((ident.to_token_stream(), rule))
}

/// The value `ident` names among `choices`; otherwise an error listing them (`what` says
/// what they are), with the closest as a suggestion.
fn parse_choice<T: Copy>(cx: &Ctxt, ident: &Ident, what: &str, choices: &[(&str, T)]) -> Option<T> {
    let name = ident.to_string();
    if let Some((_, value)) = choices.iter().find(|(known, _)| *known == name) {
        return Some(*value);
    }
    let names: Vec<&str> = choices.iter().map(|(known, _)| *known).collect();
    let message = format!(
        "unknown {what} `{name}`; expected one of {}{}",
        names.join(", "),
        did_you_mean(&name, &names)
    );
    cx.error_spanned_by(ident, message);
    None
}

/// Why `approval = required` no longer compiles: it said a person approves, not who, and a
/// reader took it for "someone else" while the caller's own answer could grant it.
const RETIRED_APPROVAL: &str = "`approval = required` does not say who approves; write \
     `approval = by_caller` (the person at the caller's client confirms, as MCP's form asks) \
     or `approval = by_another` (someone other than the caller approves: a supervisor, the \
     approvals console), or `approval = not_required`";

/// `#[tool_output(...)]` on an output type.
pub struct OutputAttrs {
    pub limits: Limits,
    /// `grounded`: the tokens that said it.
    pub grounded: Option<TokenStream>,
}

/// `#[tool_output(...)]` on an output type.
pub fn output_container(cx: &Ctxt, attrs: &[Attribute]) -> OutputAttrs {
    let mut max_bytes = Attr::none(cx, TOOL_OUTPUT, MAX_BYTES);
    let mut max_depth = Attr::none(cx, TOOL_OUTPUT, MAX_DEPTH);
    let mut grounded = Attr::none(cx, TOOL_OUTPUT, GROUNDED);
    for attr in attrs
        .iter()
        .filter(|attr| attr.path().is_ident(TOOL_OUTPUT))
    {
        let result = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident(MAX_BYTES) {
                max_bytes.set(&meta.path, parse_usize(&meta)?);
            } else if meta.path.is_ident(MAX_DEPTH) {
                max_depth.set(&meta.path, parse_usize(&meta)?);
            } else if meta.path.is_ident(GROUNDED) {
                grounded.set(&meta.path, ());
            } else {
                unknown_key(cx, &meta, TOOL_OUTPUT, OUTPUT_KEYS)?;
            }
            Ok(())
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    OutputAttrs {
        limits: Limits {
            max_bytes: max_bytes.get_with_tokens(),
            max_depth: max_depth.get_with_tokens(),
        },
        grounded: grounded.get_with_tokens().map(|spanned| spanned.tokens),
    }
}

/// The rules on one field, in either namespace.
#[derive(Default)]
pub struct FieldAttrs {
    pub max_len: Option<Spanned<u32>>,
    pub min_len: Option<Spanned<u32>>,
    pub pattern: Option<LitStr>,
    pub format: Option<Spanned<Format>>,
    pub max_items: Option<Spanned<u32>>,
    pub minimum: Option<Spanned<f64>>,
    pub maximum: Option<Spanned<f64>>,
    pub free_form: Option<Spanned<FreeForm>>,
    pub bound: Option<Ident>,
    /// `grounded`: the tokens that said it.
    pub grounded: Option<TokenStream>,
    pub synthetic: Option<Spanned<Synthetic>>,
    /// `allow_forbidden_key`: the key is meant, though the forbidden lists hold it.
    pub allow_forbidden_key: bool,
}

impl FieldAttrs {
    /// Parses the field attributes of `namespace`; `bound` only exists in `tool_output`.
    pub fn from_ast(cx: &Ctxt, namespace: Namespace, attrs: &[Attribute]) -> Self {
        let within = namespace.attribute();
        let mut max_len = Attr::none(cx, within, MAX_LEN);
        let mut min_len = Attr::none(cx, within, MIN_LEN);
        let mut pattern = Attr::none(cx, within, PATTERN);
        let mut format = Attr::none(cx, within, FORMAT);
        let mut max_items = Attr::none(cx, within, MAX_ITEMS);
        let mut minimum = Attr::none(cx, within, MINIMUM);
        let mut maximum = Attr::none(cx, within, MAXIMUM);
        let mut free_form = Attr::none(cx, within, FREE_FORM);
        let mut bound = Attr::none(cx, within, BOUND);
        let mut grounded = Attr::none(cx, within, GROUNDED);
        let mut allow_forbidden_key = Attr::none(cx, within, ALLOW_FORBIDDEN_KEY);
        // One slot for both, so that declaring both is the duplicate it is.
        let mut synthetic = Attr::none(cx, within, "reject_synthetic/strip_synthetic");
        let output = namespace == Namespace::Output;
        let keys = if output {
            OUTPUT_FIELD_KEYS
        } else {
            INPUT_FIELD_KEYS
        };

        for attr in attrs.iter().filter(|attr| attr.path().is_ident(within)) {
            let result = attr.parse_nested_meta(|meta| {
                let path = meta.path.clone();
                if path.is_ident(MAX_LEN) {
                    max_len.set(&path, parse_u32(&meta)?);
                } else if path.is_ident(MIN_LEN) {
                    min_len.set(&path, parse_u32(&meta)?);
                } else if path.is_ident(MAX_ITEMS) {
                    max_items.set(&path, parse_u32(&meta)?);
                } else if path.is_ident(PATTERN) {
                    let lit: LitStr = meta.value()?.parse()?;
                    pattern.set(&path, lit);
                } else if path.is_ident(FORMAT) {
                    let ident: Ident = meta.value()?.parse()?;
                    let value = parse_choice(cx, &ident, "format", Format::CHOICES);
                    if let Some(value) = value {
                        format.set(&path, value);
                    }
                } else if path.is_ident(MINIMUM) {
                    minimum.set(&path, parse_number(meta.value()?)?);
                } else if path.is_ident(MAXIMUM) {
                    maximum.set(&path, parse_number(meta.value()?)?);
                } else if path.is_ident(FREE_FORM) {
                    free_form.set(&path, parse_free_form(cx, &meta)?);
                } else if output && path.is_ident(BOUND) {
                    let ident: Ident = meta.value()?.parse()?;
                    bound.set(&path, ident);
                } else if output && path.is_ident(GROUNDED) {
                    grounded.set(&path, ());
                } else if path.is_ident(ALLOW_FORBIDDEN_KEY) {
                    allow_forbidden_key.set(&path, ());
                } else if output
                    && (path.is_ident(REJECT_SYNTHETIC) || path.is_ident(STRIP_SYNTHETIC))
                {
                    let strip = path.is_ident(STRIP_SYNTHETIC);
                    synthetic.set(&path, parse_synthetic(cx, &meta, strip)?);
                } else {
                    unknown_key(cx, &meta, within, keys)?;
                }
                Ok(())
            });
            if let Err(error) = result {
                cx.syn_error(error);
            }
        }

        FieldAttrs {
            max_len: max_len.get_with_tokens(),
            min_len: min_len.get_with_tokens(),
            pattern: pattern.get(),
            format: format.get_with_tokens(),
            max_items: max_items.get_with_tokens(),
            minimum: minimum.get_with_tokens(),
            maximum: maximum.get_with_tokens(),
            free_form: free_form.get_with_tokens(),
            bound: bound.get(),
            grounded: grounded.get_with_tokens().map(|spanned| spanned.tokens),
            synthetic: synthetic.get_with_tokens(),
            allow_forbidden_key: allow_forbidden_key.get().is_some(),
        }
    }
}

/// `reject_synthetic(placeholder_email, with = crate::looks_made_up)`.
fn parse_synthetic(cx: &Ctxt, meta: &ParseNestedMeta, strip: bool) -> syn::Result<Synthetic> {
    let builtin: Vec<&str> = BuiltinDetector::CHOICES
        .iter()
        .map(|(name, _)| *name)
        .collect();
    let key = if strip {
        STRIP_SYNTHETIC
    } else {
        REJECT_SYNTHETIC
    };
    let needs_one = || {
        format!(
            "`{key}` needs at least one detector: `{key}({})`",
            builtin[0]
        )
    };
    // `strip_synthetic()`: syn would say "expected nested attribute"; say what is missing.
    if meta.input.peek(syn::token::Paren) {
        let fork = meta.input.fork();
        let content;
        syn::parenthesized!(content in fork);
        if content.is_empty() {
            let _empty;
            syn::parenthesized!(_empty in meta.input);
            return Err(meta.error(needs_one()));
        }
    }
    let mut detectors = Vec::new();
    let mut unknown = false;
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident(WITH) {
            let path: syn::Path = inner.value()?.parse()?;
            detectors.push(Detector::Custom(path));
        } else if let Some((_, detector)) = BuiltinDetector::CHOICES
            .iter()
            .find(|(name, _)| inner.path.is_ident(name))
        {
            detectors.push(Detector::Builtin(*detector));
        } else {
            let key = inner.path.to_token_stream().to_string().replace(' ', "");
            let message = format!(
                "unknown synthetic-data detector `{key}`; expected one of {}, or \
                 `with = path::to::fn` for a `fn(&str) -> bool` of your own{}",
                builtin.join(", "),
                did_you_mean(&key, &builtin)
            );
            cx.error_spanned_by(&inner.path, message);
            unknown = true;
            skip_value(inner.input)?;
        }
        Ok(())
    })?;
    if detectors.is_empty() && !unknown {
        return Err(meta.error(needs_one()));
    }
    Ok(Synthetic { strip, detectors })
}

fn parse_free_form(cx: &Ctxt, meta: &ParseNestedMeta) -> syn::Result<FreeForm> {
    let mut max_depth = Attr::none(cx, FREE_FORM, MAX_DEPTH);
    let mut max_bytes = Attr::none(cx, FREE_FORM, MAX_BYTES);
    meta.parse_nested_meta(|inner| {
        if inner.path.is_ident(MAX_DEPTH) {
            max_depth.set(&inner.path, parse_usize(&inner)?);
        } else if inner.path.is_ident(MAX_BYTES) {
            max_bytes.set(&inner.path, parse_usize(&inner)?);
        } else {
            unknown_key(cx, &inner, FREE_FORM, &[MAX_DEPTH, MAX_BYTES])?;
        }
        Ok(())
    })?;
    match (max_depth.get(), max_bytes.get()) {
        (Some(max_depth), Some(max_bytes)) => Ok(FreeForm {
            max_depth,
            max_bytes,
        }),
        _ => {
            Err(meta
                .error("`free_form` needs both limits: `free_form(max_depth = N, max_bytes = N)`"))
        }
    }
}

fn parse_u32(meta: &ParseNestedMeta) -> syn::Result<u32> {
    let lit: LitInt = meta.value()?.parse()?;
    lit.base10_parse()
}

fn parse_usize(meta: &ParseNestedMeta) -> syn::Result<usize> {
    let lit: LitInt = meta.value()?.parse()?;
    lit.base10_parse()
}

/// A number literal, possibly negative: `0`, `-5`, `0.5`.
fn parse_number(input: ParseStream) -> syn::Result<f64> {
    let negative = input.parse::<Option<Token![-]>>()?.is_some();
    let lookahead = input.lookahead1();
    let value: f64 = if lookahead.peek(LitInt) {
        input.parse::<LitInt>()?.base10_parse()?
    } else if lookahead.peek(syn::LitFloat) {
        input.parse::<syn::LitFloat>()?.base10_parse()?
    } else {
        return Err(lookahead.error());
    };
    if !value.is_finite() {
        return Err(input.error("the number must be finite"));
    }
    Ok(if negative { -value } else { value })
}

/// Records an unknown key (suggesting a close one) and skips its value, so that the keys after
/// it are still checked.
fn unknown_key(cx: &Ctxt, meta: &ParseNestedMeta, within: &str, known: &[&str]) -> syn::Result<()> {
    let key = meta.path.to_token_stream().to_string().replace(' ', "");
    let message = format!(
        "unknown `{within}` attribute `{key}`{}",
        did_you_mean(&key, known)
    );
    cx.error_spanned_by(&meta.path, message);
    skip_value(meta.input)
}

/// Skips `= tokens` or `(tokens)` up to the next top-level comma.
fn skip_value(input: ParseStream) -> syn::Result<()> {
    while !input.is_empty() && !input.peek(Token![,]) {
        input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

/// "; did you mean `x`?" when a known key is a few edits from `found` (a third of its length,
/// at least two).
pub fn did_you_mean(found: &str, known: &[&str]) -> String {
    known
        .iter()
        .map(|candidate| (edit_distance(found, candidate), candidate))
        .filter(|(distance, _)| *distance <= (found.chars().count() / 3).max(2))
        .min_by_key(|(distance, _)| *distance)
        .map_or_else(String::new, |(_, candidate)| {
            format!("; did you mean `{candidate}`?")
        })
}

/// Levenshtein distance.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut previous = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous + usize::from(ca != *cb);
            previous = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(previous + 1);
        }
    }
    row[b.len()]
}

/// The doc comment as the model reads it, or `None` when there is none: up to the first code
/// block or heading (`# Examples`), which are for rustdoc's readers, its paragraphs as
/// Markdown reads them ([`reflowed`]).
pub fn doc_comment(attrs: &[Attribute]) -> Option<String> {
    let lines: Vec<String> = attrs
        .iter()
        .filter(|attr| attr.path().is_ident(DOC))
        .filter_map(|attr| match &attr.meta {
            syn::Meta::NameValue(syn::MetaNameValue {
                value:
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Str(lit),
                        ..
                    }),
                ..
            }) => Some(lit.value()),
            _ => None,
        })
        // A `/** */` comment is one attribute of many lines; a blank `///` line an empty one.
        .flat_map(|attr| attr.split('\n').map(str::to_owned).collect::<Vec<_>>())
        .map(|line| {
            line.strip_prefix(' ')
                .unwrap_or(&line)
                .trim_end()
                .to_owned()
        })
        .take_while(|line| !line.starts_with("```") && !line.starts_with('#'))
        .collect();
    let doc = reflowed(&lines);
    (!doc.is_empty()).then_some(doc)
}

/// `lines` as Markdown reads them: a line wrapped in the source joins the one before it with
/// a space (a model would otherwise read "so\nevery call"); a blank line still ends a
/// paragraph, and a list item still starts a line of its own.
fn reflowed(lines: &[String]) -> String {
    let mut text = String::new();
    let mut blank_before = false;
    for line in lines {
        let line = line.trim();
        if line.is_empty() {
            blank_before = !text.is_empty();
            continue;
        }
        if blank_before {
            text.push_str("\n\n");
        } else if starts_list_item(line) && !text.is_empty() {
            text.push('\n');
        } else if !text.is_empty() {
            text.push(' ');
        }
        text.push_str(line);
        blank_before = false;
    }
    text
}

/// Whether `line` starts a Markdown list item: `- `, `* `, `+ `, or a number and `.` or `)`.
fn starts_list_item(line: &str) -> bool {
    let digits = line.bytes().take_while(u8::is_ascii_digit).count();
    let marker = if digits > 0 {
        line[digits..].strip_prefix(['.', ')'])
    } else {
        line.strip_prefix(['-', '*', '+'])
    };
    marker.is_some_and(|rest| rest.starts_with(' '))
}

/// The first paragraph of the doc comment: the description of a type or a field, which a
/// model reads in every schema that holds it.
pub fn doc_summary(attrs: &[Attribute]) -> Option<String> {
    let doc = doc_comment(attrs)?;
    let summary = doc.split("\n\n").next().unwrap_or_default();
    Some(summary.trim().to_owned())
}

/// Where a `#[serde(...)]` attribute sits: each place refuses its own keys.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SerdePlace {
    Container,
    Field,
    Variant,
}

/// The serde attributes that decide JSON keys.
#[derive(Default)]
pub struct SerdeAttrs {
    pub rename: Option<LitStr>,
    pub rename_all: Option<RenameRule>,
    /// `with`, `serialize_with` or `deserialize_with`: allowed only where `check` says.
    pub with: Option<syn::Path>,
}

/// Why a serde attribute cannot be used on a contract, or `None` if it can.
fn refused_serde_key(place: SerdePlace, key: &str) -> Option<&'static str> {
    const EXACT: &str =
        "it breaks exact-field validation (every declared field present, nothing else)";
    let why = match (place, key) {
        (SerdePlace::Field, "flatten") => {
            "`#[serde(flatten)]` is not supported: it breaks exact-field validation; declare the fields in this struct"
        }
        (_, "default") => {
            "`#[serde(default)]` is not supported: every field must be present; make it `Option<T>` and send `null`"
        }
        (_, "skip_serializing_if") => {
            "`#[serde(skip_serializing_if)]` is not supported: every field must be present; send `null` for `Option<T>`"
        }
        (_, "skip" | "skip_serializing" | "skip_deserializing") => {
            "`#[serde(skip)]` is not supported: a skipped field would not be in the JSON the contract validates"
        }
        (_, "alias") => {
            "`#[serde(alias)]` is not supported: each field has exactly one key; use `rename`"
        }
        (SerdePlace::Variant, "other") => {
            "`#[serde(other)]` is not supported: an output enum is a finite set of strings"
        }
        (_, "untagged" | "tag" | "content") => {
            "only unit-only enums are supported, so `untagged`, `tag` and `content` do not apply"
        }
        (SerdePlace::Container, "transparent" | "from" | "try_from" | "into" | "remote") => EXACT,
        (_, "getter" | "rename_all_fields" | "variant_identifier" | "field_identifier") => EXACT,
        _ => return None,
    };
    Some(why)
}

/// Parses the `#[serde(...)]` attributes at `place`.
pub fn serde_attrs(cx: &Ctxt, place: SerdePlace, attrs: &[Attribute]) -> SerdeAttrs {
    let mut rename = Attr::none(cx, SERDE, "rename");
    let mut rename_all = Attr::none(cx, SERDE, "rename_all");
    let mut with = Attr::none(cx, SERDE, "with");
    for attr in attrs.iter().filter(|attr| attr.path().is_ident(SERDE)) {
        let result = attr.parse_nested_meta(|meta| {
            let key = meta.path.to_token_stream().to_string();
            if let Some(why) = refused_serde_key(place, &key) {
                cx.error_spanned_by(&meta.path, why);
                return skip_value(meta.input);
            }
            match key.as_str() {
                "rename" | "rename_all" if !meta.input.peek(Token![=]) => {
                    cx.error_spanned_by(
                        &meta.path,
                        "give one name for both directions: a contract's JSON keys are the \
                         same in and out",
                    );
                    skip_value(meta.input)
                }
                "rename" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    rename.set(&meta.path, lit);
                    Ok(())
                }
                "rename_all" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    match RenameRule::from_lit(&lit) {
                        Ok(rule) => rename_all.set(&meta.path, rule),
                        Err(error) => cx.syn_error(error),
                    }
                    Ok(())
                }
                "with" | "serialize_with" | "deserialize_with" => {
                    let lit: LitStr = meta.value()?.parse()?;
                    match lit.parse::<syn::Path>() {
                        Ok(path) => with.set(&meta.path, path),
                        Err(error) => cx.syn_error(error),
                    }
                    Ok(())
                }
                // Everything else leaves the JSON keys and shapes alone; serde checks it.
                _ => skip_value(meta.input),
            }
        });
        if let Err(error) = result {
            cx.syn_error(error);
        }
    }
    SerdeAttrs {
        rename: rename.get(),
        rename_all: rename_all.get(),
        with: with.get(),
    }
}

/// What to say of `reconcile = "…"`: it names a type (the status tool's contract), and the
/// string's words, written as one, are most likely it.
fn reconcile_as_string(lit: &LitStr) -> String {
    let text = lit.value();
    if text == "manual" {
        return "`reconcile` takes a word, not a string: write `reconcile = manual`".to_owned();
    }
    let type_name: String = text
        .split(['_', '-', ' '])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_uppercase().chain(chars).collect()
            })
        })
        .collect();
    let example = if type_name.is_empty() || !type_name.chars().all(char::is_alphanumeric) {
        "GetStatus".to_owned()
    } else {
        type_name
    };
    format!(
        "`reconcile` names the status tool's type, not a string: write `reconcile = {example}` \
         (a read_only contract), or `reconcile = manual`"
    )
}

#[cfg(test)]
mod tests {
    use super::{parse_window, reflowed};

    fn reflow(text: &str) -> String {
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        reflowed(&lines)
    }

    #[test]
    fn a_wrapped_line_joins_its_paragraph_and_a_blank_line_ends_it() {
        assert_eq!(
            reflow("Reads one order, so\nevery call is cheap.\n\nThe second paragraph."),
            "Reads one order, so every call is cheap.\n\nThe second paragraph."
        );
        assert_eq!(reflow("\n\nOne line.\n\n\n"), "One line.");
    }

    #[test]
    fn a_list_item_keeps_a_line_of_its_own() {
        assert_eq!(
            reflow("Either:\n- a refund\n  in cents, or\n- a credit\n1. first\n2) second"),
            "Either:\n- a refund in cents, or\n- a credit\n1. first\n2) second"
        );
        assert_eq!(reflow("-5 is\nnot a list"), "-5 is not a list");
    }

    #[test]
    fn a_window_is_a_whole_number_of_one_unit_above_zero() {
        assert_eq!(parse_window("30d"), Some(30 * 86_400));
        assert_eq!(parse_window("12h"), Some(12 * 3_600));
        assert_eq!(parse_window("90m"), Some(90 * 60));
        assert_eq!(parse_window("45s"), Some(45));
        for refused in [
            "", "d", "0d", "1.5h", "-1d", "30", "30 d", "30D", "1w", "ⅷd",
        ] {
            assert_eq!(parse_window(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn a_window_past_what_milliseconds_hold_is_refused() {
        assert_eq!(parse_window(&format!("{}s", u64::MAX / 1_000 + 1)), None);
        assert_eq!(parse_window(&format!("{}d", u64::MAX)), None);
        assert_eq!(parse_window("99999999999999999999999d"), None);
    }
}
