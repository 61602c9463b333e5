//! Review: unattended batches write their additions and stage the rest as
//! proposals; the user applies or rejects proposals later.

use super::proposals;
use super::result::{Failure, FailureCode, StoreResult};
use super::run::{success, Mode};
use super::{batch, provenance, MemoryStore, Target};

impl MemoryStore {
  /// A batch as unattended dreaming applies it by default: its net
  /// additions are written (when they fit on their own), its replacements
  /// and removals, and additions that fit only after them, are appended to
  /// the proposals awaiting review (`proposed` in the result).
  pub fn apply_for_review(&self, target: Target, operations: &serde_json::Value) -> StoreResult {
    let parsed = batch::parse(operations).and_then(|ops| Ok((ops, provenance::parse_evidence(operations)?)));
    let (ops, evidence) = match parsed {
      Ok(parsed) => parsed,
      Err(failure) => return failure.into(),
    };
    let (mut result, staged) = self.run_ops(target, &ops, Mode::Review, &evidence, None);
    let StoreResult::Success(success) = &mut result else { return result };
    if staged.is_empty() {
      success.message = Some("Batch applied.");
      success.proposed = Some(Vec::new());
      return result;
    }
    let project =
      self.options.project.as_ref().map(|p| proposals::ProposalProject { key: p.key.clone(), name: p.name.clone() });
    let appended = proposals::update(&self.options.dir, &self.options.lock, |ledger| {
      Ok((proposals::append(ledger, target, project, &staged), true))
    });
    match appended {
      Ok(proposed) => success.proposed = Some(proposed),
      Err(failure) => {
        success.message = Some("Additions applied; staging the other changes for review failed (see proposalError).");
        success.proposal_error = Some(failure.error);
      }
    }
    result
  }

  /// The proposals awaiting review, read fresh from disk.
  pub fn proposals(&self) -> Result<Vec<proposals::Proposal>, Failure> {
    proposals::read(&proposals::path(&self.options.dir)).map(|ledger| ledger.proposals)
  }

  /// Applies the selected proposals one by one (id order), each as an exact
  /// whole-entry change: one whose entry changed is refused as stale and
  /// stays listed. Applied ones leave the ledger.
  pub fn apply_proposals(&self, selection: &proposals::Selection) -> proposals::ReviewReport {
    self.review(selection, |proposal| match proposal.op() {
      Ok(_) if !self.is_own_project(proposal) => other_project(proposal).into(),
      Ok(op) => {
        let evidence = [proposal.evidence.clone().unwrap_or_default()];
        self.run_ops(proposal.target(), std::slice::from_ref(&op), Mode::Single, &evidence, Some(proposal.id)).0
      }
      Err(failure) => failure.into(),
    })
  }

  /// Drops the selected proposals without touching the memory files.
  pub fn reject_proposals(&self, selection: &proposals::Selection) -> proposals::ReviewReport {
    self.review(selection, |proposal| success(proposal.target(), Vec::new(), 0, Some("Rejected.")))
  }

  /// A project proposal is this store's to apply only when it was made for
  /// this store's project; global proposals are every store's.
  fn is_own_project(&self, proposal: &proposals::Proposal) -> bool {
    proposal.target() != Target::Project
      || matches!((&proposal.project, &self.options.project), (Some(made), Some(here)) if made.key == here.key)
  }

  fn review(
    &self,
    selection: &proposals::Selection,
    mut settle: impl FnMut(&proposals::Proposal) -> StoreResult,
  ) -> proposals::ReviewReport {
    let outcome = proposals::update(&self.options.dir, &self.options.lock, |ledger| {
      let (picked, missing) = selection.pick(ledger);
      let mut report = proposals::ReviewReport { missing, ..Default::default() };
      for proposal in &picked {
        let settled = settle(proposal);
        report.record(proposal, &settled);
        if settled.is_success() {
          ledger.proposals.retain(|p| p.id != proposal.id);
        }
      }
      report.remaining = ledger.proposals.len();
      report.success = report.refused.is_empty();
      let changed = !report.settled.is_empty();
      Ok((report, changed))
    });
    outcome.unwrap_or_else(proposals::ReviewReport::failed)
  }
}

fn other_project(proposal: &proposals::Proposal) -> Failure {
  let made = proposal.project.as_ref().map_or("an unknown project".to_string(), |p| format!("project {}", p.name));
  Failure::new(
    FailureCode::OtherProject,
    format!(
      "Proposal #{} was made for {made}'s memory, not this one's: review it from a checkout of that project.",
      proposal.id
    ),
  )
}
