// Printable text: an area of its own, with no imports, so that errors.ts (which every area,
// util included, imports) can use it without a cycle.
export {
  preview,
  type PreviewOptions,
  printable,
  printableError,
  PRINTABLE_MAX,
  printableJson,
  type PrintableOptions,
  quoted,
} from './printable.js'
