/**
 * Bounds on what one client can hold: the time to send a request's headers and its whole body
 * (Node answers 408 and closes past either; its check runs every second, not every 30 s), the
 * connections the server keeps at once, and those one client address may hold. A client that
 * trickles headers, stalls a body or opens connections without end gets cut off; the others are
 * served throughout.
 */
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {Socket} from 'node:net'

export interface ConnectionLimits {
  /** Seconds to receive a request's headers. */
  readonly headersTimeoutSeconds: number
  /** Seconds to receive a whole request, headers and body. */
  readonly bodyTimeoutSeconds: number
  /** Connections open at once; more are refused (closed) at once. */
  readonly maxConnections: number
  /** Connections one client address may hold. */
  readonly maxConnectionsPerClient: number
}

export const CONNECTION_DEFAULTS: ConnectionLimits = {
  headersTimeoutSeconds: 10,
  bodyTimeoutSeconds: 30,
  maxConnections: 512,
  maxConnectionsPerClient: 64,
}

/** Fastify's serverFactory: an HTTP server with these limits. */
export function limitedServerFactory(limits: ConnectionLimits) {
  return (handler: (req: IncomingMessage, res: ServerResponse) => void): Server => {
    const requestTimeout = Math.max(limits.bodyTimeoutSeconds, limits.headersTimeoutSeconds) * 1000
    const server = createServer(
      {headersTimeout: limits.headersTimeoutSeconds * 1000, requestTimeout, connectionsCheckingInterval: 1000},
      handler,
    )
    server.maxConnections = limits.maxConnections
    const perClient = new Map<string, number>()
    server.on('connection', (socket: Socket) => {
      const client = socket.remoteAddress ?? ''
      const held = perClient.get(client) ?? 0
      if (held >= limits.maxConnectionsPerClient) {
        socket.destroy()
        return
      }
      perClient.set(client, held + 1)
      socket.once('close', () => {
        const left = (perClient.get(client) ?? 1) - 1
        if (left <= 0) perClient.delete(client)
        else perClient.set(client, left)
      })
    })
    return server
  }
}
