//! Synthetic-data detectors: values a model or a scraper invents to fill a gap, such as
//! `jane@institution.edu`, recognised so they are refused or removed instead of acted on.

use std::fmt;

/// What happens to a value a detector flags.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SyntheticAction {
    /// The output is refused (`OUTPUT_CONTRACT_VIOLATION`, violation `synthetic_value`).
    Reject,
    /// The value is removed (`null` for an `Option`, the item for a `Vec`); the audit records
    /// a redaction at its path. The rest of the output stands.
    Strip,
}

/// One detector: a name for audits and a test of a string.
///
/// The built-in ones are constants; `#[tool_output(reject_synthetic(with = path))]` makes one
/// of any `fn(&str) -> bool`, named after its path.
///
/// ```
/// use tool_contract::evidence::Detector;
///
/// assert!(Detector::PLACEHOLDER_EMAIL.detects("Write to jane.doe@institution.edu."));
/// assert!(Detector::PLACEHOLDER_EMAIL.detects("ops@mail.example.com"));
/// assert!(!Detector::PLACEHOLDER_EMAIL.detects("a.byron@physics.ox.ac.uk"));
/// assert!(Detector::PLACEHOLDER_PHONE.detects("+1 (212) 555-0143"));
/// assert!(!Detector::PLACEHOLDER_PHONE.detects("+1 212 555 7643"));
/// ```
#[derive(Clone, Copy)]
pub struct Detector {
    name: &'static str,
    detect: fn(&str) -> bool,
}

impl Detector {
    /// E-mail addresses at placeholder domains: the names reserved for examples and tests
    /// (RFC 2606 §2–3: `example.com`, `.org`, `.net` and the `.example`, `.test`, `.invalid`,
    /// `.localhost` TLDs; RFC 6761 §6), and the stand-ins models write when they have no
    /// address (`institution.edu`, `university.edu`, `school.edu`, `test.com`, `company.com`,
    /// `yourcompany.com`, `domain.com`, `yourdomain.com`), with their subdomains.
    pub const PLACEHOLDER_EMAIL: Detector = Detector::new("placeholder_email", placeholder_email);

    /// North American numbers in 555-0100 to 555-0199, which NANPA reserves for fiction, and
    /// ten-digit runs such as `123-456-7890` or one repeated digit.
    pub const PLACEHOLDER_PHONE: Detector = Detector::new("placeholder_phone", placeholder_phone);

    /// "Lorem ipsum" filler text.
    pub const LOREM_IPSUM: Detector = Detector::new("lorem_ipsum", lorem_ipsum);

    /// A detector named `name` that flags the strings `detect` returns `true` for.
    #[must_use]
    pub const fn new(name: &'static str, detect: fn(&str) -> bool) -> Self {
        Detector { name, detect }
    }

    /// The name audits record.
    #[must_use]
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// Whether `value` looks synthetic to this detector.
    #[must_use]
    pub fn detects(&self, value: &str) -> bool {
        (self.detect)(value)
    }
}

impl fmt::Debug for Detector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Detector").field(&self.name).finish()
    }
}

/// A value a `strip_synthetic` detector removed from an output: what the audit records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stripped {
    /// The value's JSON Pointer in the handler's output, e.g. `/advisors/2/email`.
    pub path: String,
    /// The detector that flagged it.
    pub detector: &'static str,
}

/// The detectors declared on one field and what to do with what they flag.
#[derive(Debug, Clone, Copy)]
pub struct SyntheticRule {
    action: SyntheticAction,
    detectors: &'static [Detector],
}

impl SyntheticRule {
    /// `detectors`, applied with `action`.
    #[must_use]
    pub const fn new(action: SyntheticAction, detectors: &'static [Detector]) -> Self {
        SyntheticRule { action, detectors }
    }

    /// What happens to a flagged value.
    #[must_use]
    pub const fn action(&self) -> SyntheticAction {
        self.action
    }

    /// The detectors, in declaration order.
    #[must_use]
    pub const fn detectors(&self) -> &'static [Detector] {
        self.detectors
    }

    /// The name of the first detector that flags `value`.
    #[must_use]
    pub fn detect(&self, value: &str) -> Option<&'static str> {
        self.detectors
            .iter()
            .find(|detector| detector.detects(value))
            .map(Detector::name)
    }
}

const PLACEHOLDER_DOMAINS: &[&str] = &[
    "example.com",
    "example.net",
    "example.org",
    "example.edu",
    "institution.edu",
    "university.edu",
    "school.edu",
    "test.com",
    "company.com",
    "yourcompany.com",
    "domain.com",
    "yourdomain.com",
];

/// RFC 2606 §2 and RFC 6761 §6: top-level names that never resolve to anyone's mail.
const RESERVED_TLDS: &[&str] = &["example", "test", "invalid", "localhost"];

fn placeholder_email(value: &str) -> bool {
    value
        .split(|c: char| c.is_whitespace() || "<>()[],;:\"'".contains(c))
        .filter_map(|word| word.rsplit_once('@').map(|(_, domain)| domain))
        .any(|domain| {
            let domain = domain
                .trim_end_matches(['.', '!', '?'])
                .to_ascii_lowercase();
            let tld = domain.rsplit('.').next().unwrap_or_default();
            RESERVED_TLDS.contains(&tld)
                || PLACEHOLDER_DOMAINS.iter().any(|placeholder| {
                    domain == *placeholder
                        || domain
                            .strip_suffix(placeholder)
                            .is_some_and(|head| head.ends_with('.'))
                })
        })
}

fn placeholder_phone(value: &str) -> bool {
    let digits: Vec<u8> = value
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|digit| digit - b'0')
        .collect();
    let national = match digits.as_slice() {
        [1, rest @ ..] if rest.len() == 10 => rest,
        all if all.len() == 10 => all,
        _ => return false,
    };
    let fictional = national[3..6] == [5, 5, 5] && national[6..8] == [0, 1];
    let counting = national == [1, 2, 3, 4, 5, 6, 7, 8, 9, 0];
    let repeated = national.iter().all(|digit| *digit == national[0]);
    fictional || counting || repeated
}

fn lorem_ipsum(value: &str) -> bool {
    value.to_ascii_lowercase().contains("lorem ipsum")
}
