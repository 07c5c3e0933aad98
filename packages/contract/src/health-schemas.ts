import { z } from 'zod';

/** The health of a service as the gateway measures its paid calls (docs/api.md, "Service health"). */

export const HealthWindow = z
  .object({
    calls: z.number().int().meta({ description: 'Paid calls that reached the service (not its owner’s own, not those refused before it).' }),
    success_rate: z.number().nullable().meta({ description: 'The share it answered, 0 to 1 (failures, timeouts and refunds are not); null without calls.' }),
    p50_ms: z.number().int().nullable().meta({ description: 'Median time of its answer, ms; null without calls.' }),
    p95_ms: z.number().int().nullable().meta({ description: '95th percentile of its answer time, ms; null without calls.' }),
  })
  .meta({ id: 'HealthWindow' });

export const ServiceHealth = z
  .object({
    status: z.enum(['ok', 'degraded', 'failing', 'new']).meta({
      description:
        '`ok`: answers at least 95 % of its calls; `degraded`: 50 to 95 %; `failing`: under 50 %; `new`: fewer than 10 calls to judge (the last 24 hours, or the last 7 days while the day has too few).',
    }),
    windows: z.object({ '1h': HealthWindow, '24h': HealthWindow, '7d': HealthWindow }),
    last_failure: z.object({ reason: z.string(), at: z.string().meta({ format: 'date-time' }) }).nullable(),
  })
  .meta({ id: 'ServiceHealth', description: 'How the service answered its paid calls over the last hour, 24 hours and 7 days.' });

export const HealthPoint = HealthWindow.extend({ at: z.string().meta({ format: 'date-time', description: 'The start of the slot.' }) }).meta({
  id: 'HealthPoint',
});

export const ServiceHealthSeries = z
  .object({
    service: z.string(),
    window: z.enum(['24h', '7d']),
    health: ServiceHealth,
    points: z.array(HealthPoint).meta({ description: 'Oldest first: one per hour over 24 hours, one per 6 hours over 7 days.' }),
  })
  .meta({ id: 'ServiceHealthSeries' });

export const HealthFeed = z
  .object({
    generated_at: z.string().meta({ format: 'date-time' }),
    services: z.record(z.string(), ServiceHealth).meta({ description: 'Every service with calls in the last 7 days; the others are `new`.' }),
  })
  .meta({ id: 'HealthFeed', description: 'The health of every service, as the discovery backend reads it.' });
