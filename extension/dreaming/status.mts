import { dreamingModelName } from './model.mjs'
import type { DreamingSettings } from './settings.mjs'
import { readState, timeGate } from './state.mjs'

/** `/memory status`'s dreaming line: the last run and whether the time gate is open. */
export function dreamingStatus(memoryDir: string, settings: DreamingSettings, now = Date.now(), current?: { provider?: string; id?: string }): string {
  if (!settings.enabled) return 'Dreaming: disabled'
  const state = readState(memoryDir)
  const gate = timeGate(state, settings, now)
  const last = state.lastConsolidatedAt ? `last run ${state.lastConsolidatedAt} (${state.lastTurnCount} turns)` : 'never ran'
  const due = gate.open
    ? `due when ${settings.minTurnsSinceLastRun} new turn(s) exist`
    : `next run after ${new Date(gate.nextAt!).toISOString()}`
  const mode = settings.autoApply ? 'applies every change' : 'proposes replacements and removals for /memory review'
  return `Dreaming: ${last}; ${due}; model ${dreamingModelName(settings, current)}; ${mode}`
}
