// A test entry script: `farebox-gateway` on a clock ahead of the machine's,
// `clock-main.ts <ms>`. For the gateway that much time has passed (its holds'
// timeouts, sessions, OAuth expiry), so a test restarts it "later" without
// waiting. Production entries never pass a clock.
import { runGateway } from '../src/run.js';

const ahead = Number(process.argv[2]);
if (!Number.isInteger(ahead) || ahead < 0) throw new Error('usage: clock-main.ts <milliseconds ahead>');
await runGateway({ now: () => Date.now() + ahead });
