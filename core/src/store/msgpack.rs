//! The few MessagePack forms a job record uses, written and read by hand:
//! no allocation but for the strings and byte strings kept, every length
//! checked against the bytes that are left (a gigabyte length claim is an
//! error, not an allocation), nesting bounded when a value is skipped.

use crate::error::{Error, Result};

/// How deep [`Reader::skip`] follows nested arrays and maps.
pub const MAX_DEPTH: usize = 256;

/// Appends MessagePack to a byte vector.
pub struct Writer<'a>(pub &'a mut Vec<u8>);

impl Writer<'_> {
    pub fn nil(&mut self) {
        self.0.push(0xc0);
    }

    pub fn uint(&mut self, v: u64) {
        let o = &mut *self.0;
        if v < 0x80 {
            o.push(v as u8);
        } else if v <= u8::MAX as u64 {
            o.extend_from_slice(&[0xcc, v as u8]);
        } else if v <= u16::MAX as u64 {
            o.push(0xcd);
            o.extend_from_slice(&(v as u16).to_be_bytes());
        } else if v <= u32::MAX as u64 {
            o.push(0xce);
            o.extend_from_slice(&(v as u32).to_be_bytes());
        } else {
            o.push(0xcf);
            o.extend_from_slice(&v.to_be_bytes());
        }
    }

    pub fn opt_uint(&mut self, v: Option<u64>) {
        match v {
            Some(v) => self.uint(v),
            None => self.nil(),
        }
    }

    fn len(&mut self, n: usize, fix: Option<(u8, usize)>, m8: Option<u8>, m16: u8, m32: u8) {
        let o = &mut *self.0;
        match fix {
            Some((base, max)) if n <= max => o.push(base | n as u8),
            _ => match m8 {
                Some(m) if n <= u8::MAX as usize => o.extend_from_slice(&[m, n as u8]),
                _ if n <= u16::MAX as usize => {
                    o.push(m16);
                    o.extend_from_slice(&(n as u16).to_be_bytes());
                }
                _ => {
                    o.push(m32);
                    o.extend_from_slice(&(n as u32).to_be_bytes());
                }
            },
        }
    }

    pub fn str(&mut self, s: &str) {
        self.len(s.len(), Some((0xa0, 31)), Some(0xd9), 0xda, 0xdb);
        self.0.extend_from_slice(s.as_bytes());
    }

    pub fn opt_str(&mut self, s: Option<&str>) {
        match s {
            Some(s) => self.str(s),
            None => self.nil(),
        }
    }

    pub fn bin(&mut self, b: &[u8]) {
        self.len(b.len(), None, Some(0xc4), 0xc5, 0xc6);
        self.0.extend_from_slice(b);
    }

    pub fn opt_bin(&mut self, b: Option<&[u8]>) {
        match b {
            Some(b) => self.bin(b),
            None => self.nil(),
        }
    }

    pub fn array(&mut self, n: usize) {
        self.len(n, Some((0x90, 15)), None, 0xdc, 0xdd);
    }

    pub fn map(&mut self, n: usize) {
        self.len(n, Some((0x80, 15)), None, 0xde, 0xdf);
    }

    /// Bytes that already are one encoded value (kept from a decode).
    pub fn raw(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }
}

/// Reads MessagePack from a byte slice.
pub struct Reader<'a> {
    pub buf: &'a [u8],
    pub pos: usize,
}

fn bad(what: &str) -> Error {
    Error::Corruption(format!("job record does not decode: {what}"))
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|e| *e <= self.buf.len())
            .ok_or_else(|| bad(&format!("a length of {n} runs past the end")))?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn byte(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self.take(n)?.iter().fold(0u64, |a, b| (a << 8) | *b as u64))
    }

    pub fn peek_nil(&self) -> bool {
        self.buf.get(self.pos) == Some(&0xc0)
    }

    /// A non-negative integer, in any of MessagePack's integer forms.
    pub fn uint(&mut self) -> Result<u64> {
        let m = self.byte()?;
        let v: i128 = match m {
            0x00..=0x7f => m as i128,
            0xe0..=0xff => (m as i8) as i128,
            0xcc => self.be(1)? as i128,
            0xcd => self.be(2)? as i128,
            0xce => self.be(4)? as i128,
            0xcf => self.be(8)? as i128,
            0xd0 => (self.be(1)? as u8 as i8) as i128,
            0xd1 => (self.be(2)? as u16 as i16) as i128,
            0xd2 => (self.be(4)? as u32 as i32) as i128,
            0xd3 => (self.be(8)? as i64) as i128,
            _ => return Err(bad(&format!("expected an integer, found marker {m:#04x}"))),
        };
        u64::try_from(v).map_err(|_| bad(&format!("negative integer {v}")))
    }

    pub fn u32(&mut self) -> Result<u32> {
        let v = self.uint()?;
        u32::try_from(v).map_err(|_| bad(&format!("{v} does not fit in 32 bits")))
    }

    pub fn opt_uint(&mut self) -> Result<Option<u64>> {
        if self.peek_nil() {
            self.pos += 1;
            return Ok(None);
        }
        self.uint().map(Some)
    }

    pub fn opt_u32(&mut self) -> Result<Option<u32>> {
        if self.peek_nil() {
            self.pos += 1;
            return Ok(None);
        }
        self.u32().map(Some)
    }

    pub fn str(&mut self) -> Result<String> {
        self.str_ref().map(str::to_owned)
    }

    /// A string, borrowed from the buffer (no allocation).
    pub fn str_ref(&mut self) -> Result<&'a str> {
        let m = self.byte()?;
        let n = match m {
            0xa0..=0xbf => (m & 0x1f) as usize,
            0xd9 => self.be(1)? as usize,
            0xda => self.be(2)? as usize,
            0xdb => self.be(4)? as usize,
            _ => return Err(bad(&format!("expected a string, found marker {m:#04x}"))),
        };
        let b = self.take(n)?;
        std::str::from_utf8(b).map_err(|_| bad("a string is not UTF-8"))
    }

    pub fn opt_str(&mut self) -> Result<Option<String>> {
        if self.peek_nil() {
            self.pos += 1;
            return Ok(None);
        }
        self.str().map(Some)
    }

    /// A byte string (the `bin` forms; an array of small integers, which
    /// serde writes for a `Vec<u8>` without `serde_bytes`, is read too).
    pub fn bin(&mut self) -> Result<Vec<u8>> {
        let m = self.byte()?;
        let n = match m {
            0xc4 => self.be(1)? as usize,
            0xc5 => self.be(2)? as usize,
            0xc6 => self.be(4)? as usize,
            0x90..=0x9f | 0xdc | 0xdd => {
                self.pos -= 1;
                let n = self.array()?;
                return (0..n)
                    .map(|_| {
                        u8::try_from(self.uint()?).map_err(|_| bad("a byte array holds a non-byte"))
                    })
                    .collect();
            }
            _ => return Err(bad(&format!("expected bytes, found marker {m:#04x}"))),
        };
        Ok(self.take(n)?.to_vec())
    }

    pub fn opt_bin(&mut self) -> Result<Option<Vec<u8>>> {
        if self.peek_nil() {
            self.pos += 1;
            return Ok(None);
        }
        self.bin().map(Some)
    }

    fn count(&mut self, fix: (u8, u8), m16: u8, m32: u8, what: &str) -> Result<usize> {
        let m = self.byte()?;
        let n = match m {
            _ if m & !0x0f == fix.0 && m <= fix.1 => (m & 0x0f) as usize,
            _ if m == m16 => self.be(2)? as usize,
            _ if m == m32 => self.be(4)? as usize,
            _ => return Err(bad(&format!("expected {what}, found marker {m:#04x}"))),
        };
        // Every element is at least one byte: a longer claim is garbage.
        if n > self.buf.len() - self.pos {
            return Err(bad(&format!("{what} of {n} elements runs past the end")));
        }
        Ok(n)
    }

    pub fn array(&mut self) -> Result<usize> {
        self.count((0x90, 0x9f), 0xdc, 0xdd, "an array")
    }

    pub fn map(&mut self) -> Result<usize> {
        self.count((0x80, 0x8f), 0xde, 0xdf, "a map")
    }

    /// Whether the next value is a map (else, for a record, an array).
    pub fn peek_map(&self) -> bool {
        matches!(self.buf.get(self.pos), Some(0x80..=0x8f | 0xde | 0xdf))
    }

    /// Step over one value of any kind; returns its bytes.
    pub fn skip(&mut self) -> Result<&'a [u8]> {
        let start = self.pos;
        self.skip_at(0)?;
        Ok(&self.buf[start..self.pos])
    }

    fn skip_at(&mut self, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(bad("nested deeper than 256"));
        }
        let m = self.byte()?;
        let (n, elems) = match m {
            0x00..=0x7f | 0xe0..=0xff | 0xc0 | 0xc2 | 0xc3 => (0, 0),
            0x80..=0x8f => (0, 2 * (m & 0x0f) as usize),
            0x90..=0x9f => (0, (m & 0x0f) as usize),
            0xa0..=0xbf => ((m & 0x1f) as usize, 0),
            0xc4 | 0xd9 => (self.be(1)? as usize, 0),
            0xc5 | 0xda => (self.be(2)? as usize, 0),
            0xc6 | 0xdb => (self.be(4)? as usize, 0),
            0xc7 => (self.be(1)? as usize + 1, 0),
            0xc8 => (self.be(2)? as usize + 1, 0),
            0xc9 => (self.be(4)? as usize + 1, 0),
            0xca => (4, 0),
            0xcb => (8, 0),
            0xcc | 0xd0 => (1, 0),
            0xcd | 0xd1 => (2, 0),
            0xce | 0xd2 => (4, 0),
            0xcf | 0xd3 => (8, 0),
            0xd4 => (2, 0),
            0xd5 => (3, 0),
            0xd6 => (5, 0),
            0xd7 => (9, 0),
            0xd8 => (17, 0),
            0xdc => (0, self.be(2)? as usize),
            0xdd => (0, self.be(4)? as usize),
            0xde => (0, 2 * self.be(2)? as usize),
            0xdf => (0, 2 * self.be(4)? as usize),
            _ => return Err(bad(&format!("marker {m:#04x} is not MessagePack"))),
        };
        self.take(n)?;
        if elems > self.buf.len() - self.pos {
            return Err(bad(&format!(
                "a container of {elems} values runs past the end"
            )));
        }
        for _ in 0..elems {
            self.skip_at(depth + 1)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_written_reads_back() {
        let mut b = Vec::new();
        let mut w = Writer(&mut b);
        w.array(6);
        for v in [0u64, 127, 128, 65_535, 1 << 32] {
            w.uint(v);
        }
        w.str(&"x".repeat(300));
        w.bin(&[1, 2, 3]);
        w.opt_str(None);
        let mut r = Reader::new(&b);
        assert_eq!(r.array().unwrap(), 6);
        for v in [0u64, 127, 128, 65_535, 1 << 32] {
            assert_eq!(r.uint().unwrap(), v);
        }
        assert_eq!(r.str().unwrap().len(), 300);
        assert_eq!(r.bin().unwrap(), vec![1, 2, 3]);
        assert_eq!(r.opt_str().unwrap(), None);
        assert!(r.at_end());
    }

    #[test]
    fn huge_claims_and_deep_nesting_are_errors() {
        assert!(Reader::new(&[0xc6, 0x7f, 0xff, 0xff, 0xff]).bin().is_err());
        assert!(Reader::new(&[0xdd, 0x7f, 0xff, 0xff, 0xff, 1])
            .array()
            .is_err());
        assert!(Reader::new(&[0xdd, 0x7f, 0xff, 0xff, 0xff, 1])
            .skip()
            .is_err());
        let deep = vec![0x91u8; 100_000];
        assert!(Reader::new(&deep).skip().is_err());
        assert!(Reader::new(&[0xc1]).skip().is_err());
        assert!(Reader::new(&[0xff]).uint().is_err(), "negative");
    }
}
