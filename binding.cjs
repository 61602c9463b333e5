'use strict'
/**
 * The package's native entry (`pi-fabric-memory/native`, `require('pi-fabric-memory')`):
 * this machine's binary loaded directly when the first place napi-rs's generated loader
 * (`index.js`, kept exactly as `napi build` writes it) would look holds it; else that
 * loader, and, when no binary fits this machine, an error that says which one was looked
 * for and how to get it, instead of the loader's generic "Cannot find native binding".
 */
const { existsSync, readFileSync } = require('fs')
const { join } = require('path')

/** The package's name and napi-rs `binaryName` (package.json), as `index.js` spells them. */
const NAME = 'pi-fabric-memory'
/** The triples this package publishes (package.json `napi.targets`), as napi-rs names them. */
const PUBLISHED = ['darwin-x64', 'darwin-arm64', 'linux-x64-gnu', 'linux-arm64-gnu', 'linux-x64-musl', 'linux-arm64-musl', 'win32-x64-msvc', 'win32-arm64-msvc']

/** napi-rs's name for this machine: the suffix of `<name>-<triple>` and of `<binary>.<triple>.node`. */
function platformTriple() {
  const { platform, arch } = process
  if (platform === 'win32') return `win32-${arch}-msvc`
  if (platform === 'linux') {
    const report = typeof process.report?.getReport === 'function' ? process.report.getReport() : null
    const glibc = report?.header?.glibcVersionRuntime
    return `linux-${arch}-${glibc ? 'gnu' : 'musl'}`
  }
  return `${platform}-${arch}`
}

/**
 * The binary `index.js` would load first, without its probing: compiling that
 * 800-line loader and letting each `require` miss throw took more of a fresh
 * import than loading the binary. The same rules, for a published triple: libc
 * as napi-rs tells it (`/usr/bin/ldd` names musl), the file beside this one (a
 * source build), else the platform package. Anything else goes to `index.js`:
 * its `NAPI_RS_*` overrides and WASI fallback, a darwin-universal binary beside
 * this file (it tries that first; no such package is published), another libc
 * probe, a binary that fails to load (its error is then the loader's).
 */
function directBinding() {
  const env = process.env
  if (env.NAPI_RS_NATIVE_LIBRARY_PATH || env.NAPI_RS_FORCE_WASI || env.NAPI_RS_WASI_FLAVOR || env.NAPI_RS_ENFORCE_VERSION_CHECK) return undefined
  const triple = directTriple()
  if (!triple || !PUBLISHED.includes(triple)) return undefined
  if (process.platform === 'darwin' && existsSync(join(__dirname, `${NAME}.darwin-universal.node`))) return undefined
  const local = join(__dirname, `${NAME}.${triple}.node`)
  if (existsSync(local)) return require(local)
  let file
  try {
    file = require.resolve(`${NAME}-${triple}`)
  } catch {
    return undefined
  }
  return require(file)
}

function directTriple() {
  const { platform, arch } = process
  if (platform === 'darwin') return `darwin-${arch}`
  if (platform === 'win32') {
    const variables = process.config?.variables
    return variables?.shlib_suffix === 'dll.a' || variables?.node_target_type === 'shared_library' ? undefined : `win32-${arch}-msvc`
  }
  if (platform !== 'linux') return undefined
  let ldd
  try {
    ldd = readFileSync('/usr/bin/ldd', 'utf-8')
  } catch {
    return undefined
  }
  return `linux-${arch}-${ldd.includes('musl') ? 'musl' : 'gnu'}`
}

/** `__napiBindingTarget`, as `index.js` stamps it on the binding it loaded natively. */
function stamped(binding) {
  if (!Object.prototype.hasOwnProperty.call(binding, '__napiBindingTarget') && Object.isExtensible(binding)) {
    Object.defineProperty(binding, '__napiBindingTarget', { configurable: true, enumerable: true, value: 'native', writable: true })
  }
  return binding
}

function missingBinding(cause) {
  const { name, version, optionalDependencies } = require('./package.json')
  const triple = platformTriple()
  const prebuilt = Object.keys(optionalDependencies ?? {})
  const expected = `${name}-${triple}`
  // `napi prepublish` lists the platform packages at release: a copy without
  // them is a checkout or was packed from one, and no install fetches a binary.
  const where =
    prebuilt.length === 0
      ? [
          `This copy (${__dirname}) lists no platform packages: it is a checkout or was packed from one, so no install fetches a binary for it.`,
          `In the checkout, npm run build writes the binary; npm run pack:local then writes local/${name}/ with it, to pi install (README: Install in Pi).`,
        ]
      : prebuilt.includes(expected)
        ? [
            `It comes from the optional dependency ${expected}@${version}, which is not installed or failed to load ` +
              '(an install with --omit=optional or --no-optional skips it; reinstalling the package fetches it).',
          ]
        : [`No prebuilt package is published for ${triple} (${expected} does not exist).`]
  const error = new Error(
    [
      `${name}: no native addon for ${triple} (Node ${process.versions.node}).`,
      ...where,
      'To build it from source here instead (needs a Rust toolchain >= 1.88, https://rustup.rs):',
      `  cd "${__dirname}" && npx --yes @napi-rs/cli@3 build --platform --release`,
    ].join('\n'),
  )
  error.code = 'native_binding_missing'
  error.cause = cause
  return error
}

let direct
try {
  direct = directBinding()
} catch {
  direct = undefined // index.js tries the same binary again and reports its failure
}
if (direct) module.exports = stamped(direct)
else {
  try {
    module.exports = require('./index.js')
  } catch (cause) {
    throw missingBinding(cause)
  }
}
