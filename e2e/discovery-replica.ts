import { startDiscovery, type RunningDiscovery, type StartDiscoveryOptions } from '@farebox/discovery-service';

/**
 * A discovery replica of the devnet at `devnetUrl` as the e2e suites run one: on 127.0.0.1 (any port
 * unless `options` names one), the flat vector index, a poll every 50 ms and no snapshots.
 */
export function startReplica(devnetUrl: string, dataDir: string, options: Partial<StartDiscoveryOptions> = {}): Promise<RunningDiscovery> {
  return startDiscovery({
    port: 0,
    host: '127.0.0.1',
    dataDir,
    network: 'local',
    devnetUrl,
    env: {},
    vectorIndex: 'flat',
    pollIntervalMs: 50,
    snapshotIntervalMs: 0,
    ...options,
  });
}
