export { startService, type Service, type ServiceOptions } from './standalone.ts';
export { startOperator, type Operator, type OperatorOptions } from './kubernetes.ts';
