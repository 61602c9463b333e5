/**
 * Dreaming's store: the consolidation agent's memory tools run against it,
 * and nothing they do is written. Every write is checked against the live
 * file as one dry-run batch of everything staged so far plus the new
 * operations (the same validation, threat scan, matching and final size
 * budget as a real write) and, when it passes, recorded. Before that, each
 * candidate's cited evidence is verified (`evidence.mts`): an addition or
 * replacement without verified evidence (or a removal whose given evidence
 * does not verify) is dropped and counted in {@link StagedStore.dropped}; the
 * verified citations travel with the operation and become the entry's
 * provenance. `memory_read` shows the file with the staged changes.
 * {@link land} then applies each target's staged operations as one batch:
 * the whole consolidation lands, or none of that file's part does.
 */
import type { MemoryCitation, MemoryOperation, MemoryStore, MemoryStoreResult, MemoryTarget } from 'pi-fabric-memory/native'
import type { Verified } from './evidence.mjs'
import type { ToolStore } from '../curated/tools.mjs'

/** Checks a candidate's evidence (the claim is the text it writes, or removes). */
export type Verify = (claim: string, evidence: unknown) => Promise<Verified>

/** A candidate dropped because its evidence did not verify. */
export interface Dropped {
  target: MemoryTarget
  action: MemoryOperation['action']
  text: string
  reason: string
}

type Candidate = MemoryOperation & { evidence?: unknown }

const claimOf = (op: Candidate) => (op.action === 'add' ? op.content : op.action === 'replace' ? op.newContent : op.oldText)

const TARGETS: MemoryTarget[] = ['memory', 'user', 'project']

/** The session a citation names (`{session, …}`), for the project check. */
const citedSessions = (evidence: unknown): string[] =>
  (Array.isArray(evidence) ? evidence : []).map((c) => (c && typeof c === 'object' ? String((c as { session?: unknown }).session ?? '') : ''))

export class StagedStore implements ToolStore {
  readonly staged: Record<MemoryTarget, MemoryOperation[]> = { memory: [], user: [], project: [] }
  /** Candidates dropped for unverified evidence, in order. */
  readonly dropped: Dropped[] = []

  /**
   * Without `verify`, operations are staged as given (their evidence unchecked).
   * `projectSessions`: the ids of the sessions of the store's project; a write to
   * the project's memory must cite only those (a fact learned in another
   * repository's session is not this project's).
   */
  constructor(private readonly store: MemoryStore, private readonly verify?: Verify, private readonly projectSessions?: ReadonlySet<string>) {}

  get project() {
    return this.store.project
  }

  add(target: MemoryTarget, content: string, evidence?: unknown) {
    return this.stage(target, [{ action: 'add', content, evidence } as Candidate])
  }

  replace(target: MemoryTarget, oldText: string, newContent: string, evidence?: unknown) {
    return this.stage(target, [{ action: 'replace', oldText, newContent, evidence } as Candidate])
  }

  remove(target: MemoryTarget, oldText: string, evidence?: unknown) {
    return this.stage(target, [{ action: 'remove', oldText, evidence } as Candidate])
  }

  apply(target: MemoryTarget, operations: MemoryOperation[]) {
    return this.stage(target, Array.isArray(operations) ? operations : [], true)
  }

  async read(target: MemoryTarget, options?: { provenance?: boolean }): Promise<MemoryStoreResult> {
    const staged = this.staged[target]
    if (staged.length === 0) return this.store.read(target, options)
    const result = await this.store.apply(target, staged, { dryRun: true })
    return result.success ? { ...result, operations: undefined, message: 'Includes the changes staged in this run.' } : result
  }

  /** The operations whose evidence verifies, with it normalized; the others are dropped and counted. */
  private async checked(target: MemoryTarget, operations: Candidate[]) {
    const kept: Array<{ index: number; op: MemoryOperation }> = []
    const dropped: Array<{ index: number; reason: string }> = []
    for (const [index, op] of operations.entries()) {
      const { evidence, ...plain } = op
      const optional = op.action === 'remove' && (evidence === undefined || evidence === null)
      if (!this.verify || optional) {
        kept.push({ index, op: (this.verify ? plain : op) as MemoryOperation })
        continue
      }
      const elsewhere = target === 'project' && this.projectSessions ? citedSessions(evidence).find((id) => !this.projectSessions!.has(id)) : undefined
      const verified = elsewhere !== undefined
        ? { ok: false as const, reason: `session ${elsewhere} is not one of this project's sessions: write facts from other projects with scope "global", or not at all` }
        : await this.verify(String(claimOf(op) ?? ''), evidence)
      if (verified.ok) {
        kept.push({ index, op: { ...plain, evidence: verified.citations as MemoryCitation[] } as MemoryOperation })
      } else {
        dropped.push({ index, reason: verified.reason })
        this.dropped.push({ target, action: op.action, text: String(claimOf(op) ?? ''), reason: verified.reason })
      }
    }
    return { kept, dropped }
  }

  private async stage(target: MemoryTarget, operations: Candidate[], batch = false): Promise<MemoryStoreResult> {
    const before = this.staged[target].length
    if (operations.length === 0) return this.store.apply(target, operations)
    const { kept, dropped } = await this.checked(target, operations)
    if (kept.length === 0) {
      const reasons = dropped.map((d) => (batch ? `operation ${d.index}: ${d.reason}` : d.reason)).join('; ')
      return { success: false, code: 'unverified', error: `Not staged, the evidence does not verify: ${reasons}. Cite the session entries the fact comes from.` }
    }
    const ops = kept.map((k) => k.op)
    const result = await this.store.apply(target, [...this.staged[target], ...ops], { dryRun: true })
    if (!result.success) return ownFailure(result, before, batch, kept.map((k) => k.index))
    this.staged[target].push(...ops)
    const own = batch ? result.operations?.slice(before).map((o) => ({ ...o, index: kept[o.index - before].index })) : undefined
    const single = result.operations?.[before]
    const note = dropped.length ? ` Dropped for unverified evidence: ${dropped.map((d) => `operation ${d.index} (${d.reason})`).join('; ')}.` : ''
    return {
      ...result,
      operations: own,
      ...(batch || !single?.entry ? {} : single.action === 'replace' ? { replacedEntry: single.entry } : { removedEntry: single.entry }),
      message: `Staged: it is written when this consolidation completes.${note}`,
    }
  }
}

/** Renumbers a failure of the dry run to the caller's own operations (`indices`: their numbers in the call). */
function ownFailure(result: MemoryStoreResult & { success: false }, before: number, batch: boolean, indices: number[]): MemoryStoreResult {
  const failed = result.failedOperation
  if (!failed) return result
  if (failed.index < before) {
    return { ...result, error: `A change staged earlier in this run no longer applies (the file changed meanwhile): ${result.error}` }
  }
  const index = indices[failed.index - before] ?? failed.index - before
  const error = result.error.replace(/^Operation \d+ failed: /, batch ? `Operation ${index} failed: ` : '')
  return batch ? { ...result, error, failedOperation: { ...failed, index } } : { ...result, error, failedOperation: undefined }
}

export interface Landing {
  /** Changes written (auto mode: every changed operation; review mode: the net additions). */
  applied: number
  /** Changes staged in `proposals.json` for `/memory review`. */
  proposed: number
  /** Per target, why its batch did not land (nothing of that file was written). */
  errors: string[]
  /** Candidates dropped before staging for unverified evidence. */
  dropped: number
}

/** Lands the staged operations: one batch per file, fully (`autoApply`) or additions only, the rest proposed. */
export async function land(store: MemoryStore, staged: StagedStore['staged'], autoApply: boolean, dropped = 0): Promise<Landing> {
  const landing: Landing = { applied: 0, proposed: 0, errors: [], dropped }
  for (const target of TARGETS) {
    const operations = staged[target]
    if (operations.length === 0) continue
    const result = autoApply ? await store.apply(target, operations) : await store.applyForReview(target, operations)
    if (!result.success) {
      landing.errors.push(`${target}: ${result.error}`)
      continue
    }
    landing.applied += autoApply ? (result.operations ?? []).filter((o) => o.status !== 'unchanged').length : (result.added ?? []).length
    landing.proposed += result.proposed?.length ?? 0
    if (result.proposalError) landing.errors.push(`${target}: ${result.proposalError}`)
    if (result.provenanceError) landing.errors.push(`${target}: ${result.provenanceError}`)
  }
  return landing
}

/** The outcome line's landing sentence. */
export function describeLanding(landing: Landing, autoApply: boolean): string {
  const parts = autoApply ? [`applied ${landing.applied} change(s)`] : [`applied ${landing.applied} addition(s)`]
  if (landing.proposed) parts.push(`${landing.proposed} change(s) await review (/memory review)`)
  if (landing.dropped) parts.push(`${landing.dropped} candidate(s) dropped: their evidence did not verify`)
  if (landing.errors.length) parts.push(`not applied — ${landing.errors.join('; ')}`)
  return parts.join('; ')
}
