//! `memory.recall`: structural filters, literal / phrase / regex queries over
//! hot postings and cold digests, one ranked stream, bounded pages.

pub mod plan;
pub mod regex;
pub mod score;
pub mod snippet;

mod recall;

pub use recall::{recall, Hit, RecallPage, MAX_DIGEST_CANDIDATES};

#[cfg(test)]
mod tests;

#[cfg(test)]
mod proptests;
