//! Word-at-a-time byte scanning for the trie's hot path: splitting a path
//! at `/` and reading each name as the words the trie compares.
//!
//! The masks are exact (no "has zero byte" false positives), so every
//! flagged byte can be trusted without a second look.

const LO: u64 = 0x0101_0101_0101_0101;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
const LOW_BITS: u64 = !HIGH_BITS;

/// A mask with `0x80` in each byte of `word` equal to `byte`, and zero
/// elsewhere. The additions cannot carry between bytes.
#[inline(always)]
fn equal_bytes(word: u64, byte: u8) -> u64 {
    let x = word ^ (LO * u64::from(byte));
    !(((x & LOW_BITS) + LOW_BITS) | x | LOW_BITS)
}

/// Up to eight bytes at `at` as a little-endian word, zero-padded.
///
/// Built in registers: a variable-length copy into a buffer read back as a
/// word costs a `memcpy` call and a store-forwarding stall. Near the end of
/// a long enough slice the last eight bytes are loaded and shifted instead.
#[inline(always)]
pub(super) fn word_at(bytes: &[u8], at: usize) -> u64 {
    match bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        Some(word) => u64::from_le_bytes(*word),
        None => word_near_end(bytes, at),
    }
}

/// [`word_at`] where fewer than eight bytes are left: out of line, so the
/// hot loop keeps one load per word.
#[inline(never)]
fn word_near_end(bytes: &[u8], at: usize) -> u64 {
    let rest = bytes.get(at..).unwrap_or_default();
    if let Some(last) = bytes.last_chunk::<8>() {
        // `rest` is shorter than 8 bytes: shift the bytes before it out.
        let before = 8 - rest.len();
        return u64::from_le_bytes(*last)
            .checked_shr(8 * before as u32)
            .unwrap_or(0);
    }
    short_word(rest)
}

/// [`word_at`] for a slice shorter than a word, which only a very short
/// path has: kept out of line so the hot loop stays small.
#[cold]
#[inline(never)]
fn short_word(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .enumerate()
        .fold(0, |word, (i, &b)| word | u64::from(b) << (8 * i))
}

/// A path component with the words the trie compares: together with the
/// length, `head` and `tail` pin down every name of up to 16 bytes.
#[derive(Debug, Clone, Copy)]
pub(super) struct Name<'a> {
    pub(super) bytes: &'a [u8],
    /// The first 8 bytes, little-endian, zero-padded.
    pub(super) head: u64,
    /// The last 8 bytes of a longer name; 0 for a name of up to 8 bytes.
    pub(super) tail: u64,
}

impl<'a> Name<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Name<'a> {
        Name::at(bytes, 0, bytes.len())
    }

    /// The name `bytes[start..end]`. Its words are loaded from `bytes` as a
    /// whole, so a short name near the end of a long path is still one load.
    #[inline(always)]
    fn at(bytes: &'a [u8], start: usize, end: usize) -> Name<'a> {
        let len = end - start;
        let first = word_at(bytes, start);
        let head = match len {
            0..8 => first & ((1u64 << (8 * len)) - 1),
            _ => first,
        };
        let tail = match len {
            0..=8 => 0,
            _ => word_at(bytes, end - 8),
        };
        Name {
            bytes: &bytes[start..end],
            head,
            tail,
        }
    }
}

/// The components of a normal absolute path (`/a/b`), in order.
///
/// The `/` positions come from a mask kept one word ahead, so finding the
/// next component is a bit operation rather than a scan that has to wait
/// for the previous one: the words are loaded at fixed offsets.
pub(super) struct Names<'a> {
    bytes: &'a [u8],
    /// Where the next name starts.
    start: usize,
    /// Offset of the word `slashes` was computed from.
    word: usize,
    /// `/` bytes of that word not yet consumed, as [`equal_bytes`] marks.
    slashes: u64,
}

impl<'a> Names<'a> {
    /// The names of `path`, which starts with `/`.
    pub(super) fn new(path: &'a [u8]) -> Names<'a> {
        let first = equal_bytes(word_at(path, 0), b'/');
        Names {
            bytes: path,
            start: 1,
            word: 0,
            // The leading `/` only opens the first name.
            slashes: first & first.wrapping_sub(1),
        }
    }

    /// The names of `path`, a relative path of plain names.
    pub(super) fn relative(path: &'a [u8]) -> Names<'a> {
        Names {
            bytes: path,
            start: 0,
            word: 0,
            slashes: equal_bytes(word_at(path, 0), b'/'),
        }
    }

    /// The next `/` at or after `start`, or the end of the path.
    #[inline(always)]
    fn next_slash(&mut self) -> usize {
        loop {
            if self.slashes != 0 {
                let at = self.word + (self.slashes.trailing_zeros() / 8) as usize;
                self.slashes &= self.slashes - 1;
                return at;
            }
            self.word += 8;
            if self.word >= self.bytes.len() {
                return self.bytes.len();
            }
            self.slashes = equal_bytes(word_at(self.bytes, self.word), b'/');
        }
    }
}

impl<'a> Iterator for Names<'a> {
    type Item = Name<'a>;

    #[inline(always)]
    fn next(&mut self) -> Option<Name<'a>> {
        if self.start >= self.bytes.len() {
            return None;
        }
        let end = self.next_slash().min(self.bytes.len());
        let name = Name::at(self.bytes, self.start, end);
        self.start = end + 1;
        Some(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_masks_are_exact() {
        let words: [&[u8; 8]; 4] = [
            b"a/b//c/d",
            b"\x00\x01/\x2e\x2f\xaf\x2f\x00",
            b"////////",
            b"abcdefgh",
        ];
        for word in words {
            let mask = equal_bytes(u64::from_le_bytes(*word), b'/');
            for (i, &b) in word.iter().enumerate() {
                assert_eq!(
                    mask >> (8 * i) & 0xff,
                    if b == b'/' { 0x80 } else { 0 },
                    "{word:?} {i}"
                );
            }
        }
    }

    #[test]
    fn names_split_normal_paths_and_match_their_own_words() {
        let paths: [&[u8]; 6] = [
            b"/a/bcdefghijk",
            b"/abcdefgh/abcdefghi/abcdefghijklmnopq",
            b"/x",
            b"/",
            b"/\xff\x80/0123456/01234567/a",
            b"/abcdef/gh",
        ];
        for path in paths {
            let names: Vec<Name> = Names::new(path).collect();
            let plain: Vec<&[u8]> = path[1..]
                .split(|&b| b == b'/')
                .filter(|n| !n.is_empty())
                .collect();
            let got: Vec<&[u8]> = names.iter().map(|n| n.bytes).collect();
            assert_eq!(got, plain, "{path:?}");
            for name in names {
                let own = Name::new(name.bytes);
                assert_eq!((name.head, name.tail), (own.head, own.tail), "{path:?}");
            }
        }
        let word = |s: &[u8]| word_at(s, 0);
        assert_eq!(word(b"ab"), 0x6261);
        assert_eq!(word_at(b"abcdefghij", 8), 0x6a69);
        assert_eq!(word_at(b"abcdefghij", 10), 0);
    }
}
