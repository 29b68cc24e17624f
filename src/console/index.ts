// The console (docs/console.md): server-rendered pages on a listener of its own.
export { createConsoleApp } from './app.ts';
export type { ConsoleDeps, Mode } from './deps.ts';
