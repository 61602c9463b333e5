/**
 * Capability heads: a deterministic provider → action tree over the memory
 * provider and the Pi tools registered in the session. It helps choose an
 * exact `ref` for `memory.recall`; its description text never becomes
 * lexical evidence (recall matches session records only).
 */
import { createRequire } from 'node:module'

export interface ActionDescriptor {
  ref: string
  provider: string
  action: string
  description: string
  parameters?: unknown
}

export interface ActionHead {
  key: string
  ref: string
  name: string
  description: string
  descriptorHash: string
}

export interface ProviderHead {
  key: string
  name: string
  description: string
  descriptorHash: string
  actions: ActionHead[]
}

export interface Catalog {
  kind: 'pi-fabric.capability-catalog'
  version: 1
  root: { descriptorHash: string }
  providers: ProviderHead[]
  complete: boolean
  reasons: string[]
}

export const MEMORY_ACTIONS: ActionDescriptor[] = [
  { ref: 'memory.recall', provider: 'memory', action: 'recall', description: 'Search Pi session history: ranked, bounded evidence with follow calls' },
  { ref: 'memory.expand', provider: 'memory', action: 'expand', description: 'Read complete normalized session entries in textRange chunks' },
  { ref: 'memory.pack', provider: 'memory', action: 'pack', description: 'What the history says about a query: cited, verified excerpts within a token budget' },
  { ref: 'memory.sessions', provider: 'memory', action: 'sessions', description: 'List Pi sessions of a scope, newest first' },
]

const PROVIDER_DESCRIPTIONS: Record<string, string> = {
  memory: 'Recall over Pi session history',
  pi: 'Tools registered in this Pi session',
}

const MAX_ACTIONS = 1000

/** JSON with sorted keys, so hashes do not depend on key order. */
function stable(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stable).join(',')}]`
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    return `{${entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([k, v]) => `${JSON.stringify(k)}:${stable(v)}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

/** `node:crypto` on the first hash, not at import: it is ~7 ms of a fresh process's import of the package. */
let crypto: typeof import('node:crypto') | undefined
const hash = (value: unknown) => {
  crypto ??= createRequire(import.meta.url)('node:crypto') as typeof import('node:crypto')
  return crypto.createHash('sha256').update(stable(value)).digest('hex')
}

/** Pi tools as `pi.<name>` actions. */
export function piActions(tools: ReadonlyArray<{ name: string; description?: string; parameters?: unknown }>): ActionDescriptor[] {
  return tools.map((tool) => ({ ref: `pi.${tool.name}`, provider: 'pi', action: tool.name, description: tool.description ?? '', parameters: tool.parameters }))
}

export function catalog(actions: ActionDescriptor[]): Catalog {
  const sorted = [...actions].sort((a, b) => (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0))
  const kept = sorted.slice(0, MAX_ACTIONS)
  const byProvider = new Map<string, ActionHead[]>()
  for (const action of kept) {
    const head = { key: action.ref, ref: action.ref, name: action.action, description: action.description, descriptorHash: hash(action) }
    byProvider.set(action.provider, [...(byProvider.get(action.provider) ?? []), head])
  }
  const providers = [...byProvider.entries()]
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([name, heads]) => ({
      key: name,
      name,
      description: PROVIDER_DESCRIPTIONS[name] ?? name,
      descriptorHash: hash({ name, actions: heads.map((h) => h.descriptorHash) }),
      actions: heads,
    }))
  return {
    kind: 'pi-fabric.capability-catalog',
    version: 1,
    root: { descriptorHash: hash(providers.map((p) => p.descriptorHash)) },
    providers,
    complete: kept.length === sorted.length,
    reasons: kept.length === sorted.length ? [] : ['action_limit'],
  }
}

const words = (text: string) => text.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}_]+/gu) ?? []

/** Lexical scoring over ref, name and description: exact ref and name first. */
export function search(actions: ActionDescriptor[], query: string, limit = 100): Array<ActionDescriptor & { score: number }> {
  const q = query.trim().toLowerCase()
  const terms = [...new Set(words(q))]
  const scored = actions.map((action) => {
    const ref = action.ref.toLowerCase()
    const haystack = new Set(words(`${action.ref} ${action.action} ${action.description} ${action.provider}`))
    let score = 0
    if (ref === q) score += 1000
    if (action.action.toLowerCase() === q) score += 800
    if (q && ref.startsWith(q)) score += 300
    else if (q && ref.includes(q)) score += 120
    if (q && action.description.toLowerCase().includes(q)) score += 60
    const hits = terms.filter((t) => haystack.has(t)).length
    score += hits * 10
    if (terms.length > 0 && hits === terms.length) score += 15
    return { ...action, score }
  })
  return scored
    .filter((a) => a.score > 0)
    .sort((a, b) => b.score - a.score || (a.ref < b.ref ? -1 : 1))
    .slice(0, limit)
}
