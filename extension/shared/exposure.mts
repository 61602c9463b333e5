/**
 * Which memory tools are declared to the model every turn. Declarations are
 * re-sent with every request (and again by Pi ≥ 1.5.1's idle cache warming),
 * so only the tools a turn commonly needs are `direct`: recall and expand
 * (find, then read) and the three single-entry writes. `memory_sessions`,
 * `memory_read` and `memory_apply` are registered with Pi's `codemode`
 * exposure: codemode scripts call them and `tool_search` can load them, but
 * they cost nothing per turn. Recall answers what sessions would list, the
 * write results and the prompt snapshot show the entries, and a batch is a
 * chain of single writes. `memory.tools: "all"` in the settings declares
 * all eight. Pi 0.80 has no exposure and declares every tool.
 */

/** The tools declared by default. */
export const DECLARED_TOOLS: readonly string[] = ['memory_recall', 'memory_expand', 'memory_add', 'memory_replace', 'memory_remove']

/** `memory.tools`: `"essential"` (default) or `"all"`. */
export type ToolsSetting = 'essential' | 'all'

export function toolsSetting(settings: Record<string, unknown>): ToolsSetting {
  return settings.tools === 'all' ? 'all' : 'essential'
}

/** `tool` with the exposure `setting` gives it (`direct` tools keep Pi's default). */
export function exposed<T extends { name: string }>(tool: T, setting: ToolsSetting): T & { exposure?: 'codemode' } {
  return setting === 'all' || DECLARED_TOOLS.includes(tool.name) ? tool : { ...tool, exposure: 'codemode' as const }
}
