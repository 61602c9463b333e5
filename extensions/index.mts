/**
 * Pi's entry to this package (`pi.extensions`). Pi's extension loader
 * transpiles this one file and maps Pi's own packages for it, so the import
 * below is the running Pi's `pi-agent-core`, not a copy of ours: dreaming
 * needs it, and the compiled `.mjs` behind it is loaded by plain Node, where
 * that mapping does not apply. Everything else lives in `dist/extension/`.
 */
import * as agentCore from '@earendil-works/pi-agent-core'
import piFabricMemory from '../dist/extension/index.mjs'

export default function piFabricMemoryExtension(pi: Parameters<typeof piFabricMemory>[0]): void {
  piFabricMemory(pi, { agentCore })
}
