/**
 * A resize writes the whole screen again. The terminal reflows what is on it to the new width
 * (tmux and most emulators do), so Ink's live area no longer has the height Ink erases before the
 * next frame: rows of the old live area stay behind as fragments, and the row being written shows
 * twice. And rows already in <Static> were wrapped for the old width. So, once the size has
 * settled, the chat clears the screen and its scrollback and writes the transcript again at the new
 * width (<Static> under a new key), the reply being written wrapped anew too.
 */
import {useEffect} from 'react'

/** Clear the screen, then the scrollback (which holds the old width's rows), cursor home. */
const CLEAR_ALL = '\u001B[2J\u001B[3J\u001B[H'

/** Resize events come in bursts while a window is dragged: redraw once they stop. */
const SETTLE_MS = 50

export function useResizeRedraw(stdout: NodeJS.WriteStream, redraw: (columns: number) => void): void {
  useEffect(() => {
    let timer: NodeJS.Timeout | undefined
    const onResize = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        stdout.write(CLEAR_ALL)
        redraw(stdout.columns || 80)
      }, SETTLE_MS)
    }
    stdout.on('resize', onResize)
    return () => {
      stdout.off('resize', onResize)
      clearTimeout(timer)
    }
  }, [stdout, redraw])
}
