/**
 * Whether the chat screen styles text. runner decides this itself, from NO_COLOR (no-color.org: set
 * and not empty means no colour), instead of leaving it to chalk, which Ink styles through: chalk's
 * supports-color reads FORCE_COLOR and --no-color but not NO_COLOR, so under NO_COLOR=1 the chat
 * still wrote ESC[2m and ESC[36m. Dim, bold and inverse count as colour here (they are the same SGR
 * escapes), so without colour the screen holds none; the input's cursor is then the terminal's own.
 */
import type {TextProps} from 'ink'

export function chatColor(env: NodeJS.ProcessEnv = process.env): boolean {
  return !env.NO_COLOR
}

/** Text props that style: the props themselves with colour, none without. */
export function paint(color: boolean, props: TextProps): TextProps {
  return color ? props : {}
}
