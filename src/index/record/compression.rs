//! A cold body's compression (and a hot body's entries' and posting
//! lists'): one zstd frame, compressed alone or (a cold body) with a
//! dictionary the index dir shares. A frame compressed with one names the
//! dictionary's id in its header, so a reader needs nothing else to find
//! it; which dictionary an index uses, and where it keeps it, is
//! `index::body_dictionary`'s ([`Dictionaries`] is what the record needs of it).

use super::cold::Unreadable;
use std::path::Path;
use std::sync::Arc;
use zstd::dict::{DecoderDictionary, EncoderDictionary};

/// zstd's fastest regular level: a cold build compresses every cold body
/// once, and level 3 gained 5% in size for 35% less speed. Hot entries too:
/// they are written again after each append (behind the call).
pub const LEVEL: i32 = 1;

/// Where cold bodies find their dictionaries.
pub trait Dictionaries: Send + Sync {
  /// The dictionary to compress the body `plain` of `source` (session
  /// `session_id`) with, if any; an index without one yet may keep the
  /// body to train one.
  fn for_encoding(&self, plain: &[u8], source: &Path, session_id: &str) -> Option<Arc<EncoderDictionary<'static>>>;
  /// The dictionary with this id, if this index has it.
  fn for_decoding(&self, id: u32) -> Option<Arc<DecoderDictionary<'static>>>;
}

/// No dictionary: every body is compressed alone, and a body that names
/// one is unreadable.
pub struct Alone;

impl Dictionaries for Alone {
  fn for_encoding(&self, _: &[u8], _: &Path, _: &str) -> Option<Arc<EncoderDictionary<'static>>> {
    None
  }

  fn for_decoding(&self, _: u32) -> Option<Arc<DecoderDictionary<'static>>> {
    None
  }
}

/// `plain` as one zstd frame, with `dictionary` when given.
pub fn compress(plain: &[u8], dictionary: Option<&EncoderDictionary<'static>>) -> Vec<u8> {
  let compressed = match dictionary {
    Some(dictionary) => {
      zstd::bulk::Compressor::with_prepared_dictionary(dictionary).and_then(|mut c| c.compress(plain))
    }
    None => zstd::bulk::compress(plain, LEVEL),
  };
  compressed.expect("in-memory compression of a bounded body")
}

/// The id of the dictionary `frame` was compressed with, if any.
pub fn dictionary_of(frame: &[u8]) -> Option<u32> {
  zstd::zstd_safe::get_dict_id_from_frame(frame).map(|id| id.get())
}

/// The size `frame` declares its content to be (`None`: not a frame that
/// declares one), read from its header.
pub fn declared_size(frame: &[u8]) -> Option<u64> {
  zstd::zstd_safe::get_frame_content_size(frame).ok().flatten()
}

/// A frame's content, when the frame declares a size within `limit`
/// (checked before a byte is allocated for it), names no dictionary or one
/// `dictionaries` has, and decompresses to that size.
pub fn decompress(frame: &[u8], dictionaries: &dyn Dictionaries, limit: u64) -> Result<Vec<u8>, Unreadable> {
  let size = declared_size(frame).ok_or(Unreadable)?;
  if size > limit {
    return Err(Unreadable);
  }
  let plain = match dictionary_of(frame) {
    None => zstd::bulk::decompress(frame, size as usize),
    Some(id) => {
      let dictionary = dictionaries.for_decoding(id).ok_or(Unreadable)?;
      zstd::bulk::Decompressor::with_prepared_dictionary(&dictionary)
        .and_then(|mut d| d.decompress(frame, size as usize))
    }
  };
  plain.ok().filter(|plain| plain.len() as u64 == size).ok_or(Unreadable)
}
