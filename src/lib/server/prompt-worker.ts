/**
 * A prompt worker thread: renders chat templates and tokenizes text for `serve`, so a large or
 * hostile request (a 4 MiB prompt, a template that loops to its budget) never holds the event
 * loop that answers /health, other requests and SIGTERM. It builds the same template and tokenizer
 * as the main thread from the same metadata, so its output is the same bytes.
 */
import {parentPort, workerData} from 'node:worker_threads'

import {ChatHistoryError, ChatTemplate} from '../chat/index.js'
import {RunnerError} from '../errors.js'
import {createTokenizer, TokenizerError} from '../tokenizer/index.js'
import {encodeText, type PromptJob, type PromptWorkerData, type WorkerFailure} from './prompt-jobs.js'

const data = workerData as PromptWorkerData
const tokenizer = createTokenizer(data.metadata, {offsets: data.offsets, file: data.file})
const template = ChatTemplate.fromSource(data.template.source, data.template.tokens, data.template.origin, data.template.budget)

function failure(error: unknown): WorkerFailure {
  if (error instanceof ChatHistoryError) return {kind: 'history', code: error.code, message: error.message, param: error.param}
  if (error instanceof TokenizerError)
    return {kind: 'tokenizer', code: error.code, message: error.message, field: error.field, exitCode: error.exitCode}
  if (error instanceof RunnerError) return {kind: 'runner', code: error.code, message: error.message, exitCode: error.exitCode}
  return {kind: 'other', message: error instanceof Error ? error.message : String(error)}
}

parentPort!.postMessage('ready')

parentPort!.on('message', (job: PromptJob) => {
  try {
    if (job.op === 'render') {
      parentPort!.postMessage({id: job.id, text: template.render(job.messages, job.options)})
    } else {
      const ids = Int32Array.from(encodeText(tokenizer, job.text, job.mode))
      parentPort!.postMessage({id: job.id, ids}, [ids.buffer])
    }
  } catch (error) {
    parentPort!.postMessage({id: job.id, failure: failure(error)})
  }
})
