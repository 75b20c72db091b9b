/** Public face of the compat-matrix area: the roster, the check classes, the matrix run, the report and the baseline gate. */
export {compareToBaseline, loadBaseline, type Regression} from './baseline.js'
export {CHECK_CLASSES, checkClass} from './checks/index.js'
export {compatMatrix, describeRegressions, type MatrixCliOptions, type MatrixCliResult} from './matrix-cli.js'
export {
  buildInfo,
  type CheckRecord,
  hostInfo,
  ledger,
  type Report,
  REPORT_FORMAT,
  REPORT_SCHEMA,
  REPORT_VERSION,
  reportSchemaErrors,
  summarize,
} from './report.js'
export {loadRoster, type Roster, ROSTER_FORMAT, ROSTER_VERSION, rosterSchema} from './roster.js'
export {type MatrixOptions, plan, runMatrix} from './run-matrix.js'
export type {CheckClass, CheckEnv, CheckOutput, CheckParams, Figure, Outcome, ParamSpec, RosterRow} from './types.js'
