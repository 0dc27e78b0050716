//! What the derives' compile-time checks need that `core` lacks in `const` context: string
//! equality, and a panic message put together from parts.

/// Whether two strings are equal, in `const` context.
pub(crate) const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// A message built at compile time, for a `panic!` in a `const` check.
#[derive(Debug)]
pub struct ConstMessage {
    bytes: [u8; 256],
    len: usize,
}

impl ConstMessage {
    pub(crate) const fn new() -> Self {
        ConstMessage {
            bytes: [0; 256],
            len: 0,
        }
    }

    pub(crate) const fn push(mut self, text: &str) -> Self {
        let text = text.as_bytes();
        let mut i = 0;
        // Cut at a char boundary so the message stays UTF-8.
        let room = self.bytes.len() - self.len;
        let mut end = if text.len() < room { text.len() } else { room };
        while end > 0 && end < text.len() && (text[end] & 0xC0) == 0x80 {
            end -= 1;
        }
        while i < end {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
        self
    }

    /// Whether there is anything to say.
    #[must_use]
    pub const fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The message.
    #[must_use]
    pub const fn as_str(&self) -> &str {
        match core::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(text) => text,
            Err(_) => "",
        }
    }
}
