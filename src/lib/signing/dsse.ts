/**
 * DSSE's pre-authentication encoding (secure-systems-lab/dsse protocol.md v1.0.0): what the
 * signature is over. "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body, lengths in bytes as ASCII
 * decimal. The payload type is in-toto's JSON (model_signing signs nothing else).
 */
export function preAuthEncoding(payloadType: string, payload: Uint8Array): Buffer {
  const type = Buffer.from(payloadType, 'utf8')
  return Buffer.concat([Buffer.from(`DSSEv1 ${type.length} `, 'ascii'), type, Buffer.from(` ${payload.length} `, 'ascii'), payload])
}
