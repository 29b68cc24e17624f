export { startService, type Service, type ServiceOptions } from './standalone.ts';
export { startOperator, type Operator, type OperatorOptions } from './operator.ts';
export { buildOffline, type Offline } from './offline.ts';
