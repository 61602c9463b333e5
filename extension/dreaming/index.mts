/**
 * Dreaming: opportunistic background consolidation of recent Pi sessions into
 * MEMORY.md / USER.md.
 *
 * On `session_start` (never blocking it, never adding a turn to it) and on
 * `/memory dream`: enabled (opt-in: a run reads transcripts and spends the
 * model's tokens, so it is off until the user sets `enabled: true`; until
 * they choose, the footer and `/memory status` say how) → cross-process lock (`<memoryDir>/dreaming.lock`,
 * an atomic `mkdir`, refreshed while held, taken over when stale) → state
 * (`<memoryDir>/dreaming-state.json`; missing or malformed = never ran) → time
 * gate → recent turns, read through this package's own session model
 * (`memory.sessions` + `memory.walk`) → turn gate → model from Pi's model
 * registry → a pi-agent-core `Agent` with the memory tools of a store on the
 * same directory and limits (their writes take `evidence`), `memory_pack`
 * and `memory_expand` over the same sessions, bounded turns, output tokens
 * and reported cost, and the session's abort signal. Each transcript turn
 * carries its citation (session id and entry ids, as `memory.walk` read
 * them); every write must cite evidence, which is verified through
 * `memory.expand` before it is staged (`evidence.mts`; unverified candidates
 * are dropped and counted) and lands as the entry's provenance. The agent's
 * writes are staged (`staging.mts`) and land at the end, one batch per file: by default only
 * additions are written and replacements / removals await `/memory review`;
 * `autoApply` writes everything. The state is written (temp + rename) only
 * after a successful, unaborted run.
 */
export * from './settings.mjs'
export * from './state.mjs'
export * from './lock.mjs'
export * from './gather.mjs'
export * from './prompt.mjs'
export * from './model.mjs'
export * from './run.mjs'
export * from './dream.mjs'
export * from './status.mjs'
