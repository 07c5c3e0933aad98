import { z } from 'zod';
import { parseAmount } from '@farebox/protocol';

/** A human USDC amount (5, "5", 0.25) parsed exactly into base units. */
export const WireAmount = z.union([z.number(), z.string()]).transform((v, ctx) => {
  try {
    return parseAmount(v);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: e instanceof Error ? e.message : 'not an amount' });
    return z.NEVER;
  }
});

const Percent = z.union([
  z.number(),
  z
    .string()
    .regex(/^\d+(\.\d+)?$/)
    .transform(Number),
]);

const CreatedAt = z.union([z.string(), z.number(), z.object({ _seconds: z.number() }).loose(), z.object({ seconds: z.number() }).loose()]).transform((v) => {
  if (typeof v === 'string') return v;
  const s: number = typeof v === 'number' ? v : '_seconds' in v ? Number(v._seconds) : Number((v as { seconds: number }).seconds);
  return new Date(s > 1e12 ? s : s * 1000).toISOString();
});

export const RolesSchema = z.object({
  approver: z.string(),
  serviceProvider: z.string(),
  platformAddress: z.string(),
  releaseSigner: z.string(),
  disputeResolver: z.string(),
  receiver: z.string(),
});

const MilestoneSchema = z
  .object({
    description: z.string(),
    status: z.string().optional(),
    evidence: z.string().optional(),
    approved: z.boolean().optional(),
    approvedFlag: z.boolean().optional(),
    flags: z.object({ approved: z.boolean().optional() }).loose().optional(),
  })
  .loose()
  .transform((m) => ({
    description: m.description,
    status: m.status ?? 'pending',
    ...(m.evidence !== undefined ? { evidence: m.evidence } : {}),
    approved: m.approved ?? m.approvedFlag ?? m.flags?.approved ?? false,
  }));

/** An escrow as the provider returns it (amounts in human units; unknown fields ignored). */
export const EscrowSchema = z
  .object({
    contractId: z.string().optional(),
    engagementId: z.string(),
    title: z.string(),
    description: z.string().default(''),
    roles: RolesSchema,
    amount: WireAmount,
    balance: WireAmount.optional(),
    platformFee: Percent,
    milestones: z.array(MilestoneSchema),
    flags: z
      .object({ disputed: z.boolean().default(false), released: z.boolean().default(false), resolved: z.boolean().default(false) })
      .loose()
      .default({ disputed: false, released: false, resolved: false }),
    trustline: z.object({ address: z.string(), symbol: z.string().optional(), decimals: z.number().optional() }).loose(),
    isActive: z.boolean().optional(),
    createdAt: CreatedAt.optional(),
  })
  .loose();

export const WriteResponseSchema = z
  .object({ status: z.enum(['SUCCESS', 'FAILED']), unsignedTransaction: z.string().optional(), message: z.string().optional() })
  .loose();

export const SendResponseSchema = z
  .object({
    status: z.enum(['SUCCESS', 'FAILED']),
    message: z.string().default(''),
    contractId: z.string().optional(),
    escrow: z.unknown().optional(),
    txHash: z.string().optional(),
    hash: z.string().optional(),
  })
  .loose();
