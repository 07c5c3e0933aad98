// `@x402/stellar`'s `exact` facilitator scheme, taught one thing: a payee
// (Exported by @farebox/provider for whoever settles payments to Farebox's per-service addresses:
// the platform's facilitator in the gateway, or a publisher's own facilitator.)
//
// that is a muxed account (M..., CAP-67). Farebox offers pay the treasury's
// muxed address for the service (`servicePayTo`), so the transfer the payer
// signs names the service. The Stellar Asset Contract credits the account
// behind an M... address and its transfer event names that account (`to`
// topic), with `{ amount, to_muxed_id }` as data; @x402/stellar 2.9 compares
// the `to` topic with `payTo` and the data with the amount, and so refuses
// every muxed payee (`invalid_exact_stellar_payload_event_wrong_to`). This
// replaces that one check for a muxed `payTo` with the same check read the
// CAP-67 way; every other check, and everything for a G.../C... payee, is the
// library's own.
import { Address, scValToNative, xdr } from '@stellar/stellar-sdk';
import { ExactStellarScheme } from '@x402/stellar/exact/facilitator';
import { readMuxedAddress } from '@farebox/stellar';

type Invalid = { isValid: false; invalidReason: string; payer: string } | undefined;
type EventCheck = (events: xdr.DiagnosticEvent[], from: string, to: string, amount: bigint, asset: string) => Invalid;

const invalid = (reason: string, payer: string): Invalid => ({ isValid: false, invalidReason: `invalid_exact_stellar_payload_${reason}`, payer });

/** The library's event check for a muxed payee: exactly one transfer of `asset`, from the payer, to the account behind `to`, of `amount`, with `to`'s id. */
export function checkMuxedTransferEvents(events: xdr.DiagnosticEvent[], from: string, to: string, amount: bigint, asset: string): Invalid {
  const muxed = readMuxedAddress(to);
  if (!muxed) return invalid('event_wrong_to', from);
  const transfers: Array<{ from: string; to: string; data: unknown }> = [];
  for (const diagnostic of events ?? []) {
    // Read with this package's XDR (the library's events come from its own copy of the SDK).
    const event = xdr.DiagnosticEvent.fromXDR(diagnostic.toXDR()).event();
    if (event.type().name !== 'contract') continue;
    const topics = event.body().v0().topics();
    if (topics.length < 3 || topics[0]!.switch().name !== 'scvSymbol' || topics[0]!.sym().toString() !== 'transfer') return invalid('event_not_transfer', from);
    const id = event.contractId();
    if (!id) return invalid('event_missing_contract_id', from);
    if (Address.contract(id as unknown as Buffer).toString() !== asset) return invalid('event_wrong_asset', from);
    transfers.push({
      from: Address.fromScVal(topics[1]!).toString(),
      to: Address.fromScVal(topics[2]!).toString(),
      data: scValToNative(event.body().v0().data()),
    });
  }
  if (transfers.length === 0) return invalid('no_transfer_events', from);
  if (transfers.length > 1) return invalid('multiple_transfers', from);
  const t = transfers[0]!;
  if (t.from !== from) return invalid('event_wrong_from', from);
  const data = (t.data ?? {}) as { amount?: unknown; to_muxed_id?: unknown };
  if (t.to !== muxed.account || typeof data !== 'object' || data.to_muxed_id === undefined || String(data.to_muxed_id) !== muxed.id)
    return invalid('event_wrong_to', from);
  if (data.amount !== amount) return invalid('event_wrong_amount', from);
  return undefined;
}

/** `ExactStellarScheme` (facilitator) that also settles to a muxed `payTo`. */
export class MuxedExactStellarScheme extends ExactStellarScheme {
  constructor(...args: ConstructorParameters<typeof ExactStellarScheme>) {
    super(...args);
    // The library's check is private: replaced on the instance for a muxed payee only.
    const self = this as unknown as { validateSimulationEvents: EventCheck };
    const stock = self.validateSimulationEvents.bind(this);
    self.validateSimulationEvents = (events, from, to, amount, asset) =>
      readMuxedAddress(to) ? checkMuxedTransferEvents(events, from, to, amount, asset) : stock(events, from, to, amount, asset);
  }
}
