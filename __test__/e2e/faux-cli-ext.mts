/**
 * A faux model for the real `pi` binary (`-e` this file): registers provider
 * `faux` (model `faux-1`) whose replies follow the JSON script in
 * `PFM_FAUX_SCRIPT`: `{call, args}` is a tool call, `{say}` a final text;
 * `{say, echo: true}` appends every tool result of the run, so a test can read
 * them from `pi -p`'s stdout; `{call, args, cite: needle}` adds the `cite:`
 * object of the dreaming transcript turn holding `needle` as `evidence`.
 */
import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from '@earendil-works/pi-ai'
import { citeOf } from './faux.mjs'

type Step = { call: string; args: Record<string, unknown>; cite?: string } | { say: string; echo?: boolean }

const textOf = (message: any): string =>
  (Array.isArray(message?.content) ? message.content : []).filter((b: any) => b?.type === 'text').map((b: any) => b.text).join('')

export default function fauxCli(pi: any): void {
  const steps: Step[] = JSON.parse(process.env.PFM_FAUX_SCRIPT ?? '[]')
  const faux = fauxProvider({ provider: 'faux', models: [{ id: 'faux-1' }], tokensPerSecond: 0 })
  faux.setResponses(
    steps.map((step, i) => (ctx: any) => {
      if ('call' in step) {
        const args = step.cite ? { ...step.args, evidence: [citeOf(ctx, step.cite)] } : step.args
        return fauxAssistantMessage(fauxToolCall(step.call, args, { id: `call_${i}` }), { stopReason: 'toolUse' })
      }
      const results = (ctx.messages ?? []).filter((m: any) => m.role === 'toolResult').map((m: any) => `${m.toolName}: ${textOf(m)}`)
      return fauxAssistantMessage(fauxText([step.say, ...(step.echo ? results : [])].join('\n')))
    }),
  )
  pi.registerProvider('faux', {
    api: faux.api,
    baseUrl: 'http://localhost:0',
    apiKey: 'faux',
    streamSimple: (m: any, c: any, o: any) => faux.provider.streamSimple(m, c, o),
    models: faux.models.map(({ id, name, api, reasoning, input, cost, contextWindow, maxTokens }: any) => ({ id, name, api, reasoning, input, cost, contextWindow, maxTokens })),
  })
}
