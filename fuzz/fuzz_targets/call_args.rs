//! recall / expand / sessions / live arguments through the validation the
//! napi edge runs (`*Request::from_json`, `Live::from_json`): any JSON value
//! is accepted or refused as `invalid_argument`, never a panic or another
//! error kind, and an accepted request's bounds hold.
#![no_main]
use libfuzzer_sys::fuzz_target;
use pi_fabric_memory::engine::Live;
use pi_fabric_memory::error::CoreError;
use pi_fabric_memory::ops::expand::ExpandRequest;
use pi_fabric_memory::ops::sessions::SessionsRequest;
use pi_fabric_memory::ops::recall::RecallRequest;
use serde_json::Value;

fn refused_as_invalid<T>(result: Result<T, CoreError>) -> Option<T> {
  match result {
    Ok(value) => Some(value),
    Err(CoreError::InvalidArgument(message)) => {
      assert!(!message.is_empty(), "an invalid_argument names what is wrong");
      None
    }
    Err(other) => panic!("validation failed with a non-argument error: {other}"),
  }
}

fuzz_target!(|data: &[u8]| {
  // The edge receives what napi converts from a JS value: JSON's data model.
  let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
  let value = Some(&value);
  if let Some(request) = refused_as_invalid(ExpandRequest::from_json(value)) {
    assert!(request.max_entries >= 1 && request.max_chars >= 1);
    assert_eq!(ExpandRequest::from_json(value).ok(), Some(request), "validation is deterministic");
  }
  if let Some(request) = refused_as_invalid(SessionsRequest::from_json(value)) {
    assert!(request.limit.is_none_or(|n| n >= 1));
  }
  refused_as_invalid(RecallRequest::from_json(value));
  refused_as_invalid(Live::from_json(value));
});
