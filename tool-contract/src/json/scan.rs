//! The byte scanner: where a JSON string's plain run ends, eight bytes at a time.

/// The index of the first `"`, `\\` or control character at or after `from`, or the length.
///
/// Eight bytes at a time: for a word `x`, `(x - 0x0101…01·n) & !x & 0x8080…80` flags the
/// bytes below `n` (and `x ^ c·0x0101…01` turns bytes equal to `c` into zeros). A borrow can
/// only flag bytes above a true match, so the lowest flag is always exact.
pub(crate) fn find_string_special(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let below = |x: u64, n: u8| x.wrapping_sub(ONES * u64::from(n)) & !x;
    let mut i = from;
    while let Some(chunk) = bytes.get(i..).and_then(<[u8]>::first_chunk::<8>) {
        let word = u64::from_le_bytes(*chunk);
        let flags = (below(word ^ (ONES * u64::from(b'"')), 1)
            | below(word ^ (ONES * u64::from(b'\\')), 1)
            | below(word, 0x20))
            & HIGHS;
        if flags != 0 {
            return i + (flags.trailing_zeros() / 8) as usize;
        }
        i += 8;
    }
    while bytes
        .get(i)
        .is_some_and(|b| !matches!(b, b'"' | b'\\' | 0..=0x1f))
    {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::find_string_special;

    #[test]
    fn the_scan_finds_the_first_special_byte_in_every_position() {
        for len in 0..24 {
            for at in 0..len {
                for special in [b'"', b'\\', 0x00, 0x1f] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = special;
                    // Bytes that sit next to the specials in value must not be flagged.
                    if at + 1 < len {
                        bytes[at + 1] = b'#';
                    }
                    assert_eq!(find_string_special(&bytes, 0), at, "{len} {at} {special}");
                }
            }
            let plain: Vec<u8> = (0..len)
                .map(|i| [b' ', b'#', b'[', b'~', 0xc3][i % 5])
                .collect();
            assert_eq!(find_string_special(&plain, 0), len);
        }
    }
}
