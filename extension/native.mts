/**
 * The addon for ES modules. `pi-fabric-memory/native` is CommonJS (napi-rs's
 * generated loader); importing it from ESM makes Node run its CommonJS export
 * lexer over that loader, ~30 ms of a fresh process's ~40 ms import. Requiring
 * it costs only the load. Types come from the addon's own declarations.
 */
import { createRequire } from 'node:module'
import type * as Native from 'pi-fabric-memory/native'

const require = createRequire(import.meta.url)

/**
 * `pi-fabric-memory/native`'s file, binding.cjs, by its path from here, as
 * the same module `require('pi-fabric-memory/native')` gives (the same file),
 * without resolving the package's own name through its exports map (~3 ms of
 * a fresh import). This code runs from dist/extension/ (tsc's output and the
 * bundles) or, in the tests, from extension/; bundled into someone else's
 * file, it falls back to the name. Built-ins by `require`: see scripts/bundle.mjs.
 */
function loader(): string {
  const here = new URL('.', import.meta.url)
  const path = (require('node:url') as typeof import('node:url')).fileURLToPath(new URL(here.pathname.endsWith('/dist/extension/') ? '../../binding.cjs' : '../binding.cjs', here))
  return (require('node:fs') as typeof import('node:fs')).existsSync(path) ? path : 'pi-fabric-memory/native'
}

const native: typeof Native = require(loader())

export type * from 'pi-fabric-memory/native'
/** `import native from 'pi-fabric-memory/native'`, as Node's CommonJS interop gave it: the loader's exports. */
export default native
export const MemoryEngine: typeof Native.MemoryEngine = native.MemoryEngine
export type MemoryEngine = Native.MemoryEngine
export const MemoryStore: typeof Native.MemoryStore = native.MemoryStore
export type MemoryStore = Native.MemoryStore
export const inspectCacheRecord: typeof Native.inspectCacheRecord = native.inspectCacheRecord
export const threatFlags: typeof Native.threatFlags = native.threatFlags
export const version: typeof Native.version = native.version
export const expandPiPath: typeof Native.expandPiPath = native.expandPiPath
export const piAgentDir: typeof Native.piAgentDir = native.piAgentDir
export const sessionHeader: typeof Native.sessionHeader = native.sessionHeader
export const pinCall: typeof Native.pinCall = native.pinCall
export const unpinCall: typeof Native.unpinCall = native.unpinCall
export const projectIdentity: typeof Native.projectIdentity = native.projectIdentity
export const __napiBindingTarget: typeof Native.__napiBindingTarget = native.__napiBindingTarget
