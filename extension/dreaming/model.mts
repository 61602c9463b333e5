/** Which model dreaming runs on, and its credentials, from Pi's model registry. */

import type { DreamingSettings } from './settings.mjs'

/** The part of Pi's `ModelRegistry` dreaming uses (0.80 and 1.x). */
export interface ModelRegistryLike {
  find(provider: string, modelId: string): any
  getApiKeyAndHeaders?(model: any): Promise<{ ok: true; apiKey?: string; headers?: Record<string, string> } | { ok: false; error: string }>
  streamSimple?(model: any, context: any, options?: any): any
}

/** The model dreaming would use, for messages: the configured one, else the session's. */
export function dreamingModelName(settings: DreamingSettings, current?: { provider?: string; id?: string }): string {
  if (settings.model) return `${settings.model.provider}/${settings.model.model} (pi-memory.dreaming.model)`
  return current?.provider && current.id ? `${current.provider}/${current.id} (the session's model)` : "the session's model (none selected)"
}

/** Resolves the model (configured, else the session's current one) and its credentials; a string is the reason it cannot run. */
export async function resolveModel(registry: ModelRegistryLike | undefined, settings: DreamingSettings, current?: any) {
  const name = settings.model ? `${settings.model.provider}/${settings.model.model}` : dreamingModelName(settings, current)
  if (!settings.model && !current) return `no model: the session has none selected and pi-memory.dreaming.model is unset`
  if (!registry || typeof registry.find !== 'function') return `dreaming model ${name}: no model registry in this Pi`
  const model = settings.model ? registry.find(settings.model.provider, settings.model.model) : current
  if (!model) return `dreaming model ${name} not found in Pi's model registry (set pi-memory.dreaming.model)`
  const auth = registry.getApiKeyAndHeaders ? await registry.getApiKeyAndHeaders(model) : { ok: true as const }
  if (!auth.ok) return `dreaming model ${name}: no credentials (${auth.error})`
  return { model, apiKey: auth.apiKey, headers: auth.headers }
}
