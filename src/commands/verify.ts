import {Args, Flags} from '@oclif/core'

import {RunnerCommand, signatureFlags, signaturePolicyFromFlags} from '../lib/cli/index.js'
import {ExitCode, RunnerError} from '../lib/errors.js'
import {verifyReceipt} from '../lib/receipt/index.js'
import {printable, printableJson} from '../lib/util/index.js'

export default class Verify extends RunnerCommand {
  static override summary = 'Check a receipt: its chain, signature, link and model, then replay the run token by token.'
  static override description =
    'Answers with one verdict and its exit code. VERIFIED (0): the record is intact and the model, replayed with the ' +
    "record's own settings, produced the same tokens and bytes. DIVERGED (2): the record is intact but the model produced " +
    'something else (the first differing token is printed). UNVERIFIABLE (3): altered record, bad signature, untrusted ' +
    'key, broken link, wrong model, unknown version or invalid settings; all of these are decided before the model is ' +
    'loaded. Checks run in this order: structure and chain hash, signature and trust, link, model sha256, settings, ' +
    'replay. Settings always come from the record, never from flags. A usage error (a missing flag) exits 1, since 2 ' +
    'means DIVERGED here. The format is specified in docs/receipts.md.'

  static override examples = [
    {description: 'Replay a receipt', command: '<%= config.bin %> verify r.json -m ../shared/models/stories260K.gguf'},
    {
      description: 'Require a signature by a trusted key',
      command: '<%= config.bin %> verify r.json -m model.gguf --trust-key alice.pub --require-signed',
    },
    {
      description: 'Check the link to the previous receipt of a chain',
      command: '<%= config.bin %> verify r2.json -m model.gguf --prev r1.json',
    },
    {
      description: 'A run made with a LoRA adapter: give the same adapter file',
      command: '<%= config.bin %> verify r.json -m model.gguf --lora style.gguf',
    },
    {description: 'The verdict as a JSON document', command: '<%= config.bin %> verify r.json -m model.gguf --json'},
  ]

  static override args = {
    receipt: Args.string({description: 'receipt written by `runner run --transcript`', required: true}),
  }

  static override flags = {
    model: Flags.string({
      char: 'm',
      description: 'the model file the receipt names (any shard of a split model)',
      required: true,
      helpValue: 'FILE',
    }),
    'trust-key': Flags.string({
      description: 'trusted public key: a .pub file from keygen or 64 hex digits (repeatable)',
      multiple: true,
      helpValue: 'KEY',
    }),
    'require-signed': Flags.boolean({description: 'UNVERIFIABLE unless signed by a --trust-key'}),
    prev: Flags.string({description: 'the previous receipt this one must link to', helpValue: 'FILE'}),
    lora: Flags.string({
      description: 'each LoRA adapter the receipt names, in its order (the scales come from the receipt; docs/lora.md)',
      multiple: true,
      helpValue: 'FILE',
    }),
    json: Flags.boolean({description: 'print the verdict, reason, checks and any divergence as one JSON document'}),
    ...signatureFlags,
  }

  // 2 means DIVERGED and 3 UNVERIFIABLE for this command, so other failures keep to 1.
  protected override async catch(err: Error & {code?: string; oclif?: {exit?: number}}): Promise<unknown> {
    if (err instanceof RunnerError) return super.catch(new RunnerError(err.code, err.message, ExitCode.failure))
    // A flag or argument error: oclif would exit 2, which would read as DIVERGED.
    if (err.code !== 'EEXIT' && err.oclif?.exit === 2) {
      process.stderr.write(`runner verify: ${printable(err.message, {max: 4000, newlines: true})}\n`)
      return this.exit(ExitCode.failure)
    }
    return super.catch(err)
  }

  async run(): Promise<void> {
    const {args, flags} = await this.parse(Verify)
    const onStage = flags.json || !process.stderr.isTTY ? undefined : (stage: string) => process.stderr.write(`\r\x1b[Kchecking ${stage}…`)
    const report = await verifyReceipt({
      receiptPath: args.receipt,
      modelPath: flags.model,
      trustKeys: flags['trust-key'] ?? [],
      requireSigned: flags['require-signed'],
      prevPath: flags.prev,
      loraPaths: flags.lora ?? [],
      signature: signaturePolicyFromFlags(flags),
      onStage,
    })
    if (onStage) process.stderr.write('\r\x1b[K')
    if (flags.json) {
      this.log(printableJson(report))
    } else {
      // The details quote the receipt, which is anyone's file: printable, as every message is.
      const shown = (text: string) => printable(text, {max: 2000})
      for (const c of report.checks) this.log(`${c.ok ? 'ok  ' : 'FAIL'} ${c.name.padEnd(9)} ${shown(c.detail)}`)
      this.log(`${report.verdict}: ${shown(report.reason)}`)
      if (report.divergence) this.log(`  expected: ${shown(report.divergence.expected)}\n  got:      ${shown(report.divergence.got)}`)
    }
    if (report.exitCode !== 0) this.exit(report.exitCode)
  }
}
