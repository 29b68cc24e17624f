// The console (docs/console.md): server-rendered pages on a listener of its own.
export { type ConsoleApp, createConsoleApp } from './app.ts';
export type { ConsoleDeps, Mode } from './deps.ts';
