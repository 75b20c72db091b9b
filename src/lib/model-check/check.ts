import {type ModelConfig, type ModelPlan, planModel} from '../arch/index.js'
import {ExitCode, RunnerError} from '../errors.js'
import type {GgufModelFiles} from '../gguf/index.js'
import {createTokenizer, type Tokenizer} from '../tokenizer/index.js'

/** A model that passed every check the loader makes before the engine maps its weights. */
export interface CheckedModel {
  /** The config from metadata and every tensor bound to its role (planModel). */
  readonly plan: ModelPlan
  readonly tokenizer: Tokenizer
}

/**
 * Every check `Model.load` makes that needs neither the engine nor the weights: the architecture
 * and its hyperparameters, every tensor present, expected and of the shape and type the metadata
 * implies (planModel), the tokenizer (createTokenizer), and the two agreeing on the vocabulary.
 * `run`, `serve`, `score`, `embed` and `chat` load through it; `quantize` and `remove-sublayer`
 * call it before writing anything, so that they never write a file `run` refuses; `inspect` shows
 * its verdict. Throws the refusal, a RunnerError naming the key or tensor.
 */
export function checkModel(model: GgufModelFiles): CheckedModel {
  const plan = planModel(model)
  const tokenizer = createTokenizer(model)
  if (tokenizer.vocabSize !== plan.config.nVocab) {
    throw new RunnerError(
      'ARCH_BAD_VOCAB',
      `the tokenizer has ${tokenizer.vocabSize} tokens but the model ${plan.config.nVocab}`,
      ExitCode.invalidModel,
    )
  }
  return {plan, tokenizer}
}

/** Whether the model would load, and if not the refusal (what `inspect` prints as "loads: no — reason"). */
export type LoadVerdict = {readonly loads: true; readonly config?: ModelConfig} | {readonly loads: false; readonly error: RunnerError}

export function loadVerdict(model: GgufModelFiles): LoadVerdict {
  try {
    return {loads: true, config: checkModel(model).plan.config}
  } catch (error) {
    if (error instanceof RunnerError) return {loads: false, error}
    throw error
  }
}

/** The last line of `inspect`: "loads: yes", or "loads: no — <the refusal> [CODE]". */
export function renderVerdict(v: LoadVerdict): string {
  return `loads: ${v.loads ? 'yes' : `no — ${v.error.message} [${v.error.code}]`}`
}

/** The verdict in `inspect --json`: `{"ok": true}` or `{"ok": false, "code", "message"}`. */
export function verdictJson(v: LoadVerdict): {ok: boolean; code?: string; message?: string} {
  return v.loads ? {ok: true} : {ok: false, code: v.error.code, message: v.error.message}
}
