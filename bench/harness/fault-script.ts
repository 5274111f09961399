/**
 * Runs a preset's fault steps against a cacheroute contender while the load runs: each step
 * at its offset (or as soon as the previous one finished, if that took longer), in order,
 * and records when it started and when it was done (a restart is done when the replica
 * listens, a NATS start when the server is ready). Times are ms from `t0`, the moment the
 * load driver starts, so they line up with the request records.
 */
import type { ReplicaSet } from '../contenders/types.js';
import type { FaultStep } from '../presets/types.js';
import { sleep } from '../../test/kit/managed-process.js';

export interface FaultEvent {
  readonly action: FaultStep['action'];
  readonly replica: number | null;
  /** Replica name (null for NATS steps). */
  readonly target: string | null;
  readonly plannedMs: number;
  readonly startedMs: number;
  /** null when the step failed or the run ended first. */
  readonly doneMs: number | null;
  readonly error: string | null;
}

export interface FaultScript {
  /** Resolves with every step's event once all ran (or the script was cancelled). */
  readonly done: Promise<FaultEvent[]>;
  cancel(): void;
}

async function perform(step: FaultStep, set: ReplicaSet): Promise<void> {
  switch (step.action) {
    case 'kill-replica':
      return set.kill(step.replica);
    case 'restart-replica':
      return set.restart(step.replica);
    case 'stop-nats':
      return set.stopNats();
    case 'start-nats':
      return set.startNats();
  }
}

export function runFaultScript(steps: readonly FaultStep[], set: ReplicaSet, t0: number, log: (m: string) => void): FaultScript {
  const abort = new AbortController();
  const rel = (): number => performance.now() - t0;
  const done = (async () => {
    const events: FaultEvent[] = [];
    for (const step of steps) {
      const replica = step.action === 'kill-replica' || step.action === 'restart-replica' ? step.replica : null;
      const target = replica === null ? null : (set.names[replica] ?? null);
      try {
        // Node's timers keep a millisecond clock of their own and can fire a fraction of a
        // millisecond before performance.now() reaches the offset: sleep again until it has.
        do await sleep(Math.max(0, step.atMs - rel()), abort.signal);
        while (rel() < step.atMs);
      } catch {
        break; // cancelled: the run is over
      }
      const startedMs = rel();
      let error: string | null = null;
      try {
        await perform(step, set);
      } catch (err) {
        error = (err as Error).message.split('\n')[0] ?? 'error';
      }
      const doneMs = error === null ? rel() : null;
      log(
        `    fault ${step.action}${target ? ` ${target}` : ''} at ${(startedMs / 1000).toFixed(1)} s${error ? `: ${error}` : `, done at ${((doneMs ?? 0) / 1000).toFixed(1)} s`}`,
      );
      events.push({ action: step.action, replica, target, plannedMs: step.atMs, startedMs, doneMs, error });
    }
    return events;
  })();
  return { done, cancel: () => abort.abort() };
}
