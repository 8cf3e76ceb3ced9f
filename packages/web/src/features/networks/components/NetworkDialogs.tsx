import { PatchNetworkRequest } from '@surveyor/contract';
import { useMutation, useQueryClient } from '@tanstack/react-query';
import type { FieldValues, UseFormRegister } from 'react-hook-form';
import type { z } from 'zod';
import { Dialog } from '../../../components/Dialog';
import { ErrorAlert } from '../../../components/ErrorAlert';
import { Field, useContractForm } from '../../../components/form';
import { networkKeys, overviewKeys, scanKeys } from '../../../lib/keys';
import { plural } from '../../../lib/format';
import type { Network, Site } from '../../../lib/types';
import { deleteNetwork, patchNetwork } from '../api';
import { NetworkFields, OverlapWarning, networkFields } from './NetworkFields';

type PatchForm = z.input<typeof PatchNetworkRequest>;

/** Edit a network's settings (everything but its CIDR, which names the range its history is of). */
export function EditNetworkDialog({ network: n, sites, onDone, onCancel }: { network: Network; sites: Map<string, Site>; onDone: (n: Network) => void; onCancel: () => void }) {
  const client = useQueryClient();
  const { form, mutation: save, onSubmit, edited } = useContractForm({
    schema: PatchNetworkRequest,
    mode: 'onChange',
    reset: false,
    defaultValues: {
      name: n.name,
      siteId: n.siteId ?? '',
      scanIntervalMinutes: n.scanIntervalMinutes ?? '',
      excludeCidrs: n.excludeCidrs.join(', '),
      topPortsTcp: n.topPortsTcp,
      topPortsUdp: n.topPortsUdp,
      nmap: n.nmap,
    } as unknown as PatchForm,
    submit: (body) => patchNetwork(n.id, body),
    fields: networkFields.filter((f) => f !== 'cidr'),
    onSuccess: (updated) => {
      void client.invalidateQueries({ queryKey: networkKeys.all });
      onDone(updated);
    },
  });
  const { register, formState: { errors, isValid } } = form;
  return (
    <Dialog title={`Edit network ${n.name}`} confirmLabel={save.isPending ? 'Saving…' : 'Save network'} busy={save.isPending || !isValid} onConfirm={() => void onSubmit()} onCancel={onCancel}>
      <div className="network-form stack">
        <Field label="Name" error={errors.name?.message}>
          {(a) => <input {...a} {...register('name', { onChange: edited })} maxLength={200} />}
        </Field>
        <p className="muted">CIDR <span className="mono">{n.cidr}</span> stays: its scan history is of that range. For another range, add a network and delete this one.</p>
        <NetworkFields register={register as unknown as UseFormRegister<FieldValues>} errors={errors} sites={sites} edit onChange={edited} />
      </div>
      <OverlapWarning cidr={n.cidr} exceptId={n.id} />
      <ErrorAlert error={save.error} />
    </Dialog>
  );
}

/**
 * "Delete network", confirmed, saying what happens: the hosts found in its range stay in the
 * inventory, its scan sessions go. A scan in progress is refused by the API (its detail shown).
 */
export function DeleteNetworkDialog({ network: n, hosts, sessions, onDone, onCancel }: { network: Network; hosts: string; sessions: number; onDone: () => void; onCancel: () => void }) {
  const client = useQueryClient();
  const remove = useMutation({
    mutationFn: () => deleteNetwork(n.id),
    onSuccess: () => {
      void client.invalidateQueries({ queryKey: networkKeys.all });
      void client.invalidateQueries({ queryKey: scanKeys.all });
      void client.invalidateQueries({ queryKey: overviewKeys.all });
      onDone();
    },
  });
  return (
    <Dialog
      title={`Delete network ${n.name}?`}
      danger
      confirmLabel={remove.isPending ? 'Deleting…' : 'Delete network'}
      cancelLabel={remove.error ? 'Close' : 'Keep it'}
      busy={remove.isPending}
      onConfirm={() => remove.mutate()}
      onCancel={onCancel}
    >
      <p>
        <span className="mono">{n.cidr}</span> is no longer scanned{n.scanIntervalMinutes !== null ? ' (its schedule stops)' : ''}. The {hosts} found in it <strong>stay in the inventory</strong>, with their services, certificates and findings.
        Its scan history ({plural(sessions, 'session')}) is deleted with it; the audit log keeps who deleted it.
      </p>
      <ErrorAlert error={remove.error} />
    </Dialog>
  );
}
