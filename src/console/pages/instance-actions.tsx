import { useState } from 'preact/hooks';
import { explain, post, type BulkResult, type InstanceState } from '../api';
import { count } from '../format';
import { Confirm, Field, FormDialog, useSession, type SessionContext } from '../ui';
import { nameProblem } from './create-instance';

export type Command = 'start' | 'stop' | 'restart';
/** What can be done to many selected instances at once: the commands, and delete. */
export type BulkAction = Command | 'delete';

/** Whether a command makes sense in a state (the daemon decides; this only keeps pointless buttons grey). */
export function commandFits(command: Command, state: InstanceState): boolean {
  if (command === 'start') return state === 'stopped' || state === 'failed' || state === 'backoff';
  if (command === 'stop') return state !== 'stopped' && state !== 'failed';
  return state !== 'stopping';
}

export const COMMAND_LABEL: Record<BulkAction, string> = {
  start: 'Start',
  stop: 'Stop',
  restart: 'Restart',
  delete: 'Delete',
};

/** Failures named in one notice, at most: the rest are counted. */
const NAMED_FAILURES = 5;

/** Runs a command on one instance, or on several in one request (the API's instanceIDs), and says how it went. */
export async function runCommand(command: BulkAction, ids: number[], notify: SessionContext['notify']): Promise<void> {
  try {
    if (ids.length === 1) {
      const reply = await post(`/tunnelAct/instanceMgr/${command}`, { instanceID: ids[0] });
      notify(reply.message);
      return;
    }
    const reply = await post<BulkResult>(`/tunnelAct/instanceMgr/${command}`, { instanceIDs: ids });
    const failures = reply.data.results.filter((r) => !r.ok);
    const named = failures.slice(0, NAMED_FAILURES).map((f) => `${f.name ?? f.instanceID}: ${f.message}`);
    if (failures.length > NAMED_FAILURES) named.push(`and ${failures.length - NAMED_FAILURES} more`);
    notify(
      failures.length === 0 ? reply.message : `${reply.message}. ${named.join('; ')}`,
      failures.length === 0 ? 'ok' : 'error',
    );
  } catch (err) {
    notify(explain(err), 'error');
  }
}

/** Names shown in a confirmation, at most: the rest are counted. */
const NAMED_IN_CONFIRM = 8;

const BULK_EFFECT: Record<BulkAction, string> = {
  start: 'Their tunnels start.',
  stop: 'Their tunnels stop until they are started again.',
  restart: 'Their tunnels stop for a moment, then start again.',
  delete: 'This stops their tunnels and removes their config files, logs and records. It cannot be undone.',
};

/** "Stop 12 instances?", naming the first few, before one request acts on all of them. */
export function BulkConfirm(props: {
  action: BulkAction;
  instances: Array<{ instanceID: number; name: string }>;
  onClose: () => void;
  onDone: () => void;
}) {
  const { notify } = useSession();
  const { action, instances } = props;
  const names = instances.slice(0, NAMED_IN_CONFIRM).map((i) => i.name);
  const rest = instances.length - names.length;
  return (
    <Confirm
      title={`${COMMAND_LABEL[action]} ${count(instances.length, 'instance')}?`}
      confirmLabel={`${COMMAND_LABEL[action]} ${count(instances.length, 'instance')}`}
      onClose={props.onClose}
      onConfirm={async () => {
        await runCommand(
          action,
          instances.map((i) => i.instanceID),
          notify,
        );
        props.onDone();
      }}
    >
      <p>
        {names.join(', ')}
        {rest > 0 ? ` and ${count(rest, 'other')}` : ''}.
      </p>
      <p>{BULK_EFFECT[action]}</p>
    </Confirm>
  );
}

export function RenameInstance(props: {
  instance: { instanceID: number; name: string };
  onClose: () => void;
  onDone: () => void;
}) {
  const { notify } = useSession();
  const [name, setName] = useState(props.instance.name);
  const problem = nameProblem(name);
  return (
    <FormDialog
      title={`Rename ${props.instance.name}`}
      submitLabel="Rename"
      onClose={props.onClose}
      invalid={Boolean(problem) || name === props.instance.name}
      onSubmit={async () => {
        const reply = await post('/tunnelAct/instanceMgr/modify', {
          instanceID: props.instance.instanceID,
          type: 'systemConfig',
          modifiedData: { name },
        });
        notify(reply.message);
        props.onDone();
      }}
    >
      <Field label="New name" error={problem}>
        {({ id, describedBy, invalid }) => (
          <input
            id={id}
            value={name}
            aria-describedby={describedBy}
            aria-invalid={invalid}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        )}
      </Field>
    </FormDialog>
  );
}

export function DeleteInstance(props: {
  instance: { instanceID: number; name: string };
  onClose: () => void;
  onDone: () => void;
}) {
  const { notify } = useSession();
  return (
    <Confirm
      title={`Delete ${props.instance.name}?`}
      confirmLabel="Delete instance"
      onClose={props.onClose}
      onConfirm={async () => {
        const reply = await post('/tunnelAct/instanceMgr/delete', { instanceID: props.instance.instanceID });
        notify(reply.message);
        props.onDone();
      }}
    >
      <p>This stops its tunnel and removes its config file, its logs and its record. It cannot be undone.</p>
    </Confirm>
  );
}
