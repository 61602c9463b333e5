//! `memory.expand`: integrity-checked selection of full normalized entries,
//! delivered in `textRange` chunks that never exceed the JSON envelope.
//!
//! Expansion re-reads and re-normalizes the source (never the derived
//! index), so it always returns complete text. A long entry is split across
//! pages; each page's `next` call carries the source hash and lineage
//! fingerprint it was cut from, so a page can never silently shift.

mod page;
mod request;
mod select;

use crate::engine::Engine;
use crate::error::{ContractError, ErrorCode};
use crate::session::binding;

use page::{fill_page, fit_envelope, next_call};
pub use page::{Chunk, ExpandPage, TextRange};
pub use request::{ExpandRequest, Selection, DEFAULT_MAX_CHARS, MIN_MAX_CHARS};
use select::{bound_view, refuse_forgotten, resolve_selection};

pub fn expand(engine: &Engine, request: &ExpandRequest) -> ExpandPage {
  let fail = |error| ExpandPage::failed(request.session.clone(), request.branches, error);
  let session = match request.session.as_deref() {
    Some(target) => crate::index::find_session(&engine.index_context(), target),
    None => engine.discovery().current().ok_or_else(|| {
      ContractError::new(ErrorCode::SessionNotFound, "There is no current session and the cwd has no sessions.")
    }),
  };
  let session = session.and_then(|session| {
    crate::forgotten::refuse(&engine.agent_dir, &session.header.id, &session.path)?;
    Ok(session)
  });
  match session {
    Ok(session) => expand_at(engine, request, &session.path),
    Err(error) => fail(error),
  }
}

/// [`expand`] of the session at `path`, which `request.session` names.
pub fn expand_at(engine: &Engine, request: &ExpandRequest, path: &std::path::Path) -> ExpandPage {
  let fail = |error| ExpandPage::failed(request.session.clone(), request.branches, error);
  let view = match bound_view(engine, path, request) {
    Ok(view) => view,
    Err(error) => return fail(error),
  };
  let mut page = ExpandPage::bound(&view);
  if request.selection == Selection::None {
    return page;
  }
  let resolved = refuse_forgotten(request, &view);
  let resolved =
    resolved.and_then(|()| resolve_selection(request, &view.normalized.entries)).and_then(|(resolved, anchor)| {
      let named: Vec<usize> = resolved.iter().copied().max().into_iter().chain(anchor).collect();
      binding::check_entries(&view, &request.binding, &named)?;
      Ok((resolved, anchor))
    });
  let (resolved, anchor) = match resolved {
    Ok(resolved) => resolved,
    Err(error) if error.code == ErrorCode::StalePointer => return fail(error),
    Err(error) => return ExpandPage { error: Some(error), ..page },
  };
  let (chunks, mut cursor) = match fill_page(request, &view, &resolved, anchor) {
    Ok(filled) => filled,
    Err(error) => return ExpandPage { error: Some(error), ..page },
  };
  page.entries = chunks;
  fit_envelope(&mut page, &mut cursor, request.entry_offset);
  page.next = cursor.map(|(entry, text)| next_call(request, &view, &resolved, entry, text));
  page
}

#[cfg(test)]
mod tests;
