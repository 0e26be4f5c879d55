//! A job's tags as the record holds them (extension tag 13; split from
//! `codec.rs`).
//!
//! They are kept as their encoded MessagePack strings in one buffer, not
//! as a `String` each: a lease and a settle decode a record, change
//! fields other than the tags and encode it again, and that is then one
//! copy of the tags' bytes each way instead of an allocation and a UTF-8
//! check per tag (issue 42's lifecycle cost). Callers read them as `&str`
//! ([`Tags::iter`]) or, for a [`crate::job::Job`], as owned strings
//! ([`Tags::to_vec`]).

use std::fmt;

use crate::error::Result;

use crate::store::msgpack::{Reader, Writer};

/// A job's tags, in order, without duplicates.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct Tags {
    /// The tags' MessagePack string encodings, one after another (no
    /// array header). Every one is a well-formed UTF-8 string: [`Tags::new`]
    /// writes them, [`Tags::read`] checks them.
    raw: Vec<u8>,
    /// How many.
    n: usize,
}

impl Tags {
    /// `tags` in their order, the first of each duplicate kept. The caller
    /// checked them (`crate::tags::check_tags`).
    pub fn new<S: AsRef<str>>(tags: &[S]) -> Tags {
        if tags.is_empty() {
            return Tags::default();
        }
        let size = tags.iter().map(|t| t.as_ref().len() + 2).sum();
        let mut out = Tags {
            raw: Vec::with_capacity(size),
            n: 0,
        };
        for (i, t) in tags.iter().enumerate() {
            let t = t.as_ref();
            if tags[..i].iter().any(|o| o.as_ref() == t) {
                continue;
            }
            Writer(&mut out.raw).str(t);
            out.n += 1;
        }
        out
    }

    /// How many tags.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The tags, in order, borrowed.
    pub fn iter(&self) -> Iter<'_> {
        Iter(Reader::new(&self.raw))
    }

    /// Whether `tag` is one of them.
    pub fn contains(&self, tag: &str) -> bool {
        self.iter().any(|t| t == tag)
    }

    /// The tags as owned strings (what a [`crate::job::Job`] carries).
    pub fn to_vec(&self) -> Vec<String> {
        self.iter().map(str::to_owned).collect()
    }

    /// The bytes [`Tags::write`] writes, at most.
    pub(super) fn encoded_len(&self) -> usize {
        5 + self.raw.len()
    }

    /// Write them as a MessagePack array of strings.
    pub(super) fn write(&self, w: &mut Writer<'_>) {
        w.array(self.n);
        w.raw(&self.raw);
    }

    /// Read an array of strings (each checked as one, without allocating
    /// it); `Corruption` when it is not one.
    pub(super) fn read(r: &mut Reader<'_>) -> Result<Tags> {
        let n = r.array()?;
        let start = r.pos;
        for _ in 0..n {
            r.str_ref()?;
        }
        Ok(Tags {
            raw: r.buf[start..r.pos].to_vec(),
            n,
        })
    }
}

impl<S: AsRef<str>> From<&[S]> for Tags {
    fn from(tags: &[S]) -> Tags {
        Tags::new(tags)
    }
}

impl fmt::Debug for Tags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// The tags of a [`Tags`], borrowed.
pub struct Iter<'a>(Reader<'a>);

impl<'a> Iterator for Iter<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.0.at_end() {
            return None;
        }
        // Every element was checked as a string when the tags were made.
        self.0.str_ref().ok()
    }
}

impl<'a> IntoIterator for &'a Tags {
    type Item = &'a str;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keep_order_drop_duplicates_and_read_back() {
        let t = Tags::new(&["b", "a", "b", "müller"]);
        assert_eq!(t.len(), 3);
        assert_eq!(t.to_vec(), ["b", "a", "müller"]);
        assert!(t.contains("a") && !t.contains("c"));
        assert_eq!(format!("{t:?}"), r#"["b", "a", "müller"]"#);
        let mut buf = Vec::new();
        t.write(&mut Writer(&mut buf));
        assert!(buf.len() <= t.encoded_len());
        let mut r = Reader::new(&buf);
        assert_eq!(Tags::read(&mut r).unwrap(), t);
        assert!(r.at_end());
        assert!(Tags::new::<&str>(&[]).is_empty());
    }

    #[test]
    fn a_non_string_or_bad_utf8_element_is_corruption() {
        // [1]: an integer where a tag belongs.
        assert!(Tags::read(&mut Reader::new(&[0x91, 0x01])).is_err());
        // ["\xff"]: not UTF-8.
        assert!(Tags::read(&mut Reader::new(&[0x91, 0xa1, 0xff])).is_err());
        // Two announced, one there.
        assert!(Tags::read(&mut Reader::new(&[0x92, 0xa1, b'a'])).is_err());
    }
}
