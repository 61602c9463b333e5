//! The query language of `memory.recall`: arguments to a plan (structural
//! filters, literal / phrase / regex queries), BM25 scoring, the bounded
//! regex and snippets. The operation itself is `ops::recall`.

pub mod plan;
pub(crate) mod regex;
pub(crate) mod score;
pub(crate) mod snippet;
