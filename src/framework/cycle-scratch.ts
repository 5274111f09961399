/**
 * Typed keys for values plugins share through `CycleState.scratch` within one scheduling
 * cycle (the entries built-in plugins agree on are in src/plugins/shared/cycle-keys.ts).
 *
 * Why typed keys: the scratchpad is a plain Map so any plugin can add entries, but readers
 * and writers must agree on the value type; a key object carries that type at compile time.
 */
import type { CycleState } from './types.js';

export interface ScratchKey<T> {
  readonly id: string;
  /** Phantom field carrying the value type; never set. */
  readonly type?: T;
}

export function scratchKey<T>(id: string): ScratchKey<T> {
  return { id };
}

export function getScratch<T>(state: CycleState, key: ScratchKey<T>): T | undefined {
  return state.scratch.get(key.id) as T | undefined;
}

export function setScratch<T>(state: CycleState, key: ScratchKey<T>, value: T): void {
  state.scratch.set(key.id, value);
}
