// Preload (NODE_OPTIONS=--import) for the supervisor's tests: in the background process only (the
// ROLE the supervisor gives it), process.exit never returns and never exits, as when the embedded
// ClickHouse library's teardown hangs at exit after the process's ordered stop completed.
if (process.env.ROLE === 'workers,scheduler') {
  process.exit = () => {
    setInterval(() => undefined, 60_000);
  };
}
