/** One consolidation agent run: pi-agent-core's `Agent` with the memory tools, bounded turns, output tokens and cost. */

import type { Memory } from '../recall/create-memory.mjs'
import { createMemoryTools, type ToolStore } from '../curated/tools.mjs'
import { recallTools } from '../recall/tools.mjs'
import type { ModelRegistryLike } from './model.mjs'
import { CONSOLIDATION_SYSTEM_PROMPT } from './prompt.mjs'
import { DEFAULT_DREAMING, MAX_AGENT_TURNS } from './settings.mjs'

export interface ConsolidationResult {
  ok: boolean
  aborted: boolean
  error?: string
  turns: number
  writes: string[]
  summary: string
  /** Output tokens generated, and the reported cost when the provider gives one. */
  usage?: RunUsage
  /** The bound that stopped the run: nothing it staged is applied. */
  stopped?: string
}

export interface RunUsage {
  outputTokens: number
  cost?: number
}


const WRITE_TOOLS = new Set(['memory_add', 'memory_replace', 'memory_remove', 'memory_apply'])
/**
 * The agent's evidence tools: one memory_pack call per topic brings cited, already verified excerpts from several
 * sessions within a token budget, where recall pages and their follow calls cost several calls and thousands of
 * tokens first (issue 37); memory_expand reads around a citation.
 */
const EVIDENCE_TOOLS = new Set(['memory_pack', 'memory_expand'])

export async function runConsolidation(options: {
  registry: ModelRegistryLike
  model: any
  apiKey?: string
  headers?: Record<string, string>
  store: ToolStore
  /** The sessions the transcripts came from: the agent gets memory_pack / memory_expand over them. */
  memory?: Pick<Memory, 'pack' | 'expand'>
  prompt: string
  signal?: AbortSignal
  maxTurns?: number
  maxOutputTokens?: number
  maxCost?: number
  /** Pi's own `@earendil-works/pi-agent-core` (the extension entry passes the running Pi's copy). */
  agentCore?: unknown
}): Promise<ConsolidationResult> {
  const core = (options.agentCore ?? (await importAgentCore())) as any
  const registry = options.registry as any
  // Stream through Pi's model runtime so custom and extension providers work:
  // 1.x exposes registry.streamSimple; 0.80 keeps its runtime in a private field.
  const runtime = typeof registry.streamSimple === 'function' ? registry : registry.runtime
  const usage: RunUsage = { outputTokens: 0 }
  const maxOutputTokens = options.maxOutputTokens ?? DEFAULT_DREAMING.maxOutputTokens
  // Each request may generate at most what the run has left.
  const capped = (opts: any) => ({ ...opts, maxTokens: Math.max(1, Math.min(opts?.maxTokens ?? Infinity, maxOutputTokens - usage.outputTokens)) })
  const streamFn =
    runtime && typeof runtime.streamSimple === 'function'
      ? (model: any, context: any, opts: any) => runtime.streamSimple(model, context, capped(opts))
      : undefined
  const evidence = options.memory ? recallTools(() => options.memory as Memory, undefined, { lean: false }).filter((tool) => EVIDENCE_TOOLS.has(tool.name)) : []
  const tools = [...createMemoryTools(options.store, { evidence: true }), ...evidence]
  const agent = new core.Agent({
    initialState: { systemPrompt: CONSOLIDATION_SYSTEM_PROMPT, model: options.model, thinkingLevel: 'off', tools },
    ...(streamFn ? { streamFn } : { getApiKey: () => options.apiKey }),
    toolExecution: 'sequential',
  })
  const writes: string[] = []
  let turns = 0
  let stopped: string | undefined
  const maxTurns = options.maxTurns ?? MAX_AGENT_TURNS
  const maxCost = options.maxCost ?? DEFAULT_DREAMING.maxCost
  agent.subscribe((event: any) => {
    if (event.type === 'turn_end') {
      turns += 1
      const spent = event.message?.usage
      usage.outputTokens += Number(spent?.output) || 0
      const cost = Number(spent?.cost?.total)
      if (Number.isFinite(cost) && cost > 0) usage.cost = (usage.cost ?? 0) + cost
      const hit =
        usage.outputTokens >= maxOutputTokens ? `maxOutputTokens (${maxOutputTokens})` : (usage.cost ?? 0) > maxCost ? `maxCost (${maxCost})` : undefined
      if (hit && !stopped) {
        stopped = hit
        agent.abort()
      } else if (turns >= maxTurns && !stopped) {
        stopped = `maxTurns (${maxTurns})`
        agent.abort()
      }
    } else if (event.type === 'tool_execution_end' && WRITE_TOOLS.has(event.toolName) && !event.isError) {
      const details = event.result?.details
      if (details?.success === true) writes.push(`${event.toolName} ${details.scope === 'project' ? 'project' : (details.target ?? '')}`.trim())
    }
  })
  const onAbort = () => agent.abort()
  if (options.signal?.aborted) return { ok: false, aborted: true, turns, writes, summary: '', usage }
  options.signal?.addEventListener('abort', onAbort, { once: true })
  try {
    await agent.prompt(options.prompt)
    await agent.waitForIdle?.()
  } catch (error) {
    return { ok: false, aborted: !!options.signal?.aborted, error: error instanceof Error ? error.message : String(error), turns, writes, summary: '', usage }
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
  }
  const messages = (agent.state?.messages ?? []) as any[]
  const last = [...messages].reverse().find((m) => m.role === 'assistant')
  const summary = Array.isArray(last?.content)
    ? last.content.filter((c: any) => c.type === 'text').map((c: any) => c.text).join('\n').trim()
    : ''
  if (options.signal?.aborted) return { ok: false, aborted: true, turns, writes, summary, usage }
  if (stopped) return { ok: true, aborted: false, turns, writes, summary: summary || `stopped after ${turns} turns`, usage, stopped }
  if (!last || last.stopReason === 'error' || last.stopReason === 'aborted') {
    return { ok: false, aborted: last?.stopReason === 'aborted', error: last?.errorMessage ?? agent.state?.errorMessage ?? 'no response', turns, writes, summary, usage }
  }
  return { ok: true, aborted: false, turns, writes, summary, usage }
}

/**
 * Outside Pi's extension loader (a host or the CLI), pi-agent-core is the
 * host's own dependency; a missing one is named with what to do.
 */
async function importAgentCore(): Promise<unknown> {
  const specifier = '@earendil-works/pi-agent-core'
  try {
    return await import(specifier)
  } catch (error) {
    throw new Error(`dreaming needs ${specifier}: Pi provides it to this extension; a host must install it or pass agentCore (${error instanceof Error ? error.message : String(error)})`)
  }
}
