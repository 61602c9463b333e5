//! Cache records on disk (version [`CACHE_VERSION`]), the index's
//! "segment": the record ([`CacheRecord`], its [`Tier`] and [`Body`]) here,
//! its framing and codec in `frame`, reading it (whole, or a cold record's
//! head first and its body on first use) in `read`, its file's name in
//! `name`; its parts: the hot shard ([`hot`]), the cold digest ([`cold`]),
//! the vocabulary both hold ([`vocabulary`]) and the typed kinds of their
//! entries ([`kind`]). Written atomically by `dir::write_atomic`.
//!
//! A record is [`MAGIC`], the head's length (u32 LE), the xxh3-64 (LE) of
//! the head and of the body, then the head and the body, both postcard
//! (compact, allocation-light to decode, no text escaping); a cold body is
//! compressed (one zstd frame: it is read once per query's first need, and
//! it is most of the index dir's bytes; with the index dir's shared
//! dictionary once it has one, see [`compression`]), and so are a hot
//! body's entries and posting lists (alone), decompressed where a query
//! reads them. The head is the
//! [`CacheRecord`] without its bulk: for a cold digest every field a query
//! plans with; the body is the hot shard or the digest's [`ColdContent`]. A
//! fresh process reads only the heads of cold records, and a cold body when
//! a query first needs it ([`open`]). The checksums turn any in-place change
//! (a bit flip, a same-length edit) into a torn record, which is rebuilt; a
//! body read later must also come with the very head it was read with.
//! Every record
//! names its exact source path, branch mode, lineage, policy, source hash
//! and stamp, and its own size (`cacheBytes`), so a torn, foreign or stale
//! file is recognized and rebuilt from source, never migrated.

pub(crate) mod cold;
pub mod compression;
mod deferred;
mod first_use;
mod frame;
pub(crate) mod hot;
pub(crate) mod kind;
mod name;
pub(crate) mod postings;
mod read;
mod term_list;
pub(crate) mod vocabulary;

pub use deferred::{backed_by, Backing, Deferred};
#[cfg(test)]
pub use frame::readable_bytes;
pub use frame::{body_dictionary, MAGIC_PREFIX};
pub(crate) use frame::{sealed, unsealed};
pub use name::{base_hash, base_name, base_of, file_name, hash_of_base, stem};
pub use read::{defer_content, file_of_head, from_head, open, read, read_limit, source_exists};

use crate::index::interned::Interned;
use crate::session::lineage::Branches;
use crate::session::source::{Hash256, StatStamp};
use crate::session::titles::Titles;
use cold::ColdDigest;
use hot::HotShard;
use serde::{Deserialize, Serialize};

pub const CACHE_VERSION: u32 = 26;
/// `MD`: cacheVersion 26, a head's session id, working dir and titles, and
/// a cold head's kinds and tip, each group one byte string decoded on
/// first use, and its SHA-256s byte strings (25: a hot shard's entries and
/// its posting lists each one zstd frame; 24: a cold head's kinds table kept as its bytes,
/// decoded when a filter asks; 23: a cold head's kinds as a table of their
/// strings and rows of indices; 22: a cold body compressed with the index dir's
/// shared zstd dictionary once it has one; 21: a hot shard's term list with a whole term every
/// 16 and their offsets, searched where it was read; 20: a hot shard's
/// entries packed, decoded on first use, beside one fact byte per entry; 19: the source hash and the lineage
/// fingerprints as 32 bytes, not hex; 18: a record's policy without its lineage fingerprint,
/// one interned string per configuration; 17: a hot shard's posting lists
/// packed as gap varints; 16: a cold body is one zstd frame; 15: vocabularies
/// front-coded; 14: the session's name
/// and first prompt in the head; 13: session frequencies and lengths for ranking; 12:
/// the tokenizer's identifier parts and script
/// bigrams; 11: a cold digest's files touched and tool histogram
/// moved from its head to its body); records of earlier versions
/// (`PFMIDX06`, `PFMIDX6C`, `PFMIDX07`, `PFMIDX7C`, `PFMIDX8C`, `PFMIDX9C`,
/// `PFMIDXAS`, `PFMIDXBS`, `PFMIDXBT`, `PFMIDXBU`, `PFMIDXCZ`, `PFMIDXEP`,
/// `PFMIDXFI`, `PFMIDXGH`, `PFMIDXHE`, `PFMIDXHR`, `PFMIDXIZ`, `PFMIDXJK`,
/// `PFMIDXKB`, `PFMIDXLH`) are rebuilt.
pub(super) const MAGIC: &[u8; 8] = b"PFMIDXMD";
/// Serialized by variant index in records (postcard), by name in results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr)]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "lowercase")]
pub enum Tier {
  Hot,
  Cold,
}

impl Tier {
  pub fn as_str(self) -> &'static str {
    self.into()
  }
}

/// A hot shard is boxed: most records at scale are cold digests, and an
/// inline shard made every one of them ~190 bytes larger. The digest stays
/// inline (the lint's advice): boxing it would be an allocation per head.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Body {
  Hot(Box<HotShard>),
  Cold(ColdDigest),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CacheRecord {
  pub cache_version: u32,
  /// Interned as the listing's path ([`Interned::file`]), as are the
  /// strings many records repeat: a record at scale is mostly a resident
  /// head, and 100,000 of them held 100,000 copies of each.
  #[serde(with = "crate::index::interned::file")]
  pub file: Interned,
  pub branches: Branches,
  pub lineage_fingerprint: Hash256,
  /// Everything that shaped the record besides the source (see `policy`).
  pub policy: Interned,
  pub source_hash: Hash256,
  pub mtime: f64,
  pub size: u64,
  pub stamp: StatStamp,
  /// When the source was read for this record (racy-stamp rule).
  pub verified_ns: i128,
  pub cache_bytes: u64,
  pub cache_source_ratio: f64,
  /// Read when a hit or a session list first needs them.
  pub details: Deferred<Details>,
  #[serde(with = "summary")]
  pub body: Body,
}

/// The parts of a record's head that only hits and session lists read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Details {
  pub session_id: String,
  pub cwd: Interned,
  /// What a session list shows besides the id (Pi's name, the first prompt).
  pub titles: Titles,
}

/// How a record's body appears in its head: which tier, and for a cold
/// digest its head fields (the content is `serde(skip)`); the hot shard is
/// all body. JSON (`inspectCacheRecord`) shows the whole body instead.
mod summary {
  use super::{Body, ColdDigest};
  use serde::{Deserialize, Deserializer, Serialize, Serializer};

  #[derive(Serialize)]
  enum Ref<'a> {
    Hot,
    Cold(&'a ColdDigest),
  }

  #[derive(Deserialize)]
  #[allow(clippy::large_enum_variant)] // transient: moved into `Body` at once
  enum Owned {
    Hot,
    Cold(ColdDigest),
  }

  /// The digest's fields and its content's, as one JSON object.
  #[derive(Serialize)]
  struct Whole<'a> {
    #[serde(flatten)]
    digest: &'a ColdDigest,
    #[serde(flatten)]
    content: Option<&'a crate::index::record::cold::ColdContent>,
  }

  pub fn serialize<S: Serializer>(body: &Body, serializer: S) -> Result<S::Ok, S::Error> {
    match (body, serializer.is_human_readable()) {
      (Body::Hot(shard), true) => serializer.serialize_newtype_variant("Body", 0, "Hot", shard),
      (Body::Cold(digest), true) => {
        let whole = Whole { digest, content: digest.content().ok() };
        serializer.serialize_newtype_variant("Body", 1, "Cold", &whole)
      }
      (Body::Hot(_), false) => Ref::Hot.serialize(serializer),
      (Body::Cold(digest), false) => Ref::Cold(digest).serialize(serializer),
    }
  }

  /// A hot body is a placeholder until the body section is decoded.
  pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Body, D::Error> {
    Ok(match Owned::deserialize(deserializer)? {
      Owned::Hot => Body::Hot(Box::default()),
      Owned::Cold(digest) => Body::Cold(digest),
    })
  }
}

impl CacheRecord {
  pub fn session_id(&self) -> &str {
    &self.details.get().session_id
  }

  pub fn cwd(&self) -> &str {
    &self.details.get().cwd
  }

  pub fn titles(&self) -> &Titles {
    &self.details.get().titles
  }

  pub fn tier(&self) -> Tier {
    match self.body {
      Body::Hot(_) => Tier::Hot,
      Body::Cold(_) => Tier::Cold,
    }
  }

  pub fn coverage(&self) -> &super::IndexCoverage {
    match &self.body {
      Body::Hot(shard) => &shard.index_coverage,
      Body::Cold(digest) => &digest.index_coverage,
    }
  }

  /// A cold digest whose content (or a hot shard whose entries) was found
  /// unreadable when a query needed it: the record no longer answers and
  /// is rebuilt by the next sync.
  pub fn content_unreadable(&self) -> bool {
    match &self.body {
      _ if self.details.damaged() => true,
      Body::Hot(shard) => shard.damaged(),
      Body::Cold(digest) => digest.details.damaged() || digest.content.found_unreadable(),
    }
  }

  pub fn entry_count(&self) -> usize {
    match &self.body {
      Body::Hot(shard) => shard.entry_count(),
      Body::Cold(digest) => digest.entry_count as usize,
    }
  }
}

#[cfg(test)]
mod tests;
