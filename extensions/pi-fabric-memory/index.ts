/**
 * Pi's entry to this package (`pi.extensions`). Pi's extension loader
 * transpiles this one file and maps Pi's own packages for it, so the imports
 * below are the running Pi's `pi-agent-core` (dreaming's agent) and `pi-tui`
 * (the tools' renderers), not copies of ours: the compiled `.mjs`
 * behind it is loaded by plain Node, where that mapping does not apply.
 *
 * Named `pi-fabric-memory/index.ts` because Pi lists a local (path) install
 * by its entry's path with a trailing `/index.ts` dropped, so its startup
 * list shows `pi-fabric-memory`; `index.ts` (not `.mts`) for that, ESM by
 * the `package.json` beside it.
 */
import * as agentCore from '@earendil-works/pi-agent-core'
import { Text } from '@earendil-works/pi-tui'
import piFabricMemory from '../../dist/extension/index.mjs'

export default function piFabricMemoryExtension(pi: Parameters<typeof piFabricMemory>[0]): void {
  piFabricMemory(pi, { agentCore, tui: { Text } })
}
