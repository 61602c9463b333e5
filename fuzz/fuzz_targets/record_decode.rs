//! Cache record decode: never panics on any bytes; what decodes re-encodes
//! to the same bytes (the checksum and `cacheBytes` hold).
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::index::record::compression::Alone;
use pi_fabric_memory::index::record::CacheRecord;

fuzz_target!(|data: &[u8]| {
  // A hot record's entries and lists may decompress to at most this (as a small source's read limit).
  if let Some(mut record) = CacheRecord::decode(data, &Alone, 16 << 20) {
    assert_eq!(record.encode(&Alone).ok().as_deref(), Some(data), "a decoded record re-encodes byte for byte");
  }
});
