/**
 * `format` as regular expressions (compiled by ./regex.ts), each the strict reading that every
 * common validator accepts: uppercase `T`/`Z`, real calendar dates (leap years included), no leap
 * seconds, dotted-quad IPv4 without leading zeros, a conservative subset of e-mail addresses and
 * hostnames. Rejecting an odd but valid spelling is acceptable; accepting an invalid one is not.
 * JSON Schema's own formats that are not here are refused; formats no validator knows (`int32`,
 * `color` outside draft 3...) are annotations and are ignored.
 */
const LEAP_YEAR = '(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)'
const DATE =
  '(?:[0-9]{4}-(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)|02-(?:0[1-9]|1[0-9]|2[0-8]))|' +
  LEAP_YEAR +
  '-02-29)'
const TIME = '(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](?:\\.[0-9]{1,9})?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])'
const OCTET = '(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])'
const IPV4 = `${OCTET}(?:\\.${OCTET}){3}`
const H16 = '[0-9a-fA-F]{1,4}'
const IPV6 = [
  `(?:${H16}:){7}${H16}`,
  ...Array.from({length: 8}, (_, left) => {
    // "::" with `left` groups before it and at most 7 - left after it
    const before = left === 0 ? '' : `(?:${H16}:){${left - 1}}${H16}`
    const maxAfter = 7 - left
    const after = maxAfter === 0 ? '' : `(?:(?:${H16}:){0,${maxAfter - 1}}${H16})?`
    return `${before}::${after}`
  }),
].join('|')
const LABEL = '[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?'
// at most 4 labels of 63: never over the 253-character limit of RFC 1123
const HOSTNAME = `${LABEL}(?:\\.${LABEL}){0,3}`
const ATOM = "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
const EMAIL = `${ATOM}(?:\\.${ATOM})*@${LABEL}(?:\\.${LABEL}){1,3}`
const UNRESERVED = 'A-Za-z0-9\\-._~'
const SUB_DELIMS = "!$&'()*+,;="
const PCT = '%[0-9A-Fa-f]{2}'
const PCHAR = `(?:[${UNRESERVED}${SUB_DELIMS}:@]|${PCT})`
const URI =
  `[A-Za-z][A-Za-z0-9+.\\-]*:` +
  `(?://(?:(?:[${UNRESERVED}${SUB_DELIMS}:]|${PCT})*@)?(?:[${UNRESERVED}${SUB_DELIMS}]|${PCT})*(?::[0-9]*)?(?:/${PCHAR}*)*` +
  `|/(?:${PCHAR}+(?:/${PCHAR}*)*)?|${PCHAR}+(?:/${PCHAR}*)*|)` +
  `(?:\\?(?:${PCHAR}|[/?])*)?(?:#(?:${PCHAR}|[/?])*)?`

const FORMATS: Record<string, string> = {
  'date-time': `${DATE}T${TIME}`,
  date: DATE,
  time: TIME,
  uuid: '[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}',
  ipv4: IPV4,
  ipv6: IPV6,
  hostname: HOSTNAME,
  email: EMAIL,
  uri: URI,
}

/** Formats JSON Schema defines (any draft) that validators assert; the ones not in FORMATS are refused. */
const KNOWN = new Set([
  ...Object.keys(FORMATS),
  'duration',
  'idn-email',
  'idn-hostname',
  'uri-reference',
  'iri',
  'iri-reference',
  'uri-template',
  'json-pointer',
  'relative-json-pointer',
  'regex',
  'host-name',
  'ip-address',
  'color',
  'utc-millisec',
])

/** The anchored regex for `format`, 'refuse' for a standard format not done here, undefined for an annotation. */
export function formatRegex(format: string): string | 'refuse' | undefined {
  const re = FORMATS[format]
  if (re) return `^(?:${re})$`
  return KNOWN.has(format) ? 'refuse' : undefined
}
