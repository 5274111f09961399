/**
 * Contenders run several times in one block carry their round in the label: `name#n`.
 * Presets that interleave rounds build such labels; the harness (per-round seeds) and the
 * rounds report (pooling) read them back with this one parser.
 */
const ROUND_LABEL = /^(.*)#(\d+)$/;

/** Splits `label#n` into its base and round; a label without a round is round 1. */
export function parseRoundLabel(label: string): { base: string; round: number } {
  const m = ROUND_LABEL.exec(label);
  return m ? { base: m[1] as string, round: Number(m[2]) } : { base: label, round: 1 };
}
