//! The session the bindings name and the entries the selection names.

use super::request::{ExpandRequest, Selection};
use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::session::binding::{self, SourceCheck};
use crate::session::entry::Entry;
use crate::session::SessionView;
use serde_json::json;
use std::sync::Arc;

/// The session as the caller's bindings name it, or `stale_pointer`. A
/// view that went out of date while a prefix was checked is loaded again.
pub(super) fn bound_view(
  engine: &Engine,
  path: &std::path::Path,
  request: &ExpandRequest,
) -> Result<Arc<SessionView>, ContractError> {
  let policy = engine.config.expand_policy();
  for _ in 0..2 {
    let view = engine.load(path, request.branches, &policy)?;
    match binding::check_source(&view, &request.binding) {
      SourceCheck::Holds => {
        binding::check_lineage(&view, &request.binding)?;
        return Ok(view);
      }
      SourceCheck::Stale(error) => return Err(error),
      SourceCheck::ViewOutdated => continue,
    }
  }
  Err(
    ContractError::new(ErrorCode::SourceUnavailable, "Session source kept changing while the pointer was checked.")
      .with("sessionFile", path.to_string_lossy().into_owned()),
  )
}

/// `entry_forgotten` when the selection names a forgotten entry by id: the
/// view left it out, and saying so beats `address_not_found`.
pub(super) fn refuse_forgotten(request: &ExpandRequest, view: &SessionView) -> Result<(), ContractError> {
  let Selection::Items { entry_ids, .. } = &request.selection else { return Ok(()) };
  match entry_ids.iter().find(|id| view.forgotten.contains(*id)) {
    Some(id) => Err(crate::forgotten::entry_refused(&view.header.id, id)),
    None => Ok(()),
  }
}

pub(super) fn out_of_bounds(count: usize, what: String) -> ContractError {
  ContractError::new(ErrorCode::IndexOutOfBounds, format!("{what} is outside the session's {count} entries."))
    .with("entryCount", count)
}

fn check_index(index: i64, count: usize) -> Result<usize, ContractError> {
  if index < 0 || index as usize >= count {
    return Err(out_of_bounds(count, format!("Index {index}")).with("index", index));
  }
  Ok(index as usize)
}

fn resolve_address(
  entries: &[Entry],
  address: &str,
  address_type: &'static str,
  field: fn(&Entry) -> Option<&str>,
) -> Result<usize, ContractError> {
  let matches: Vec<usize> = entries.iter().filter(|e| field(e) == Some(address)).map(|e| e.index).collect();
  match matches.as_slice() {
    [one] => Ok(*one),
    _ => {
      let (code, message) = if matches.is_empty() {
        (ErrorCode::AddressNotFound, format!("No entry has {address_type} \"{address}\" in this view."))
      } else {
        (ErrorCode::AmbiguousAddress, format!("{} entries have {address_type} \"{address}\".", matches.len()))
      };
      Err(
        ContractError::new(code, message)
          .with("addressType", address_type)
          .with("address", address)
          .with("matches", matches.len()),
      )
    }
  }
}

/// The selected entry indices (deduplicated, in selection order) and the
/// anchor when context was requested.
pub fn resolve_selection(
  request: &ExpandRequest,
  entries: &[Entry],
) -> Result<(Vec<usize>, Option<usize>), ContractError> {
  let count = entries.len();
  let mut picked = Vec::new();
  match &request.selection {
    Selection::None => {}
    Selection::Range { first, last } => {
      if *first < 0 || *last < *first || *last as usize >= count {
        return Err(
          out_of_bounds(count, format!("Range {first}..{last}"))
            .with("entryRange", json!({"first": first, "last": last})),
        );
      }
      picked.extend(*first as usize..=*last as usize);
    }
    Selection::Items { indices, entry_ids, operation_addresses } => {
      for index in indices {
        picked.push(check_index(*index, count)?);
      }
      for id in entry_ids {
        picked.push(resolve_address(entries, id, "entry_id", |e| e.entry_id.as_deref())?);
      }
      for address in operation_addresses {
        picked.push(resolve_address(entries, address, "operation_address", |e| e.operation_address.as_deref())?);
      }
    }
  }
  let mut seen = std::collections::HashSet::new();
  picked.retain(|i| seen.insert(*i));
  if !request.has_context() {
    return Ok((picked, None));
  }
  let anchor = picked[0];
  let first = anchor.saturating_sub(request.before);
  let last = (anchor + request.after).min(count - 1);
  Ok(((first..=last).collect(), Some(anchor)))
}
