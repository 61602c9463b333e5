/** How dreaming reports itself: `/memory status`'s line and the footer's short entry. */

import { join } from 'node:path'
import { agentDir } from '../shared/settings.mjs'
import type { DreamOutcome } from './dream.mjs'
import { dreamingModelName } from './model.mjs'
import { TRANSCRIPT_BUDGET, type DreamingSettings } from './settings.mjs'
import { readState, timeGate } from './state.mjs'

export interface StatusContext {
  now?: number
  /** The session's current model (`ctx.model`). */
  model?: { provider?: string; id?: string }
  /** The default global store reads every project's sessions; any other store only the active session dir. */
  includeGlobal?: boolean
  /** The whole message of this process's last run (the footer shows it in short). */
  lastRun?: string
}

/** The footer entry while the user has not chosen: where to learn what dreaming does and how to turn it on. */
export const OPT_IN_FOOTER = 'dreaming off (opt-in: /memory status)'

const count = (n: number) => n.toLocaleString('en-US')

/** What a run reads, where it sends it and what it may spend: the consent the opt-in line asks for. */
function scope(settings: DreamingSettings, context: StatusContext): string {
  const sessions = context.includeGlobal ? 'the recent sessions of every project' : "this session dir's recent sessions"
  // Outside a session (the CLI) there is no current model to name.
  const model = settings.model || context.model ? dreamingModelName(settings, context.model) : "the Pi session's current model"
  return (
    `reads up to ${count(TRANSCRIPT_BUDGET)} characters of the newest turns in ${sessions}, sends them to ${model}` +
    ` and spends at most ${count(settings.maxOutputTokens)} output tokens and cost ${settings.maxCost} (as the provider reports it) a run`
  )
}

const mode = (settings: DreamingSettings) => (settings.autoApply ? 'applies every change' : 'proposes replacements and removals for /memory review')

/** `/memory status`'s dreaming line: off and how to turn it on, or the last run, whether one is due, and what a run reads and costs. */
export function dreamingStatus(memoryDir: string, settings: DreamingSettings, context: StatusContext = {}): string {
  const line = stateLine(memoryDir, settings, context)
  return context.lastRun ? `${line}\nLast run here: ${context.lastRun}` : line
}

function stateLine(memoryDir: string, settings: DreamingSettings, context: StatusContext): string {
  if (!settings.enabled && settings.enabledSet) return 'Dreaming: off (pi-memory.dreaming.enabled is false)'
  if (!settings.enabled) {
    const file = join(agentDir(), 'settings.json')
    const when = `at a session start at most every ${settings.minHoursSinceLastRun} h, once ${settings.minTurnsSinceLastRun} new turns exist`
    return `Dreaming: off until you turn it on: "pi-memory": {"dreaming": {"enabled": true}} in ${file}. Then, ${when}, it ${scope(settings, context)}; it ${mode(settings)}.`
  }
  const state = readState(memoryDir)
  const gate = timeGate(state, settings, context.now ?? Date.now())
  const last = state.lastConsolidatedAt ? `last run ${state.lastConsolidatedAt} (${state.lastTurnCount} turns read)` : 'never ran'
  const due = gate.open
    ? `due when ${settings.minTurnsSinceLastRun} new turn(s) exist`
    : `next run after ${new Date(gate.nextAt!).toISOString()}`
  return `Dreaming: on; ${last}; ${due}; a run ${scope(settings, context)}; it ${mode(settings)}`
}

/**
 * A run's outcome as the footer shows it: one short line (the whole message
 * is `/memory status`'s "Last run here"); nothing for runs that did not
 * happen (not due, locked, aborted).
 */
export function dreamFooter(outcome: DreamOutcome): string | undefined {
  switch (outcome.status) {
    case 'done': {
      if (outcome.stopped) return `dreaming stopped at ${outcome.stopped.replace(/ \(.*\)$/, '')}: nothing applied`
      const parts = [
        outcome.applied ? `${outcome.applied} applied` : '',
        outcome.proposed ? `${outcome.proposed} proposed` : '',
        outcome.dropped ? `${outcome.dropped} dropped` : '',
      ].filter(Boolean)
      return `dreamed: ${parts.length ? parts.join(', ') : 'no changes'}`
    }
    case 'failed':
      return 'dreaming failed (/memory status)'
    case 'no_model':
      return 'dreaming skipped: no model (/memory status)'
    default:
      return undefined
  }
}
