/**
 * Dreaming's store: the consolidation agent's memory tools run against it,
 * and nothing they do is written. Every write is checked against the live
 * file as one dry-run batch of everything staged so far plus the new
 * operations (the same validation, threat scan, matching and final size
 * budget as a real write) and, when it passes, recorded. `memory_read` shows
 * the file with the staged changes. {@link land} then applies each target's
 * staged operations as one batch: the whole consolidation lands, or none of
 * that file's part does.
 */
import type { MemoryOperation, MemoryStore, MemoryStoreResult, MemoryTarget } from 'pi-fabric-memory/native'
import type { ToolStore } from './memory-tools.mjs'

const TARGETS: MemoryTarget[] = ['memory', 'user']

export class StagedStore implements ToolStore {
  readonly staged: Record<MemoryTarget, MemoryOperation[]> = { memory: [], user: [] }

  constructor(private readonly store: MemoryStore) {}

  add(target: MemoryTarget, content: string) {
    return this.stage(target, [{ action: 'add', content }])
  }

  replace(target: MemoryTarget, oldText: string, newContent: string) {
    return this.stage(target, [{ action: 'replace', oldText, newContent }])
  }

  remove(target: MemoryTarget, oldText: string) {
    return this.stage(target, [{ action: 'remove', oldText }])
  }

  apply(target: MemoryTarget, operations: MemoryOperation[]) {
    return this.stage(target, Array.isArray(operations) ? operations : [], true)
  }

  async read(target: MemoryTarget): Promise<MemoryStoreResult> {
    const staged = this.staged[target]
    if (staged.length === 0) return this.store.read(target)
    const result = await this.store.apply(target, staged, { dryRun: true })
    return result.success ? { ...result, operations: undefined, message: 'Includes the changes staged in this run.' } : result
  }

  private async stage(target: MemoryTarget, operations: MemoryOperation[], batch = false): Promise<MemoryStoreResult> {
    const before = this.staged[target].length
    if (operations.length === 0) return this.store.apply(target, operations)
    const result = await this.store.apply(target, [...this.staged[target], ...operations], { dryRun: true })
    if (!result.success) return ownFailure(result, before, batch)
    this.staged[target].push(...operations)
    const own = batch ? result.operations?.slice(before).map((o) => ({ ...o, index: o.index - before })) : undefined
    const single = result.operations?.[before]
    return {
      ...result,
      operations: own,
      ...(batch || !single?.entry ? {} : single.action === 'replace' ? { replacedEntry: single.entry } : { removedEntry: single.entry }),
      message: 'Staged: it is written when this consolidation completes.',
    }
  }
}

/** Renumbers a failure of the dry run to the caller's own operations. */
function ownFailure(result: MemoryStoreResult & { success: false }, before: number, batch: boolean): MemoryStoreResult {
  const failed = result.failedOperation
  if (!failed) return result
  if (failed.index < before) {
    return { ...result, error: `A change staged earlier in this run no longer applies (the file changed meanwhile): ${result.error}` }
  }
  const index = failed.index - before
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
}

/** Lands the staged operations: one batch per file, fully (`autoApply`) or additions only, the rest proposed. */
export async function land(store: MemoryStore, staged: StagedStore['staged'], autoApply: boolean): Promise<Landing> {
  const landing: Landing = { applied: 0, proposed: 0, errors: [] }
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
  }
  return landing
}

/** The outcome line's landing sentence. */
export function describeLanding(landing: Landing, autoApply: boolean): string {
  const parts = autoApply ? [`applied ${landing.applied} change(s)`] : [`applied ${landing.applied} addition(s)`]
  if (landing.proposed) parts.push(`${landing.proposed} change(s) await review (/memory review)`)
  if (landing.errors.length) parts.push(`not applied — ${landing.errors.join('; ')}`)
  return parts.join('; ')
}
