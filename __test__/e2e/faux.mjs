// The pi-ai faux model in a real Pi ModelRuntime, registered through the
// config form that works on both Pi lines (reference/pi-e2e.md).
import { rmSync } from 'node:fs'

export async function fauxModel(sdk, ai) {
  const faux = ai.fauxProvider({ provider: 'faux', models: [{ id: 'faux-1' }], tokensPerSecond: 0 })
  const modelRuntime = await sdk.ModelRuntime.create({ credentials: new ai.InMemoryCredentialStore(), modelsPath: null, allowModelNetwork: false })
  modelRuntime.registerProvider('faux', {
    api: faux.api,
    baseUrl: 'http://localhost:0',
    apiKey: 'faux',
    streamSimple: (m, c, o) => faux.provider.streamSimple(m, c, o),
    models: faux.models.map(({ id, name, api, reasoning, input, cost, contextWindow, maxTokens }) => ({ id, name, api, reasoning, input, cost, contextWindow, maxTokens })),
  })
  return { faux, modelRuntime, model: modelRuntime.getModel('faux', 'faux-1') }
}

/** Disposes the sessions, restores the environment saved before the test, removes its temp root. */
export function teardown(sessions, savedEnv, root) {
  for (const session of sessions) {
    try {
      session.dispose?.()
    } catch {}
  }
  for (const [key, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
  rmSync(root, { recursive: true, force: true })
}
