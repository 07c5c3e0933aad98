// The crash tests' entry script: `farebox-gateway` with a crash hook. Run as
// `crash-main.ts <point>`, the process kills itself with SIGKILL at the named
// point (`topup:signed`, `submitted:deploy`, ...; `submitted:fund` stops at
// any funding batch, `submitted:fund:<id>` at one). Production entries never
// pass a crash hook.
import { runGateway } from '../src/run.js';

const at = process.argv[2];
if (!at) throw new Error('usage: crash-main.ts <crash point>');
await runGateway({
  crashPoint(name) {
    if (name === at || name.startsWith(`${at}:`)) process.kill(process.pid, 'SIGKILL');
  },
});
