/**
 * Preloaded into a process under test (`node --import tsx --import ./test/helpers/fault-injector.ts …`):
 * raises the fault of `TDS_TEST_FAULT` (`exception`: a throw nothing catches; `rejection`: a
 * promise rejection nothing handles) from outside any code of the service, either when the
 * process receives SIGUSR2 (`TDS_TEST_FAULT_WHEN=signal`, the default) or when it first writes to
 * standard output (`output`: a CLI printing its answer). Test-only: the service has no such hook.
 */
const kind = process.env.TDS_TEST_FAULT;
const raise = () => {
  if (kind === 'exception')
    setImmediate(() => {
      throw new Error('injected fault (exception)');
    });
  else if (kind === 'rejection') void Promise.reject(new Error('injected fault (rejection)'));
};
if (kind) {
  if (process.env.TDS_TEST_FAULT_WHEN === 'output') {
    const write = process.stdout.write.bind(process.stdout) as (...args: unknown[]) => boolean;
    let raised = false;
    process.stdout.write = ((...args: unknown[]) => {
      if (!raised) {
        raised = true;
        raise();
      }
      return write(...args);
    }) as typeof process.stdout.write;
  } else process.on('SIGUSR2', raise);
}
