/** The one verification profile so far: replay on the CPU engine reproduces tokens and bytes exactly. */
export const PROFILE = {name: 'cpu-exact', version: 1} as const
