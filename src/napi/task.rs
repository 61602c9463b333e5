//! One memory operation, run on the libuv pool: its result serialized to
//! JSON text within the envelope, a panic caught.

use super::json::JsonText;
use super::{caught, to_napi};
use crate::engine::Engine;
use crate::error::CoreError;
use crate::ops::envelope::bounded;
use crate::ops::expand::{expand, ExpandRequest};
use crate::ops::forget::{self, ForgetRequest};
use crate::ops::pack::{pack, PackRequest};
use crate::ops::recall::{recall, RecallRequest};
use crate::ops::sessions::{sessions, SessionsRequest};
use napi::bindgen_prelude::*;
use napi_derive::napi;

pub(super) enum Operation {
  Recall(Box<RecallRequest>),
  Expand(ExpandRequest),
  Sessions(SessionsRequest),
  Pack(Box<PackRequest>),
  Forget(ForgetRequest),
  Unforget(ForgetRequest),
  Forgotten,
}

pub struct OperationTask {
  pub(super) engine: Engine,
  pub(super) operation: Operation,
}

#[napi]
impl Task for OperationTask {
  type Output = String;
  type JsValue = JsonText;

  fn compute(&mut self) -> Result<String> {
    let json = caught("a memory operation", || match &self.operation {
      Operation::Recall(request) => bounded(&recall(&self.engine, request)),
      Operation::Expand(request) => bounded(&expand(&self.engine, request)),
      Operation::Sessions(request) => bounded(&sessions(&self.engine, request)),
      Operation::Pack(request) => bounded(&pack(&self.engine, request)),
      Operation::Forget(request) => bounded(&forget::forget(&self.engine, request)),
      Operation::Unforget(request) => bounded(&forget::unforget(&self.engine, request)),
      Operation::Forgotten => bounded(&forget::list(&self.engine)),
    })?;
    json.map(crate::text::ascii_json).map_err(|error| to_napi(CoreError::Internal(error.to_string())))
  }

  fn resolve(&mut self, _env: Env, output: String) -> Result<JsonText> {
    Ok(JsonText(output))
  }
}
