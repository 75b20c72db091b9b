#!/usr/bin/env node
// Production entry point: runs the compiled commands in dist/ (built by `npm ci` through the prepare script).
// llama.cpp's multi-letter short flags (-ngl) become their long names first: oclif has no such flags.
import {execute} from '@oclif/core'

const {llamaSpellings} = await import('../dist/src/lib/cli/llama-spellings.js')
await execute({dir: import.meta.url, args: llamaSpellings(process.argv.slice(2))})
