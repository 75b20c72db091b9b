#!/usr/bin/env node
// Production entry point: runs the compiled commands in dist/ (built by `npm ci` through the prepare script).
import {execute} from '@oclif/core'

await execute({dir: import.meta.url})
