// A local ESLint rule: code outside an area of src/lib reaches it only through its index.ts.
//
// Why: each folder src/lib/<area>/ is one concern with one public face, its index.ts, which says
// what the rest of the program may rely on. Everything else in the folder is the area's own to
// rename, split or merge. An import of another area's inner file (src/commands/run.ts importing
// src/lib/cli/progress.js) ties the two together behind the index's back, and the next refactor of
// that area breaks a caller it could not see. The rule keeps that promise checkable.
//
// What it checks: every static import and re-export (`import`, `import type`, `export ... from`,
// `export * from`), every dynamic `import('...')` with a literal specifier, every type-level
// `import('...').T`, and `import x = require('...')`. A relative specifier that resolves into
// src/lib/<area>/ from outside that area must name <area>/index.js. Files directly in src/lib
// (errors.ts, native-status.generated.ts) belong to no area and are open to all; src/commands/*
// and scripts/* belong to no area either, so they too go through index.ts. Package imports are
// not relative and pass. Tests are exempt in eslint.config.js (they test an area's internals).
//
// Option: {allow: [{from, target, why}]}, where `from` is a path prefix of the importing file and
// `target` the exact inner file (both relative to the repository root, '/'-separated): a named,
// reasoned exception, so that every one is visible in the config.
import {createHash} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {dirname, relative, resolve, sep} from 'node:path'
import {fileURLToPath} from 'node:url'

/** The repository root (this file is scripts/lint/), so paths mean the same from any working directory. */
const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..')

/** The area a path inside src/lib belongs to ({area, inner}), or undefined (outside every area). */
function areaOf(root, file) {
  const parts = relative(root, file).split(sep)
  if (parts[0] !== 'src' || parts[1] !== 'lib' || parts.length < 4) return undefined
  return {area: parts[2], inner: parts.slice(3).join('/')}
}

const INDEX = /^index\.(js|ts|tsx|mjs)$/

/** The string a module-specifier node holds: a literal, or a template literal with no ${}. */
function specifierOf(node) {
  if (!node) return undefined
  if (node.type === 'Literal' && typeof node.value === 'string') return node.value
  if (node.type === 'TemplateLiteral' && node.expressions.length === 0) return node.quasis[0]?.value.cooked ?? undefined
  // typescript-eslint before 8.x put a TSImportType's string under a TSLiteralType.
  if (node.type === 'TSLiteralType') return specifierOf(node.literal)
  return undefined
}

export const areaBoundaries = {
  meta: {
    type: 'problem',
    docs: {description: "import another area of src/lib only through that area's index.ts"},
    schema: [
      {
        type: 'object',
        properties: {
          allow: {
            type: 'array',
            items: {
              type: 'object',
              properties: {from: {type: 'string'}, target: {type: 'string'}, why: {type: 'string'}},
              required: ['from', 'target', 'why'],
              additionalProperties: false,
            },
          },
        },
        additionalProperties: false,
      },
    ],
    messages: {
      internal:
        "'{{spec}}' reaches into src/lib/{{area}}/{{inner}}: import it from src/lib/{{area}}/index.js (the area's public face), exporting it there if it belongs to it",
    },
  },
  create(context) {
    const root = ROOT
    const file = context.filename
    const fromPath = relative(root, file).split(sep).join('/')
    const here = areaOf(root, file)
    const allow = context.options[0]?.allow ?? []

    const check = (specNode) => {
      const spec = specifierOf(specNode)
      if (spec === undefined || !spec.startsWith('.')) return
      const target = resolve(dirname(file), spec)
      const there = areaOf(root, target)
      if (!there || here?.area === there.area || INDEX.test(there.inner)) return
      // Specifiers name the compiled .js; the allow list names the source file.
      const targetPath = relative(root, target).split(sep).join('/').replace(/\.js$/, '.ts')
      if (allow.some((a) => fromPath.startsWith(a.from) && a.target === targetPath)) return
      context.report({node: specNode, messageId: 'internal', data: {spec, area: there.area, inner: there.inner}})
    }

    return {
      ImportDeclaration: (node) => check(node.source),
      ExportNamedDeclaration: (node) => check(node.source),
      ExportAllDeclaration: (node) => check(node.source),
      ImportExpression: (node) => check(node.source),
      TSImportType: (node) => check(node.source ?? node.argument),
      TSExternalModuleReference: (node) => check(node.expression),
    }
  },
}

/**
 * The plugin object eslint.config.js registers as `runner`. Its version is a hash of this file:
 * ESLint's cache (npm run lint uses one) keys on the plugins' versions, so an edit here re-lints.
 */
const version = createHash('sha256')
  .update(readFileSync(fileURLToPath(import.meta.url)))
  .digest('hex')
  .slice(0, 12)
export default {meta: {name: 'runner-local', version}, rules: {'area-boundaries': areaBoundaries}}
