/** Dreaming's settings (`pi-memory.dreaming` in Pi's settings) and its fixed limits. */

/** Characters of transcript handed to the consolidation agent (header and footer included). */
export const TRANSCRIPT_BUDGET = 8_000
/** Characters kept of one side (user or assistant) of one turn. */
export const TURN_SIDE_CHARS = 2_000
/** Sessions read per run, newest first. */
export const MAX_SESSIONS = 50
/** Agent turns (LLM calls) before the run is stopped. */
export const MAX_AGENT_TURNS = 12

export interface DreamingSettings {
  /** Off unless the user turned it on: a run reads transcripts and spends the model's tokens. */
  enabled: boolean
  /** Whether `enabled` was set either way; while unset, the footer and `/memory status` say how to turn dreaming on. */
  enabledSet: boolean
  minHoursSinceLastRun: number
  minTurnsSinceLastRun: number
  /** A model of the user's choosing; unset = the session's current model, so transcripts only go where Pi already sends them. */
  model?: { provider: string; model: string }
  /** Write replacements and removals too instead of proposing them for review. */
  autoApply: boolean
  /** Output tokens one run may generate (each request is capped to what is left). */
  maxOutputTokens: number
  /** Cost (the provider's reported `usage.cost.total`) after which a run stops; only when the provider reports cost. */
  maxCost: number
}

export const DEFAULT_DREAMING: DreamingSettings = {
  enabled: false,
  enabledSet: false,
  minHoursSinceLastRun: 24,
  minTurnsSinceLastRun: 5,
  autoApply: false,
  maxOutputTokens: 16_000,
  maxCost: 0.5,
}

const nonNegative = (value: unknown): number | undefined => {
  const n = typeof value === 'string' && /^\s*\d+(\.\d+)?\s*$/.test(value) ? Number(value) : value
  return typeof n === 'number' && Number.isFinite(n) && n >= 0 ? n : undefined
}

/** `true`/`false` (or their strings, as interpolation yields them); anything else is unset. */
const flag = (value: unknown): boolean | undefined =>
  value === true || value === 'true' ? true : value === false || value === 'false' ? false : undefined

/** The `pi-memory.dreaming` object with defaults; `minSessionsSinceLastRun` is a deprecated alias. */
export function dreamingSettings(raw: unknown): DreamingSettings {
  const o = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {}
  const model = o.model && typeof o.model === 'object' ? (o.model as Record<string, unknown>) : {}
  const str = (v: unknown) => (typeof v === 'string' && v.trim() ? v.trim() : undefined)
  const [provider, modelId] = [str(model.provider), str(model.model)]
  const enabled = flag(o.enabled)
  return {
    enabled: enabled === true,
    enabledSet: enabled !== undefined,
    minHoursSinceLastRun: nonNegative(o.minHoursSinceLastRun) ?? DEFAULT_DREAMING.minHoursSinceLastRun,
    minTurnsSinceLastRun:
      nonNegative(o.minTurnsSinceLastRun) ?? nonNegative(o.minSessionsSinceLastRun) ?? DEFAULT_DREAMING.minTurnsSinceLastRun,
    ...(provider && modelId ? { model: { provider, model: modelId } } : {}),
    autoApply: o.autoApply === true || o.autoApply === 'true',
    maxOutputTokens: nonNegative(o.maxOutputTokens) ?? DEFAULT_DREAMING.maxOutputTokens,
    maxCost: nonNegative(o.maxCost) ?? DEFAULT_DREAMING.maxCost,
  }
}
