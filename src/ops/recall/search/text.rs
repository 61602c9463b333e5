//! The passes that test text: a phrase (lexically prefiltered) in hot
//! entries' kept text, a bounded regex over hot entries and cold
//! vocabularies.

use super::cold::cold_content;
use super::{Item, Matched, Search};
use crate::coverage::Reason;
use crate::query::regex::BoundedRegex;
use crate::tokenize::{as_part, nfkc};

impl Search<'_> {
  /// Does hot entry (slot, doc)'s kept text hold `phrase`? One cut at
  /// `maxEntryChars` that does not may hold it past the cut: `cut` is set.
  fn holds_phrase(&self, slot: usize, doc: usize, phrase: &str, cut: &mut bool) -> bool {
    let entry = self.entry(slot, doc);
    let holds = nfkc(&entry.text).to_lowercase().contains(phrase);
    *cut |= !holds && entry.truncated;
    holds
  }

  pub(super) fn phrase(&mut self, phrase: &str, terms: &[String]) -> Vec<Item> {
    let mut items = self.lexical(terms, !terms.is_empty(), true);
    let mut cut = false;
    items.retain_mut(|item| match item {
      Item::Entry { session, doc, score } => {
        *score = self.weight(*session, *doc);
        self.holds_phrase(*session, *doc, phrase, &mut cut)
      }
      Item::Session { .. } => true,
    });
    if terms.is_empty() {
      // Punctuation-only phrases have no terms to prefilter by.
      for &(slot, ref docs) in &self.hot {
        let shard = self.sessions.hot(slot);
        for doc in docs.iter().filter(|&doc| self.is_evidence(shard, doc)) {
          if self.holds_phrase(slot, doc, phrase, &mut cut) {
            items.push(Item::Entry { session: slot, doc, score: self.weight(slot, doc) });
          }
        }
      }
    }
    if cut {
      self.reasons.insert(Reason::MaxEntryChars);
    }
    items
  }

  pub(super) fn regex(&mut self, regex: &mut BoundedRegex) -> Vec<Item> {
    let mut items = Vec::new();
    let mut cut = false;
    for &(slot, ref docs) in &self.hot {
      let shard = self.sessions.hot(slot);
      for doc in docs.iter().filter(|&doc| self.is_evidence(shard, doc)) {
        match regex.test(&self.entry(slot, doc).text) {
          Ok(true) => items.push(Item::Entry { session: slot, doc, score: self.weight(slot, doc) }),
          // It may match past the cut.
          Ok(false) => cut |= self.entry(slot, doc).truncated,
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
    }
    if cut {
      self.reasons.insert(Reason::MaxEntryChars);
    }
    for (slot, structural) in self.cold.admitted() {
      let mut matched = Vec::new();
      let session = self.sessions.at(slot);
      let Some(content) = cold_content(session, self.engine, self.request.branches, &self.unreadable) else {
        continue;
      };
      // A regex runs over words and grams; parts restate their words.
      for term in content.vocabulary.iter().filter(|term| as_part(term).is_none()) {
        match regex.test(term) {
          Ok(true) => matched.push(term.to_string()),
          Ok(false) => {}
          Err(stop) => {
            self.reasons.insert(stop);
            return items;
          }
        }
      }
      if !matched.is_empty() {
        items.push(Item::Session { session: slot, score: 1.0, matched: Matched::Vocabulary(matched), structural });
      }
    }
    items
  }
}
