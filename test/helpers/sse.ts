/** Reads a whole SSE answer into its `data:` payloads (JSON parsed; `[DONE]` kept as the string). */
export async function readSse(res: Response): Promise<Array<Record<string, unknown> | '[DONE]'>> {
  const text = await res.text();
  return text
    .split('\n\n')
    .map((block) =>
      block
        .split('\n')
        .filter((l) => l.startsWith('data:'))
        .map((l) => l.slice(5).trimStart())
        .join('\n'),
    )
    .filter((d) => d.length > 0)
    .map((d) => (d === '[DONE]' ? '[DONE]' : (JSON.parse(d) as Record<string, unknown>)));
}

export function contentOf(events: Array<Record<string, unknown> | '[DONE]'>): string {
  let text = '';
  for (const e of events) {
    if (e === '[DONE]') continue;
    for (const c of (e.choices as Array<{ delta?: { content?: string | null } }>) ?? []) text += c.delta?.content ?? '';
  }
  return text;
}
