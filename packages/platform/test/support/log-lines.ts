/** Collects the JSON lines a pino logger writes (for asserting on logs). */
export function lineCollector(): { write(s: string): void; lines: string[]; records(): Record<string, unknown>[] } {
  const lines: string[] = [];
  return {
    lines,
    write(s: string) {
      for (const l of s.split("\n")) if (l) lines.push(l);
    },
    records: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>),
  };
}
