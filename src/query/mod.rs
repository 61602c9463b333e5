//! The query language of `memory.recall`: arguments to a plan (structural
//! filters, literal / phrase / regex queries), BM25 scoring, the bounded
//! regex and snippets. The operation itself is `ops::recall`.

pub mod plan;
pub mod regex;
pub mod score;
pub mod snippet;
