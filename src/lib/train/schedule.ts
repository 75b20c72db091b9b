/**
 * The learning rate at each optimizer step, as transformers' schedulers give it: linear warm-up from 0
 * over `warmup` steps, then cosine (get_cosine_schedule_with_warmup) or linear
 * (get_linear_schedule_with_warmup) decay to 0 at `total`, or constant.
 */
export const SCHEDULES = ['cosine', 'linear', 'constant'] as const
export type Schedule = (typeof SCHEDULES)[number]

export function learningRate(step: number, o: {lr: number; warmup: number; total: number; schedule: Schedule}): number {
  if (step < o.warmup) return (o.lr * step) / Math.max(1, o.warmup)
  if (o.schedule === 'constant') return o.lr
  const progress = (step - o.warmup) / Math.max(1, o.total - o.warmup)
  if (o.schedule === 'linear') return o.lr * Math.max(0, 1 - progress)
  return o.lr * Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress)))
}
