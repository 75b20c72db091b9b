/**
 * One spelling of the context size on every command that has one (issue #22: `-c/--ctx-size` on run
 * and chat, `-c/--ctx` on serve, `--ctx` on score): llama.cpp's `-c` / `--ctx-size` everywhere, `--ctx`
 * kept as an alias, so RUNNER_CTX_SIZE (llama.cpp's LLAMA_ARG_CTX_SIZE) is one variable for all.
 */
import assert from 'node:assert/strict'
import {test} from 'node:test'

import Chat from '../../../src/commands/chat.js'
import Embed from '../../../src/commands/embed.js'
import Score from '../../../src/commands/score.js'
import {envVariable} from '../../../src/lib/cli/flag-env.js'
import {runFlags} from '../../../src/lib/run/index.js'
import {serveFlags} from '../../../src/lib/server/serve-cli.js'
import {trainFlags} from '../../../src/lib/train/train-cli.js'

test('run, chat, embed, serve, score and train-lora: -c, --ctx-size, alias --ctx, variable RUNNER_CTX_SIZE', () => {
  const tables: Record<string, Record<string, {char?: string; aliases?: readonly string[]}>> = {
    run: runFlags,
    chat: Chat.flags,
    embed: Embed.flags,
    serve: serveFlags,
    score: Score.flags,
    'train-lora': trainFlags,
  }
  for (const [command, flags] of Object.entries(tables)) {
    const f = flags['ctx-size']
    assert.ok(f, `${command} has --ctx-size`)
    assert.equal(f.char, 'c', `${command}: -c`)
    assert.deepEqual(f.aliases, ['ctx'], `${command}: --ctx as an alias`)
    assert.ok(!('ctx' in flags), `${command}: no separate --ctx flag`)
  }
  assert.equal(envVariable('ctx-size'), 'RUNNER_CTX_SIZE')
})
