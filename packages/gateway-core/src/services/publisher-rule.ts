import type { User } from '../auth/accounts.js';
import { GatewayError } from '../errors.js';

/** Publisher operations need publishing activated first (`403` otherwise). */
export function requirePublisher(user: User): void {
  if (!user.isPublisher) throw new GatewayError('FORBIDDEN', 'activate publishing first (POST /v1/publisher/activate)');
}
