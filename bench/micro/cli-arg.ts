/** The value after `--name` on a command line, if any (bench/micro scripts). */
export function arg(args: readonly string[], name: string): string | undefined {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : undefined;
}
