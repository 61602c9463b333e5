//! A sorted set of terms as one newline-joined string: the vocabulary of a
//! cold digest and the term list of a hot shard's postings.

use super::cold::Lazy;
use serde::{Deserialize, Serialize};

/// Sorted unique terms stored as one newline-joined string: a fresh process
/// decodes a digest's vocabulary as one allocation instead of one per term
/// (canonical terms never contain a newline). Term boundaries are found on
/// first use. JSON (diagnostics) shows it as an array.
#[derive(Debug, Default)]
pub struct Vocabulary {
  text: String,
  starts: Lazy<Vec<u32>>,
}

impl Vocabulary {
  pub fn from_sorted(terms: &[String]) -> Vocabulary {
    Vocabulary { text: terms.join("\n"), starts: Lazy::default() }
  }

  /// From sorted unique terms already joined by newlines.
  pub fn from_joined(text: String) -> Vocabulary {
    Vocabulary { text, starts: Lazy::default() }
  }

  fn starts(&self) -> &[u32] {
    self.starts.get_or_init(|| {
      if self.text.is_empty() {
        return Vec::new();
      }
      std::iter::once(0).chain(memchr::memchr_iter(b'\n', self.text.as_bytes()).map(|at| at as u32 + 1)).collect()
    })
  }

  /// The terms joined by newlines (what the fingerprint hashes).
  pub fn text(&self) -> &str {
    &self.text
  }

  pub fn len(&self) -> usize {
    self.starts().len()
  }

  pub fn is_empty(&self) -> bool {
    self.text.is_empty()
  }

  pub fn get(&self, index: usize) -> &str {
    &self.text[self.span(index)]
  }

  fn span(&self, index: usize) -> std::ops::Range<usize> {
    let starts = self.starts();
    let end = starts.get(index + 1).map_or(self.text.len(), |next| *next as usize - 1);
    starts[index] as usize..end
  }

  /// The term at the text's byte midpoint, found without the term offsets
  /// (which a merge of thousands of vocabularies would build for each).
  pub fn middle(&self) -> Option<&str> {
    let mid = self.text.len() / 2;
    let start = self.text.as_bytes()[..mid].iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
    self.text[start..].split('\n').next().filter(|term| !term.is_empty())
  }

  pub fn iter(&self) -> impl Iterator<Item = &str> + Clone {
    self.text.split('\n').filter(|_| !self.text.is_empty())
  }

  pub fn binary_search(&self, term: &str) -> Result<usize, usize> {
    let (mut low, mut high) = (0, self.len());
    while low < high {
      let middle = (low + high) / 2;
      // Bytes: UTF-8 orders as its code points do, without the char
      // boundary checks a `str` slice makes.
      match self.text.as_bytes()[self.span(middle)].cmp(term.as_bytes()) {
        std::cmp::Ordering::Less => low = middle + 1,
        std::cmp::Ordering::Greater => high = middle,
        std::cmp::Ordering::Equal => return Ok(middle),
      }
    }
    Err(low)
  }

  /// The first `count` terms.
  pub fn prefix(&self, count: usize) -> Vocabulary {
    if count == 0 {
      return Vocabulary::default();
    }
    let end = self.starts().get(count).map_or(self.text.len(), |next| *next as usize - 1);
    Vocabulary { text: self.text[..end].to_string(), starts: Lazy::default() }
  }

  pub fn to_vec(&self) -> Vec<String> {
    self.iter().map(str::to_string).collect()
  }
}

impl Clone for Vocabulary {
  fn clone(&self) -> Self {
    Vocabulary { text: self.text.clone(), starts: Lazy::default() }
  }
}

impl PartialEq for Vocabulary {
  fn eq(&self, other: &Self) -> bool {
    self.text == other.text
  }
}

impl Serialize for Vocabulary {
  fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
    if serializer.is_human_readable() {
      serializer.collect_seq(self.iter())
    } else {
      serializer.serialize_str(&self.text)
    }
  }
}

impl<'de> Deserialize<'de> for Vocabulary {
  fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
    if deserializer.is_human_readable() {
      Ok(Vocabulary::from_sorted(&Vec::<String>::deserialize(deserializer)?))
    } else {
      Ok(Vocabulary { text: String::deserialize(deserializer)?, starts: Lazy::default() })
    }
  }
}

#[cfg(test)]
mod tests {
  use super::*;

  #[test]
  fn vocabularies_find_terms_and_keep_prefixes() {
    let terms: Vec<String> = ["a", "bb", "c", "dd"].iter().map(|t| t.to_string()).collect();
    let vocabulary = Vocabulary::from_sorted(&terms);
    assert_eq!((vocabulary.len(), vocabulary.get(1), vocabulary.binary_search("c")), (4, "bb", Ok(2)));
    assert_eq!(vocabulary.binary_search("b"), Err(1));
    assert_eq!(vocabulary.prefix(2).to_vec(), ["a", "bb"]);
    assert!(vocabulary.prefix(0).is_empty());
    assert_eq!(vocabulary.prefix(0).len(), 0);
    assert_eq!(vocabulary.prefix(9), vocabulary);
    assert!(Vocabulary::default().iter().next().is_none());
    assert_eq!((vocabulary.middle(), Vocabulary::from_joined("abc".into()).middle()), (Some("bb"), Some("abc")));
    assert_eq!(Vocabulary::default().middle(), None);
    let bytes = postcard::to_allocvec(&vocabulary).unwrap();
    assert_eq!(postcard::from_bytes::<Vocabulary>(&bytes).unwrap(), vocabulary);
    assert_eq!(serde_json::to_string(&vocabulary).unwrap(), r#"["a","bb","c","dd"]"#);
  }
}
